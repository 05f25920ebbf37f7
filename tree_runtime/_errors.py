"""Error classes of the Tree Mode runtime, and `error_category`.

Every error says what is wrong, why Tree Mode rejects it, how to fix it, and
ends with the path of the nnx-lint rule family page.  Each class carries a
stable ``category`` string; :func:`error_category` maps both these errors and
the equivalent flax / jax exceptions onto the same strings, so a differential
test (or the confirmer) can compare "the same kind of failure" across
implementations without comparing message texts.  :func:`category_from_text`
does the same from the text a test report keeps (class names and message); this
module needs only ``re``, so nnx-lint's gate loads it alone, without jax.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# The rule index (in this repository) and the family to look for there; one place to change.
RULE_DOCS: dict[str, str] = {
    "aliasing": "docs/rules/README.md (NNX1xx: shared references)",
    "prefix-filter": "docs/rules/README.md (NNX2xx: prefix filters)",
    "graph-update": "docs/rules/README.md (NNX3xx: graph updates)",
    "grad-non-float": "docs/rules/README.md (NNX4xx: nnx.grad)",
    "not-subscriptable": "docs/rules/README.md (NNX4xx: nnx.grad)",
    "custom-vjp-update": "docs/rules/README.md (NNX5xx: nnx.custom_vjp)",
    "carry-identity": "docs/rules/README.md (NNX3xx: graph updates)",
    "non-pytree": "docs/rules/README.md (NNX7xx: API semantics)",
    "trace-context": "docs/rules/README.md (NNX3xx: graph updates)",
    "graph-mode": "docs/rules/README.md (NNX9xx: graph-mode opt-ins)",
    "cycle": "docs/rules/README.md (NNX1xx: shared references)",
    "mutable-array-output": "docs/rules/README.md (NNX1xx: shared references)",
}


class TreeModeError(Exception):
    """Base class of every error raised by the Tree Mode runtime.

    >>> str(AliasingError('jit', "args[0].a", "args[0].b", 'Param')).endswith('(NNX1xx: shared references)')
    True
    """

    category: str = "tree-mode"

    def __init__(self, what: str, why: str, fix: str):
        self.what, self.why, self.fix = what, why, fix
        link = RULE_DOCS.get(self.category, "docs/rules/index.md")
        super().__init__(f"{what}\n\nWhy: {why}\n\nFix: {fix}\n\nSee {link}")


class AliasingError(TreeModeError, ValueError):
    """One Variable reachable twice among a transform's inputs and outputs.

    >>> AliasingError('jit', 'args[0].a', 'args[1].a', 'Param').category
    'aliasing'
    """

    category = "aliasing"

    def __init__(self, fn_name: str, first_path: str, second_path: str, type_name: str):
        self.paths = (first_path, second_path)
        super().__init__(
            f"Duplicate {type_name} found at paths {first_path} and {second_path} "
            f"in nnx.{fn_name}.",
            "Tree Mode treats Modules as plain pytrees: a Variable stored twice (tied "
            "weights, a module passed twice, a function returning its input) would be "
            "flattened into two independent copies and its updates could not be "
            "written back consistently.",
            "store the Variable once and reuse it in code (e.g. Embed.attend), pass the "
            "object once, return copies or arrays instead of inputs, or use nnx.clone() "
            "for an explicit independent copy.",
        )


class CycleError(TreeModeError, ValueError):
    """A graph node reachable from itself (``self.sub = self``, a child keeping its parent).

    flax's Tree Mode flattens such a tree without end (``RecursionError``) or reports
    ``Cycle detected``; this runtime detects the cycle before flattening.

    >>> CycleError('jit', 'args[0].sub').category
    'cycle'
    """

    category = "cycle"

    def __init__(self, fn_name: str, path: str):
        self.path = path
        super().__init__(
            f"Cycle detected in nnx.{fn_name}: {path} is the object that holds it.",
            "Tree Mode treats Modules as plain pytrees, and a pytree cannot contain "
            "itself: flattening it never ends.",
            "do not store the owner below itself: pass it to the method that needs it, "
            "or keep a weakref.ref to it.",
        )


class PrefixFilterError(TreeModeError, ValueError):
    """A prefix filter (StateAxes, DiffState, StateSharding) passed to a transform.

    >>> PrefixFilterError('vmap', 'in_axes', 'StateAxes').category
    'prefix-filter'
    """

    category = "prefix-filter"

    def __init__(self, fn_name: str, argument: str, type_name: str):
        super().__init__(
            f"`{argument}` of nnx.{fn_name} cannot contain `{type_name}` objects in Tree Mode.",
            "prefix filters select Variables through the graph; Tree Mode transforms take "
            "plain JAX prefixes only.",
            "split the module by the filter (graphdef, a, b = nnx.split(model, filter, ...)), "
            "pass the parts with plain axes and nnx.merge them inside; or differentiate "
            "only the split-off Params.",
        )


class CustomVjpUpdateError(TreeModeError, ValueError):
    """A differentiable Variable written inside an nnx.custom_vjp function.

    >>> CustomVjpUpdateError("args[0].x").category
    'custom-vjp-update'
    """

    category = "custom-vjp-update"

    def __init__(self, path: str):
        super().__init__(
            f"Variable at {path} is differentiable and was updated inside nnx.custom_vjp.",
            "the FLIP disallows it: the backward rule receives only the output "
            "cotangent, so the cotangent of the updated value would be lost silently.",
            "update the Variable outside the custom_vjp function, or make it "
            "non-differentiable (an integer counter, or pass it via nondiff_argnums).",
        )


class NonPytreeModuleError(TreeModeError, ValueError):
    """A Module declared with ``pytree=False`` handed to a Tree Mode API.

    >>> NonPytreeModuleError('Foo').category
    'non-pytree'
    """

    category = "non-pytree"

    def __init__(self, type_name: str):
        super().__init__(
            f"'{type_name}' was declared with pytree=False and cannot be used in Tree Mode.",
            "Tree Mode APIs flatten their arguments with jax.tree; a class that is not "
            "a registered pytree has no children to flatten.",
            "drop pytree=False (the default registers the class as a pytree).",
        )


class CarryIdentityError(TreeModeError, ValueError):
    """A loop body returned different Variables than it received.

    >>> CarryIdentityError('fori_loop').category
    'carry-identity'
    """

    category = "carry-identity"

    def __init__(self, fn_name: str):
        super().__init__(
            f"{fn_name} Variable identity must be preserved across iterations.",
            "the loop carry is written back Variable by Variable into the inputs; a body "
            "that builds new Variables (or a new Module) breaks that correspondence.",
            "update Variables in place (v[...] = ...) and return the same objects.",
        )


class TraceContextError(TreeModeError, ValueError):
    """A Variable or Module of an outer trace mutated inside a transform.

    >>> TraceContextError('Param').category
    'trace-context'
    """

    category = "trace-context"

    def __init__(self, type_name: str):
        super().__init__(
            f"Cannot mutate {type_name} from a different trace level.",
            "the object was captured by closure instead of passed as an argument, so the "
            "transform cannot snapshot it and write the update back.",
            "pass the Module or Variable as an argument of the transformed function.",
        )


class GraphModeNotSupportedError(TreeModeError, NotImplementedError):
    """``graph=True`` passed to the Tree Mode runtime.

    >>> GraphModeNotSupportedError('jit').category
    'graph-mode'
    """

    category = "graph-mode"

    def __init__(self, fn_name: str):
        super().__init__(
            f"nnx.{fn_name}(..., graph=True) was requested.",
            "tree_runtime implements Tree Mode only.",
            "remove graph=True / graph_updates=True (or run the program with flax).",
        )


# A class defined in user code, as JAX prints it (``<class 'pkg.mod.Name'>``):
# builtins print without a module (``<class 'str'>``) and numpy/jax/standard
# library types are excluded, so passing e.g. a string or a functools.partial
# where JAX needs an array stays ``other:TypeError``.
_USER_CLASS = (r"<class '(?!(?:numpy|jax|jaxlib|functools|collections|types|typing|enum|"
               r"dataclasses|datetime|decimal|fractions|pathlib)\.)[\w.<>]+\.\w+'>")

# (exception type name, message regex) -> category; checked in order.  These
# are the flax 0.12.8 / jax 0.10 messages for the same failures (catalogue).
_FOREIGN_PATTERNS: list[tuple[str, str, str]] = [
    ("ValueError", r"does not support Variable aliasing|does not support shared references", "aliasing"),
    # JAX's own check on the flattened inputs: one raw mutable array ref (jax.new_ref) twice.
    ("ValueError", r"only one reference to a mutable array may be passed", "aliasing"),
    # JAX's own check on a traced function's outputs: a raw mutable array ref among them
    # (Tree Mode hands a transform's output to JAX; graph mode turns refs back itself).
    ("ValueError", r"returned a mutable array reference", "mutable-array-output"),
    # A tree holding itself: flax's Tree Mode either notices the cycle or flattens it
    # without end (every NNX transform, jax.tree functions).
    ("ValueError", r"Cycle detected|Cycles are not supported", "cycle"),
    ("RecursionError", r"", "cycle"),
    ("ValueError", r"cannot contain `(StateAxes|DiffState|StateSharding)` objects", "prefix-filter"),
    ("ValueError", r"Variable identity must be preserved", "carry-identity"),
    ("ValueError", r"pytree=False", "non-pytree"),
    # JAX's own messages for an object that is not a pytree where it needs an
    # array (nnx.jit / nnx.grad / nnx.vmap / nnx.remat ... on a pytree=False
    # Module): only when the offending type is a user class (see _USER_CLASS).
    ("TypeError", r"Error interpreting argument .* as an abstract array.*The problematic value is of type "
     + _USER_CLASS, "non-pytree"),
    ("TypeError", r"^Argument '.*' of type '?" + _USER_CLASS + r"'? is not a valid JAX type", "non-pytree"),
    ("TypeError", r"^Output from batched function .* with type " + _USER_CLASS + r" is not a valid JAX type",
     "non-pytree"),
    ("TypeError", r"^Cannot interpret value of type " + _USER_CLASS + r" as an abstract array", "non-pytree"),
    ("TypeError", r"traced for \w+ returned a value of type " + _USER_CLASS + r".*which is not a valid JAX type",
     "non-pytree"),
    ("TypeError", r"grad requires real- or complex-valued inputs", "grad-non-float"),
    ("TypeError", r"object is not subscriptable", "not-subscriptable"),
    ("TypeError", r"does not support the context manager protocol", "not-context-manager"),
    ("TypeError", r"Custom VJP bwd rule must produce an output with the same container", "vjp-structure"),
    ("TypeError", r"iteration over a 0-d array", "vjp-structure"),
    ("ValueError", r"Autoregressive cache not initialized", "cache-not-initialized"),
    ("ValueError", r"[Cc]ustom structure|pytree structure|tree structure", "tree-structure"),
    ("TypeError", r"[Cc]ustom node type mismatch|tree structure|pytree structure", "tree-structure"),
    ("TraceContextError", r"", "trace-context"),
    ("NotImplementedError", r"In-place operations are no longer supported", "variable-inplace"),
]


def error_category(exc: BaseException) -> str:
    """Return the stable category of ``exc``, whichever implementation raised it.

    Runtime errors carry their own ``category``; flax and jax exceptions are
    classified by type name and message; anything else maps to
    ``"other:<TypeName>"`` (e.g. ``"other:AttributeError"``).

    >>> error_category(ValueError("Duplicate Param ... nnx.jit with graph_updates=False "
    ...                           "does not support Variable aliasing"))
    'aliasing'
    >>> error_category(TypeError("Argument 'Foo()' of type <class 'app.models.Foo'> is not a valid JAX type."))
    'non-pytree'
    >>> error_category(TypeError("Argument 'abc' of type <class 'str'> is not a valid JAX type."))
    'other:TypeError'
    >>> error_category(KeyError('x'))
    'other:KeyError'
    """
    category = getattr(type(exc), "category", None)
    if isinstance(category, str):
        return category
    return category_from_text([cls.__name__ for cls in type(exc).__mro__], str(exc))


def category_from_text(type_names: Sequence[str], message: str) -> str:
    """The stable category of a flax or jax error known only as text: the names of its
    class and of its bases (its own first) and its message, as a test report carries them.

    A report that names the class alone loses what its bases would add (a flax error
    subclassing ``ValueError``, say). This needs nothing but ``re``: the gate loads this
    module alone (``nnx_lint.gate.results``), without jax.

    >>> category_from_text(["ValueError"], "Cycle detected for Parent")
    'cycle'
    >>> category_from_text(["TraceContextError", "Exception"], "Cannot mutate Param")
    'trace-context'
    >>> category_from_text(["KeyError", "LookupError"], "'x'")
    'other:KeyError'
    """
    names = set(type_names)
    for type_name, pattern, category in _FOREIGN_PATTERNS:
        if type_name in names and re.search(pattern, message, re.DOTALL):
            return category
    return f"other:{type_names[0] if type_names else 'Exception'}"
