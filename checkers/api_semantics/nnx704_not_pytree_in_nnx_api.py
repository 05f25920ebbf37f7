"""NNX704 ``not-pytree-in-nnx-api``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    DecodedTransform,
    Facts,
    Invalid,
    Reproduction,
    Rule,
    Valid,
    constant_bool,
    entry_pin_target,
    explicit_tree,
    fact_index,
    flax_table,
    helper_summaries,
    pin_sites_in,
    programs,
    raises,
    transform_resolver,
    value_model,
)


#: Graph APIs that look at the object and its direct children only (measured with flax 0.12.8:
#: `nnx.iter_children(outer)` runs in Tree Mode when a child holds a `pytree=False` part;
#: only a `pytree=False` object itself raises).

#: NNX704's message when the walk happens inside a project helper the object is passed to.
_HELPER_MESSAGE = ("`{argument}` ({class_name}, {reason}) passed to `{helper}`, which calls `{api}` on it: "
                   "Tree Mode raises (not a pytree)")


def _literal_keywords(call) -> dict:
    """The transform's keywords that are Python literals (``argnums=1``, ``in_axes=(None, 0)``),
    as the reproduction passes them on (the rule's decisions read the resolver's decoding)."""
    import ast

    found = {}
    for name, value in (call.keywords.items() if call is not None else ()):
        try:
            found[name] = ast.literal_eval(value.as_string())
        except (ValueError, SyntaxError, TypeError):
            continue
    return {k: list(v) if isinstance(v, tuple) else v for k, v in found.items()
            if isinstance(v, (int, str, tuple, type(None)))}


def _passed_through(decoded: DecodedTransform | None, transform: str, position: int) -> bool:
    """Whether JAX passes argument ``position`` through the transform untouched (not traced):
    a ``None`` axis of vmap/pmap, a jit static argument, a grad argument outside ``argnums``.
    Such an argument may be a non-pytree in Tree Mode too. ``decoded``: the resolver's decoding
    of the transform call (None for a bare decorator, which takes the defaults)."""
    if transform in flax_table.MAPPING_TRANSFORMS:
        axes = decoded.in_axes if decoded is not None else 0
        if axes is None:
            return True
        return isinstance(axes, (list, tuple)) and position < len(axes) and axes[position] is None
    if transform == "jit":
        return decoded is not None and position in (decoded.static_argnums or ())
    if transform in flax_table.GRAD_TRANSFORMS:
        # A computed argnums (or a DiffState): only the first argument is taken as differentiated,
        # so an unknown argnums stays silent on the others.
        argnums = decoded.argnums if decoded is not None and decoded.argnums is not None else (0,)
        return position not in argnums
    return False


@dataclass(frozen=True, kw_only=True)
class NotPytreeObjectInNNXAPIFacts(Facts):
    """What ``NNX704`` reports (the diagnostic's ``facts``, in this order)."""

    argument: str
    class_name: str
    reason: str
    api: str
    error: str
    function: str = ABSENT
    transform: str = ABSENT
    position: int = ABSENT
    n_args: int = ABSENT
    transform_keywords: dict = ABSENT
    #: For a part of the argument: where the argument's class stores the non-pytree object.
    part: str = ABSENT
    #: A project helper the argument is passed to, which walks it (``.iter_modules()``).
    helper: str = ABSENT
    pin: list


class NotPytreeObjectInNNXAPI(Rule):
    """An object that is not a pytree (`pytree=False`, `nnx.Object`, `nnx.bridge.Module`)
    passed to an NNX transform or graph API.

    What it does:
        Flags an instance of a class declared with `pytree=False`, of an `nnx.Object`
        subclass or of an `nnx.bridge.Module` subclass (class known from a construction, an
        annotation or `self`) passed to an NNX graph API (`nnx.split`, `nnx.state`,
        `nnx.clone`, `nnx.Optimizer`, the `model.iter_modules()` method, ...) or to a
        transformed function, unless graph mode is kept (`graph=True`, `nnx.compat.*`); also
        an instance of a class whose `__init__` stores such an object (two levels deep):
        Tree Mode flattens the whole tree and raises at that part. `nnx.iter_children` /
        `nnx.iter_module_children` look one level only: just the object itself counts there.
        An object passed to a project helper (this file's or another file's, also through
        the helpers it calls) that walks it with `model.iter_modules()` is reported at the
        argument, with the walk as a related location.

    Why is this bad?:
        Tree Mode handles objects as JAX pytrees, and these classes are not registered as
        pytrees. `nnx.split` raises `ValueError: Cannot use 'flatten' with graph=False on a
        'X' instance that has pytree=False`; `nnx.jit` raises `TypeError: Error interpreting
        argument ... as an abstract array`; `nnx.grad` raises `TypeError: ... is not a valid
        JAX type`. Drop `pytree=False` (subclass `nnx.Module`), or keep graph mode for these
        calls (`nnx.compat.jit`, `graph=True`).

    References:
        - Patterns in the catalogue: [H3](../catalogue.md#h3), [H4](../catalogue.md#h4)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX704"
    facts_type = NotPytreeObjectInNNXAPIFacts
    fixes = ("pin",)
    symbol = "not-pytree-in-nnx-api"
    kind = "raises"
    catalogue = ("H3", "H4")
    message = "`{argument}` ({class_name}, {reason}) passed to `{api}`: Tree Mode raises (not a pytree)"
    help = (
        "Tree Mode treats objects as pytrees and this class is not one ({error}). Make it a pytree "
        "(plain `nnx.Module` subclass) or keep graph mode for this call (`graph=True` / `nnx.compat`)"
    )
    VALID = [
        Valid(
            "pytree-module-and-compat",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Modern(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                def __call__(self, x):
                    return x * self.w

            class Legacy(nnx.Module, pytree=False):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                def __call__(self, x):
                    return x * self.w

            def run():
                a = nnx.jit(lambda m, x: m(x))(Modern(), jnp.ones(2))
                b = nnx.compat.jit(lambda m, x: m(x))(Legacy(), jnp.ones(2))
                legacy = Legacy()
                return a, b, type(nnx.split(legacy, graph=True)[1]).__name__, legacy(jnp.ones(2))
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "legacy-into-split-jit-grad",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Legacy(nnx.Module, pytree=False):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                def __call__(self, x):
                    return x * self.w

            def run():
                m = Legacy()
                nnx.split(m)  # NNX704
                nnx.jit(lambda m, x: m(x))(m, jnp.ones(2))  # NNX704
                nnx.grad(lambda m: m(jnp.ones(2)).sum())(m)  # NNX704
            """,
            tree_mode=raises("ValueError", "Cannot use 'flatten' with graph=False"),
        ),
        Invalid(
            "bridge-module-into-split",
            """
            import jax.numpy as jnp
            from flax.nnx import bridge
            from flax import nnx

            class Dense(bridge.Module):
                features: int

                @bridge.compact
                def __call__(self, x):
                    w = self.param('w', nnx.initializers.lecun_normal(), (x.shape[-1], self.features))
                    return x @ w

            def run(x):
                m = Dense(3)
                bridge.lazy_init(m, x)
                return nnx.split(m)  # NNX704
            """,
            tree_mode=raises("ValueError", "has pytree=False"),
        ),
    ]

    _GRAPH_API_CLASSES = flax_table.OPTIMIZER_QUALIFIED


    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        arguments: list[nodes.NodeNG] = []
        api = None
        if call is not None and call.is_graph_api and not call.via_partial:
            if self.context.keeps_graph_mode(call) or explicit_tree(call):
                return
            arguments, api = list(call.args[:1]), f"nnx.{call.name}"
        elif call is not None and call.qualified_name in self._GRAPH_API_CLASSES:
            if "graph" in call.keywords and constant_bool(call.keywords["graph"]) is not False:
                return
            arguments, api = list(call.args[:1]), f"nnx.{call.name}"
        elif call is None and isinstance(node.func, nodes.Attribute) and node.func.attrname in flax_table.WALKING_METHODS \
                and not node.args and not self.context.mode.scope_keeps_graph_mode(node, transform=False):
            # `model.iter_modules()`, the deprecated method form of `nnx.iter_modules(model)`
            arguments, api = [node.func.expr], f".{node.func.attrname}()"
            call_name = node.func.attrname
        elif call is None:
            entry = fact_index(self.context).running_entry(node)
            if entry is None:
                self._walked_in_helpers(node)
                return
            if not entry.affected:
                return
            arguments, api = list(node.args), f"a function transformed by nnx.{entry.transform}"
        method = api is not None and api.startswith(".")
        decoded = (transform_resolver(self.context).decode(entry.call)
                   if call is None and not method and entry.call is not None else None)
        for position, argument in enumerate(arguments):
            if call is None and not method and _passed_through(decoded, entry.transform, position):
                continue  # JAX never flattens it: flax runs this in Tree Mode
            ref = self.context.classes.class_of_self(argument) if isinstance(argument, nodes.Name) else None
            if ref is None or ref.definition is None:
                continue
            one_level = call is not None and call.name in flax_table.ONE_LEVEL_APIS
            found = value_model(self.context).not_pytree(ref, levels=0 if one_level else 2)
            if found is None:
                continue
            class_name, reason, part = found
            error = ("ValueError: Cannot use 'flatten' with graph=False" if call is not None or method
                     else "TypeError: not a valid JAX type / cannot interpret as an abstract array")
            pin = pin_sites_in(self.context, call if call is not None and call.is_graph_api else None,
                               entry_pin_target(entry) if call is None and not method else None)
            where = ({"function": call.name} if call is not None else {"function": call_name} if method else
                     {"transform": entry.transform, "position": position, "n_args": len(arguments),
                      "transform_keywords": _literal_keywords(entry.call)})
            part = ABSENT if part is None else part
            shown = class_name if part is ABSENT else f"{class_name} at `.{part}`"
            self.report(argument, argument=argument.as_string(), class_name=shown, reason=reason,
                        api=api, error=error, **where, part=part, pin=pin)

    def _walked_in_helpers(self, node: nodes.Call) -> None:
        """A project helper (this file's or another's) called with the object walks it with a
        graph-walking method (``model.iter_modules()``): reported at the argument, the walk related."""
        for argument, walk in helper_summaries(self.context).walks_through(node):
            ref = self.context.classes.class_of_self(argument) if isinstance(argument, nodes.Name) else None
            found = value_model(self.context).not_pytree(ref) if ref is not None else None
            if found is None or self.context.mode.scope_keeps_graph_mode(node, transform=False):
                continue
            class_name, reason, part = found
            method = walk.call.func.attrname
            part = ABSENT if part is None else part
            shown = class_name if part is ABSENT else f"{class_name} at `.{part}`"
            self.report(argument, argument=argument.as_string(), class_name=shown, reason=reason,
                        api=f".{method}()", error="ValueError: Cannot use 'iter_graph' with graph=False",
                        function=method, part=part, helper=walk.chain[0], pin=[],
                        message=_HELPER_MESSAGE, related=[(walk.call, f"`{'` -> `'.join(walk.chain)}` walks it here")])

    #: Graph APIs both Tree Mode implementations provide, called as ``nnx.<name>(m)``.
    _SHARED_GRAPH_APIS = {"split": "nnx.split(m)", "state": "nnx.state(m)", "variables": "nnx.variables(m)",
                          "graphdef": "nnx.graphdef(m)", "clone": "nnx.clone(m)",
                          "iter_graph": "list(nnx.iter_graph(m))", "iter_modules": "list(nnx.iter_modules(m))",
                          "view": "nnx.view(m)"}
    #: Transforms reproduced as ``nnx.<t>(f, **keywords)(*args)`` (the keywords that decide
    #: which arguments JAX traces are kept from the finding).
    _SHARED_TRANSFORMS = {"jit": ("static_argnums", "static_argnames"), "grad": ("argnums",),
                          "value_and_grad": ("argnums",), "vmap": ("in_axes",), "remat": (),
                          "eval_shape": ()}

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The flagged class stands in as a ``pytree=False`` Module (``Legacy``) and is passed
        where the finding passes it: to the flagged graph API (``function``; an API the two
        Tree Mode implementations do not share is reproduced with ``nnx.split``, noted in the
        program), or as positional argument ``position`` of ``n_args`` to a function
        transformed by the flagged ``transform`` with the finding's literal ``argnums`` /
        ``in_axes`` / ``static_argnums`` (so an argument JAX passes through untouched, e.g.
        under ``in_axes=None``, runs cleanly and is not confirmed — as in flax). An
        ``nnx.Object`` or ``nnx.bridge.Module`` subclass is reproduced the same way: both are
        Pytrees created with ``pytree=False`` (bridge.Module's ``__init_subclass__`` forces
        it), the mechanism Tree Mode rejects; tree_runtime has neither class. Expected:
        ``non-pytree``; graph mode runs it. Control: the same class without ``pytree=False``.
        """
        # Notes name only what is known: the class if it is a plain name, the API or
        # transform if it is one of flax's (the facts are the analysed code's text).
        note, stand_ins = "", []
        if facts.reason and "pytree=False" not in str(facts.reason):
            subclass = next(("a subclass of " + base for base in ("nnx.bridge.Module", "nnx.Object")
                             if base in str(facts.reason)), "a Pytree subclass")
            note = ("# found: %s (%s); such classes are Pytrees with pytree=False, reproduced here directly\n"
                    % (programs.identifier_or(facts.class_name, "a class"), subclass))
        transform = facts.transform
        if transform is None:
            function = facts.function
            use = cls._SHARED_GRAPH_APIS.get(function)
            if use is None:
                found = "nnx." + function if function in flax_table.GRAPH_APIS else "another graph API"
                note += "# found: %s; nnx.split flattens its argument the same way\n" % found
                stand_ins.append("`nnx.split` stands for " + found)
                use = "nnx.split(m)"
            call = programs.lines("m = Model()", use, "return 'ok'")
        else:
            if transform not in cls._SHARED_TRANSFORMS:
                found = "nnx." + transform if transform in flax_table.TRANSFORMS else "another transform"
                note += "# found: %s; nnx.jit traces its arguments the same way\n" % found
                stand_ins.append("`nnx.jit` stands for " + found)
                transform = "jit"
            keywords = {k: v for k, v in (facts.transform_keywords or {}).items()
                        if k in cls._SHARED_TRANSFORMS[transform]}
            if transform == "vmap" and keywords.get("in_axes", 0) is None:
                keywords["axis_size"] = 2
            position = programs.bounded_index(facts.position or 0, "the argument position")
            n_args = max(programs.bounded_index(facts.n_args or 1, "the argument count"), position + 1)
            args = ["m" if i == position else "x" for i in range(n_args)]
            options = {k: programs.literal(tuple(v) if isinstance(v, list) else v) for k, v in keywords.items()}
            if transform == "eval_shape":
                apply = programs.call("nnx.eval_shape", "f", *args)
            else:
                apply = programs.call(programs.call(programs.attribute("nnx", transform), "f", **options), *args)
            call = programs.lines("m, x = Model(), jnp.ones((2, 2))",
                                  programs.filled("f = lambda *a: jnp.sum(a[POSITION](jnp.ones(2)))",
                                                  expressions={"POSITION": programs.literal(position)}),
                                  apply, "return 'ok'")
        name = "Part" if facts.part else "Model"
        # the non-pytree object is a part of the argument, or the argument itself
        holder = _HOLDER if facts.part else ""
        model = programs.lines(programs.filled(_NOT_PYTREE, {"NAME": name}), holder)
        control = programs.lines(programs.filled(_PYTREE, {"NAME": name}), holder)
        return Reproduction(note + model + call, expect_error="non-pytree", control=control + call,
                            stand_ins=tuple(stand_ins))


#: The reproduction's class NAME: a ``pytree=False`` Module, and (the control) the same Module as a pytree.
_NOT_PYTREE = """
class NAME(nnx.Module, pytree=False):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
    def __call__(self, x):
        return x * self.w[...]
"""
_PYTREE = """
class NAME(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
    def __call__(self, x):
        return x * self.w[...]
"""
#: A Module holding the flagged class's object as a part.
_HOLDER = """
class Model(nnx.Module):
    def __init__(self):
        self.part = Part()
    def __call__(self, x):
        return self.part(x)
"""
