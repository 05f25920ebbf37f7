"""NNX7xx: other API semantics that change in Tree Mode — catalogue G2, H1-H8.

In-place RNG splitting, keyword arguments into transformed functions, objects that are
not pytrees, Python scalars in data containers, graph-only APIs, and when the mode is
fixed (decoration time, per thread).
"""
from __future__ import annotations

import textwrap

from astroid import nodes

from nnx_lint import nnx_api
from nnx_lint.calls import constant_bool
from nnx_lint.fixes.sites import entry_pin_target, pin_sites_in
from nnx_lint.flow import lookup
from nnx_lint.nnx_api import GRAPH_APIS, TRANSFORMS
from nnx_lint.program_text import bounded_index, identifier_or, literal
from nnx_lint.rule import Invalid, Reproduction, Rule, Valid, differs, raises
from nnx_lint.transformed import bound_values_of, explicit_tree, transformed_code

_RNG_SPLITTERS = frozenset({"split_rngs", "fork_rngs"})
_SETTERS = nnx_api.MODE_SETTERS
_CONFIG_KEYS = {"nnx_graph_mode": "graph", "nnx_graph_updates": "graph_updates"}


def _code(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


#: A vmapped factory that needs a split ``Rngs`` (r70).
_CREATE = _code("""
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 2, rngs=rngs)


    rngs = nnx.Rngs(0)
""")
_FORK_NOTE = ("# found: nnx.fork_rngs; nnx.split_rngs has the same in-place (graph) / returned (Tree Mode)\n"
              "# semantics, and both implementations provide it\n")


def _literal_keywords(call) -> dict:
    """The transform's keywords that are Python literals (``argnums=1``, ``in_axes=(None, 0)``)."""
    import ast

    found = {}
    for name, value in (call.keywords.items() if call is not None else ()):
        try:
            found[name] = ast.literal_eval(value.as_string())
        except (ValueError, SyntaxError, TypeError):
            continue
    return {k: list(v) if isinstance(v, tuple) else v for k, v in found.items()
            if isinstance(v, (int, str, tuple, type(None)))}


def _passed_through(transform: str, keywords: dict, position: int) -> bool:
    """Whether JAX passes argument ``position`` through the transform untouched (not traced):
    a ``None`` axis of vmap/pmap, a jit static argument, a grad argument outside ``argnums``.
    Such an argument may be a non-pytree in Tree Mode too."""
    if transform in ("vmap", "pmap"):
        axes = keywords.get("in_axes", 0)
        if axes is None:
            return True
        return isinstance(axes, list) and position < len(axes) and axes[position] is None
    if transform == "jit":
        static = keywords.get("static_argnums")
        static = [static] if isinstance(static, int) else (static or [])
        return position in static
    if transform in ("grad", "value_and_grad"):
        argnums = keywords.get("argnums", 0)
        argnums = [argnums] if isinstance(argnums, int) else argnums
        return isinstance(argnums, list) and position not in argnums
    return False


def _rng_splitter(context, node: nodes.NodeNG):
    call = context.nnx_call(node)
    if call is None or call.name not in _RNG_SPLITTERS or call.via_partial or explicit_tree(call):
        return None
    return call


class SplitRngsContextManager(Rule):
    """`nnx.split_rngs` / `nnx.fork_rngs` used as a context manager, or `nnx.restore_rngs`.

    What it does:
        Flags `with nnx.split_rngs(rngs, ...):` / `with nnx.fork_rngs(rngs, ...):` and
        `nnx.restore_rngs(backups)` on the result of such a call, unless graph mode is kept
        (`nnx.compat.split_rngs`, `graph=True, graph_updates=True`). The decorator form
        `@nnx.split_rngs(splits=n)` is fine.

    Why is this bad?:
        In graph mode these calls split the `Rngs` in place and return backups to restore.
        In Tree Mode they return a *new* split `Rngs` and leave the argument alone: `with`
        raises `TypeError: 'Rngs' object does not support the context manager protocol`,
        and `restore_rngs` raises `AttributeError`. Use the returned value:
        `create(nnx.split_rngs(rngs, splits=4))`, `rngs.split(4)` or `nnx.with_rngs`.

    References:
        - Catalogue row H1 (`r70_split_rngs_context.py`, rewrite `r70_split_rngs_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX701"
    fixes = ("pin",)
    symbol = "split-rngs-context-manager"
    kind = "raises"
    catalogue = ("H1",)
    message = "{usage}: Tree Mode raises ({error})"
    help = (
        "Tree Mode `nnx.{api}` returns a new split `Rngs` instead of splitting in place. Use the "
        "returned value, e.g. `f(nnx.{api}(rngs, splits=n))` or `rngs.split(n)`"
    )
    VALID = [
        Valid(
            "functional-forms",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return nnx.Linear(2, 2, rngs=rngs)

            def run():
                a = create(nnx.split_rngs(nnx.Rngs(0), splits=4))
                b = create(nnx.with_rngs(nnx.Rngs(0), split=4))
                c = nnx.split_rngs(splits=4)(create)(nnx.Rngs(0))
                d = create(nnx.Rngs(0).split(4))
                rngs = nnx.Rngs(0)
                with nnx.compat.split_rngs(rngs, splits=4):
                    e = create(rngs)
                return a, b, c, d, e
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "with-split-rngs",
            """
            from flax import nnx

            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return nnx.Linear(2, 2, rngs=rngs)

            def run():
                rngs = nnx.Rngs(0)
                with nnx.split_rngs(rngs, splits=4):  # NNX701
                    model = create(rngs)
                backups = nnx.fork_rngs(rngs)
                nnx.restore_rngs(backups)  # NNX701
                return model
            """,
            tree_mode=raises("TypeError", "does not support the context manager protocol"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """``with nnx.split_rngs(rngs, splits=4):`` around a vmapped init (Tree Mode: the
        result is an ``Rngs``, not a context manager). For ``restore_rngs``, the code between
        the split and the restore relies on the in-place split: the vmapped init gets the
        unsplit ``rngs`` (Tree Mode: a rank error). The control passes the returned value on."""
        note = _FORK_NOTE if facts.get("api") == "fork_rngs" else ""
        if facts.get("form") == "restore_rngs":
            main = _CREATE + note + _code("""
                backups = nnx.split_rngs(rngs, splits=4)  # graph mode: splits `rngs` in place
                model = create(rngs)  # ... then `nnx.restore_rngs(backups)`
                return list(model.kernel.shape)
            """)
            error = "other:ValueError"
        else:
            main = _CREATE + note + _code("""
                with nnx.split_rngs(rngs, splits=4):
                    model = create(rngs)
                return list(model.kernel.shape)
            """)
            error = "not-context-manager"
        control = _CREATE + "return list(create(nnx.split_rngs(rngs, splits=4)).kernel.shape)\n"
        return Reproduction(main, expect_error=error, control=control)

    def visit_with(self, node: nodes.With) -> None:
        for expression, _ in node.items:
            call = _rng_splitter(self.context, expression)
            if call is not None and not self.context.keeps_graph_mode(call):
                self.report(expression, usage=f"`with nnx.{call.name}(...)`", api=call.name,
                            error="TypeError: 'Rngs' object does not support the context manager protocol",
                            form="with", pin=pin_sites_in(self.context, call))

    def visit_call(self, node: nodes.Call) -> None:
        if self.context.qualified_name(node.func) != "flax.nnx.restore_rngs" or not node.args:
            return
        argument = node.args[0]
        if not isinstance(argument, nodes.Name):
            return
        try:
            _scope, assignments = lookup(argument)
        except Exception:
            return
        values = [v for a in assignments if isinstance(a, nodes.AssignName) for v in bound_values_of(a)]
        splitters = [_rng_splitter(self.context, v) for v in values]
        if values and all(s is not None and not self.context.keeps_graph_mode(s) for s in splitters):
            self.report(node, usage="`nnx.restore_rngs(...)` on the result of "
                        f"`nnx.{splitters[0].name}`", api=splitters[0].name,
                        error="AttributeError: it is an Rngs, not backups", form="restore_rngs",
                        pin=pin_sites_in(self.context, *splitters))


class SplitRngsResultDiscarded(Rule):
    """`nnx.split_rngs(rngs, ...)` / `nnx.fork_rngs(rngs, ...)` with the result discarded.

    What it does:
        Flags a call `nnx.split_rngs(rngs, ...)` or `nnx.fork_rngs(rngs, ...)` used as a
        statement (its result unused), unless graph mode is kept.

    Why is this bad?:
        Graph mode splits `rngs` in place; Tree Mode returns a new split `Rngs` and leaves
        `rngs` unsplit (only its counter advances). Nothing raises: the code that follows
        silently uses unsplit keys (identical layers in a `vmap`ped init, a wrong key
        shape). Use the returned value.

    References:
        - Catalogue row H1 (`r70_split_rngs_context.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX702"
    fixes = ("pin", "keep-split-rngs-result")
    symbol = "split-rngs-result-discarded"
    kind = "silent"
    catalogue = ("H1",)
    message = "The result of `nnx.{api}(...)` is discarded: Tree Mode silently leaves `{rngs}` unsplit"
    help = (
        "In Tree Mode `nnx.{api}` returns a new split `Rngs`. Use the returned value (`{rngs} = "
        "nnx.{api}({rngs}, ...)` or pass it on)"
    )
    VALID = [
        Valid(
            "result-used",
            """
            from flax import nnx

            def run(rngs):
                split = nnx.split_rngs(rngs, splits=4)
                nnx.compat.split_rngs(rngs, splits=4)
                nnx.split_rngs(rngs, splits=4, graph=True, graph_updates=True)
                return split
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "discarded",
            """
            from flax import nnx

            def run(rngs, create):
                nnx.split_rngs(rngs, splits=4)  # NNX702
                return create(rngs)
            """,
            tree_mode=differs("rngs.params.key keeps shape () instead of (4,)"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The split with its result discarded; the observation is the shape of the
        ``params`` key of the same ``rngs`` afterwards. The control keeps the result."""
        note = _FORK_NOTE if facts.get("api") == "fork_rngs" else ""
        main = "rngs = nnx.Rngs(0)\n" + note + "nnx.split_rngs(rngs, splits=4)  # result discarded\n" + \
            "return list(rngs.params.key.shape)\n"
        control = "rngs = nnx.Rngs(0)\nrngs = nnx.split_rngs(rngs, splits=4)\nreturn list(rngs.params.key.shape)\n"
        return Reproduction(main, expect_tree=[], expect_graph=[4], control=control)

    def visit_expr(self, node: nodes.Expr) -> None:
        call = _rng_splitter(self.context, node.value)
        if call is None or not call.args or self.context.keeps_graph_mode(call):
            return
        self.report(node.value, api=call.name, rngs=call.args[0].as_string(), pin=pin_sites_in(self.context, call))


_KWARG_TRANSFORMS = frozenset({"vmap", "pmap", "scan", "grad", "value_and_grad"})


class KeywordArgumentsToTransformedFunction(Rule):
    """Keyword arguments passed to a function transformed by `vmap` / `pmap` / `scan` / `grad`.

    What it does:
        Flags calls of a function transformed by `nnx.vmap` / `nnx.pmap` (with tuple or
        non-zero `in_axes`), `nnx.scan`, or `nnx.grad` / `nnx.value_and_grad` (when a
        differentiated position is passed by keyword) that pass keyword arguments. `nnx.jit`
        is fine, and so are graph-mode opt-ins.

    Why is this bad?:
        Graph mode binds keyword arguments to positions first, so `in_axes` / `argnums`
        apply to them. Tree Mode follows JAX: `vmap` raises `ValueError: vmap in_axes must
        be ... a tuple of entries corresponding to the positional arguments`, or silently
        maps a keyword argument over axis 0 even where `in_axes` said `None`; `scan` raises
        `TypeError: unexpected keyword argument`; `grad` raises `TypeError: differentiating
        with respect to argnums=0 requires at least 1 positional arguments`. Pass the
        arguments positionally.

    References:
        - Catalogue row H2 (`r78_kwargs_semantics.py`, rewrite `r78_kwargs_semantics_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX703"
    fixes = ("pin",)
    symbol = "kwargs-to-transformed-function"
    kind = "raises"
    catalogue = ("H2",)
    message = "{keywords} passed by keyword to a function transformed by `nnx.{transform}`: {effect}"
    help = "{detail}. Pass them positionally"
    VALID = [
        Valid(
            "positional",
            """
            import jax.numpy as jnp
            from flax import nnx

            def run(model, xs):
                y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(model, xs)
                b = nnx.vmap(lambda x: x.sum(), in_axes=None, axis_size=3)(xs)
                g = nnx.grad(lambda m, x: jnp.sum(m(x)))(model, xs)
                g2 = nnx.grad(lambda m, x: jnp.sum(m(x)))(model, x=xs)
                c = nnx.scan(lambda c, xs: (c + xs.sum(), None), in_axes=(nnx.Carry, 0),
                             out_axes=(nnx.Carry, 0))(jnp.zeros(()), xs)[0]
                j = nnx.jit(lambda m, x: m(x))(model, x=xs)
                k = nnx.vmap(lambda m, x: m(x))(model, x=xs)
                return y, b, g, g2, c, j, k
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "vmap-grad-scan-kwargs",
            """
            import jax.numpy as jnp
            from flax import nnx

            @nnx.vmap(in_axes=(None, 0))
            def forward(m, x):
                return m(x)

            def run(model, xs):
                y = forward(model, x=xs)  # NNX703
                b = nnx.vmap(lambda x: x.sum(), in_axes=None, axis_size=3)(x=xs)  # NNX703
                loss = lambda m, x: jnp.sum(m(x))
                g = nnx.grad(loss)(m=model, x=xs)  # NNX703
                scanned = nnx.scan(lambda c, xs: (c + xs.sum(), None), in_axes=(nnx.Carry, 0),
                                   out_axes=(nnx.Carry, 0))
                c = scanned(jnp.zeros(()), xs=xs)  # NNX703
                return y, b, g, c
            """,
            tree_mode=raises("ValueError", "vmap in_axes must be an int, None, or a tuple"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """The flagged transform called with the flagged number of positional arguments and
        the rest by keyword (``variant``): ``vmap`` with tuple ``in_axes`` and ``scan`` raise,
        ``grad`` cannot reach a keyword-passed differentiated argument, and ``vmap`` with
        ``in_axes=None`` / a non-zero axis silently maps the keyword over axis 0 (the
        observation is the output shape). The control passes everything positionally."""
        variant = facts.get("variant") or ("scan" if facts.get("transform") == "scan" else "vmap-tuple")
        note = "# found: nnx.pmap; vmap applies the same argument rules on one CPU device\n" \
            if facts.get("transform") == "pmap" else ""
        if variant == "scan":
            setup = "xs = jnp.ones((3, 3))\nscanned = nnx.scan(lambda c, xs: (c + xs.sum(), None), " \
                    "in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))\n"
            main = setup + "return list(scanned(jnp.zeros(()), xs=xs)[0].shape)\n"
            control = setup + "return list(scanned(jnp.zeros(()), xs)[0].shape)\n"
            return Reproduction(note + main, expect_error="other:TypeError", control=control)
        if variant in ("vmap-broadcast", "vmap-axis"):
            axis = facts.get("in_axes") if isinstance(facts.get("in_axes"), int) else None
            options = "in_axes=None, axis_size=3" if axis is None else f"in_axes={axis}"
            setup = f"xs = jnp.ones((3, 4))\nf = nnx.vmap(lambda x: x, {options})\n"
            tree = [3, 4]
            graph = [3, 3, 4] if axis is None else [4, 3]
            return Reproduction(note + setup + "return list(f(x=xs).shape)\n", expect_tree=tree, expect_graph=graph,
                                control=setup + "return list(f(xs).shape)\n")
        if variant == "grad":
            argnums = [a for a in facts.get("argnums") or [0] if isinstance(a, int) and 0 <= a < 6] or [0]
            given = bounded_index(facts.get("positional") or 0, "the positional count", 6)
            count = max(max(argnums) + 1, 2, given + 1)
            positional = min(given, count - 1)
            names = ["m"] + [f"x{i}" for i in range(1, count)]
            loss = f"def loss({', '.join(names)}):\n    return jnp.sum(m(x1))" + "".join(
                f" + jnp.sum({n})" for n in names[2:]) + "\n"
            values = ["model"] + ["jnp.ones((1, 2))"] * (count - 1)
            call_args = values[:positional] + [f"{n}={v}" for n, v in zip(names[positional:], values[positional:])]
            argnums_text = "" if argnums == [0] else f", argnums={tuple(argnums) if len(argnums) > 1 else argnums[0]}"
            transform = "value_and_grad" if facts.get("transform") == "value_and_grad" else "grad"
            setup = "model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n" + loss + \
                f"g = nnx.{transform}(loss{argnums_text})\n"
            main = setup + f"g({', '.join(call_args)})\nreturn 'differentiated'\n"
            control = setup + f"g({', '.join(values)})\nreturn 'differentiated'\n"
            return Reproduction(main, expect_error="other:TypeError", control=control)
        length = facts.get("in_axes_length") if isinstance(facts.get("in_axes_length"), int) else 2
        length = min(max(length, 2), 6)
        positional = min(bounded_index(facts.get("positional") or 0, "the positional count"), length - 1)
        names = ["m"] + [f"x{i}" for i in range(1, length)]
        values = ["model"] + ["jnp.ones((3, 2))"] * (length - 1)
        body = "m(x1)" + "".join(f" + {n}.sum()" for n in names[2:])
        setup = ("model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n"
                 f"f = nnx.vmap(lambda {', '.join(names)}: {body}, in_axes=(None,{' 0,' * (length - 1)}))\n")
        call_args = values[:positional] + [f"{n}={v}" for n, v in zip(names[positional:], values[positional:])]
        return Reproduction(note + setup + f"return list(f({', '.join(call_args)}).shape)\n",
                            expect_error="other:ValueError",
                            control=setup + f"return list(f({', '.join(values)}).shape)\n")

    def visit_call(self, node: nodes.Call) -> None:
        keywords = [k for k in node.keywords or []]
        if not keywords or any(k.arg is None for k in keywords) or any(isinstance(a, nodes.Starred) for a in node.args):
            return
        if self.context.nnx_call(node) is not None:
            return  # creating a transform, not calling a transformed function
        entry = transformed_code(self.context).transformed_callable(node.func)
        if entry is None or not entry.affected or entry.transform not in _KWARG_TRANSFORMS:
            return
        positional = len(node.args)
        if isinstance(entry.function, nodes.FunctionDef) and isinstance(entry.function.parent, nodes.ClassDef):
            positional += 1  # the bound `self`
        options = entry.call.keywords if entry.call is not None else {}
        found = self._effect(entry.transform, options, positional)
        if found is None:
            return
        effect, detail = found
        line = node.lineno
        anchor = node
        self.report(anchor, keywords=", ".join(f"`{k.arg}`" for k in keywords), transform=entry.transform,
                    effect=effect, detail=detail, keyword_names=[k.arg for k in keywords], positional=positional,
                    entry_line=entry.function.lineno, call_line=line, **self._variant(entry.transform, options),
                    pin=pin_sites_in(self.context, entry_pin_target(entry)))

    @staticmethod
    def _variant(transform: str, options: dict) -> dict:
        """What the reproduction needs: ``variant`` and the ``in_axes`` / ``argnums`` values."""
        if transform == "scan":
            return {"variant": "scan"}
        if transform in ("vmap", "pmap"):
            axes = options.get("in_axes")
            if isinstance(axes, (nodes.Tuple, nodes.List)):
                return {"variant": "vmap-tuple", "in_axes_length": len(axes.elts)}
            return {"variant": "vmap-broadcast" if axes.value is None else "vmap-axis", "in_axes": axes.value}
        argnums = options.get("argnums")
        if argnums is None:
            positions = [0]
        elif isinstance(argnums, nodes.Const):
            positions = [argnums.value]
        else:
            positions = sorted(e.value for e in argnums.elts)
        return {"variant": "grad", "argnums": positions}

    @staticmethod
    def _effect(transform: str, options: dict, positional: int) -> tuple[str, str] | None:
        """``(what Tree Mode does, why)`` for keyword arguments to this transformed function."""
        if transform == "scan":
            return "Tree Mode raises TypeError", "Tree Mode `scan` rejects keyword arguments (unexpected keyword argument)"
        if transform in ("vmap", "pmap"):
            axes = options.get("in_axes")
            if axes is None:
                return None  # default in_axes=0: keyword arguments are mapped over axis 0 either way
            if isinstance(axes, (nodes.Tuple, nodes.List)):
                return ("Tree Mode raises ValueError",
                        f"Tree Mode `{transform}` needs in_axes to match the positional arguments")
            if isinstance(axes, nodes.Const) and (axes.value is None or (isinstance(axes.value, int) and axes.value != 0)):
                return ("Tree Mode silently maps them over axis 0",
                        f"Tree Mode `{transform}` maps keyword arguments over axis 0: in_axes={axes.value!r} no "
                        "longer applies to them")
            return None
        argnums = options.get("argnums")
        if argnums is None:
            positions = {0}
        elif isinstance(argnums, nodes.Const) and isinstance(argnums.value, int):
            positions = {argnums.value}
        elif isinstance(argnums, nodes.Tuple) and all(
                isinstance(e, nodes.Const) and isinstance(e.value, int) for e in argnums.elts):
            positions = {e.value for e in argnums.elts}
        else:
            return None
        if positions and max(positions) >= positional:
            return ("Tree Mode raises TypeError",
                    f"Tree Mode `{transform}` differentiates positional arguments only (argnums={sorted(positions)} "
                    f"needs {max(positions) + 1} positional arguments, got {positional})")
        return None


def _is_bridge_module(context, base: nodes.NodeNG) -> bool:
    if isinstance(base, nodes.Attribute) and base.attrname == "Module":
        return (context.qualified_name(base.expr) or "").startswith("flax.nnx.bridge")
    if isinstance(base, nodes.Name):
        try:
            _scope, assignments = lookup(base)
        except Exception:
            return False
        for assignment in assignments:
            if isinstance(assignment, nodes.ImportFrom) and (assignment.modname or "").startswith("flax.nnx.bridge"):
                return any((alias or original) == base.name and original == "Module"
                           for original, alias in assignment.names)
    return False


def not_pytree_reason(context, classdef: nodes.ClassDef, depth: int = 0, inherited: bool = False) -> str | None:
    """Why instances of a project class are not pytrees (``pytree=False``, ``nnx.Object``
    or ``nnx.bridge.Module`` subclass), or None."""
    if depth > 6:
        return None
    if not inherited:
        for keyword in classdef.keywords or []:
            if keyword.arg == "pytree" and constant_bool(keyword.value) is False:
                return "declared with pytree=False"
    for base in classdef.bases:
        if _is_bridge_module(context, base):
            return "an nnx.bridge.Module subclass"
        name = context.qualified_name(base)
        if name == "flax.nnx.Object":
            return "an nnx.Object subclass"
    for ref in context.classes.info(classdef).bases:
        if ref.definition is not None and ref.definition.root() is classdef.root():
            reason = not_pytree_reason(context, ref.definition, depth + 1, inherited=True)
            if reason is not None:
                return reason
    return None


class NotPytreeObjectInNNXAPI(Rule):
    """An object that is not a pytree (`pytree=False`, `nnx.Object`, `nnx.bridge.Module`)
    passed to an NNX transform or graph API.

    What it does:
        Flags an instance of a class declared with `pytree=False`, of an `nnx.Object`
        subclass or of an `nnx.bridge.Module` subclass (class known from a construction, an
        annotation or `self`) passed to an NNX graph API (`nnx.split`, `nnx.state`,
        `nnx.clone`, `nnx.Optimizer`, ...) or to a transformed function, unless graph mode is
        kept (`graph=True`, `nnx.compat.*`).

    Why is this bad?:
        Tree Mode handles objects as JAX pytrees, and these classes are not registered as
        pytrees. `nnx.split` raises `ValueError: Cannot use 'flatten' with graph=False on a
        'X' instance that has pytree=False`; `nnx.jit` raises `TypeError: Error interpreting
        argument ... as an abstract array`; `nnx.grad` raises `TypeError: ... is not a valid
        JAX type`. Drop `pytree=False` (subclass `nnx.Module`), or keep graph mode for these
        calls (`nnx.compat.jit`, `graph=True`).

    References:
        - Catalogue rows H3, H4 (`r76_pytree_false_module.py`, `r79_linen_bridge_module.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX704"
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

    _GRAPH_API_CLASSES = frozenset({"flax.nnx.Optimizer", "flax.nnx.ModelAndOptimizer"})

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
        elif call is None:
            entry = transformed_code(self.context).transformed_callable(node.func)
            if entry is None or not entry.affected:
                return
            arguments, api = list(node.args), f"a function transformed by nnx.{entry.transform}"
        literal = _literal_keywords(entry.call) if call is None else {}
        for position, argument in enumerate(arguments):
            if call is None and _passed_through(entry.transform, literal, position):
                continue  # JAX never flattens it: flax runs this in Tree Mode
            ref = self.context.classes.class_of_self(argument) if isinstance(argument, nodes.Name) else None
            if ref is None or ref.definition is None:
                continue
            reason = not_pytree_reason(self.context, ref.definition)
            if reason is None:
                continue
            error = ("ValueError: Cannot use 'flatten' with graph=False" if call is not None
                     else "TypeError: not a valid JAX type / cannot interpret as an abstract array")
            pin = pin_sites_in(self.context, call if call is not None and call.is_graph_api else None,
                               entry_pin_target(entry) if call is None else None)
            where = ({"function": call.name} if call is not None else
                     {"transform": entry.transform, "position": position, "n_args": len(arguments),
                      "transform_keywords": _literal_keywords(entry.call)})
            self.report(argument, argument=argument.as_string(), class_name=ref.short_name, reason=reason,
                        api=api, error=error, **where, pin=pin)

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
    def reproduce(cls, facts: dict) -> Reproduction:
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
        note = ""
        if facts.get("reason") and "pytree=False" not in str(facts.get("reason")):
            subclass = next((f"a subclass of {base}" for base in ("nnx.bridge.Module", "nnx.Object")
                             if base in str(facts["reason"])), "a Pytree subclass")
            note = (f"# found: {identifier_or(facts.get('class_name'), 'a class')} ({subclass}); such "
                    "classes are Pytrees with pytree=False, reproduced here directly\n")
        transform = facts.get("transform")
        if transform is None:
            function = facts.get("function")
            use = cls._SHARED_GRAPH_APIS.get(function)
            if use is None:
                found = f"nnx.{function}" if function in GRAPH_APIS else "another graph API"
                note += f"# found: {found}; nnx.split flattens its argument the same way\n"
                use = "nnx.split(m)"
            call = f"m = Model()\n{use}\nreturn 'ok'\n"
        else:
            if transform not in cls._SHARED_TRANSFORMS:
                found = f"nnx.{transform}" if transform in TRANSFORMS else "another transform"
                note += f"# found: {found}; nnx.jit traces its arguments the same way\n"
                transform = "jit"
            keywords = {k: v for k, v in (facts.get("transform_keywords") or {}).items()
                        if k in cls._SHARED_TRANSFORMS[transform]}
            if transform == "vmap" and keywords.get("in_axes", 0) is None:
                keywords["axis_size"] = 2
            position = bounded_index(facts.get("position") or 0, "the argument position")
            n_args = max(bounded_index(facts.get("n_args") or 1, "the argument count"), position + 1)
            args = ", ".join("m" if i == position else "x" for i in range(n_args))
            kw = "".join(f", {k}={literal(tuple(v) if isinstance(v, list) else v)}" for k, v in keywords.items())
            if transform == "eval_shape":
                apply = f"nnx.eval_shape(f, {args})"
            else:
                apply = f"nnx.{transform}(f{kw})({args})"
            call = (f"m, x = Model(), jnp.ones((2, 2))\n"
                    f"f = lambda *a: jnp.sum(a[{position}](jnp.ones(2)))\n"
                    f"{apply}\nreturn 'ok'\n")
        model = textwrap.dedent("""\
            class Model(nnx.Module{pytree}):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(2))
                def __call__(self, x):
                    return x * self.w[...]
            """)
        return Reproduction(note + model.format(pytree=", pytree=False") + call, expect_error="non-pytree",
                            control=model.format(pytree="") + call)


_SCALAR_TYPES = (int, float, bool, str)


class ScalarInDataContainer(Rule):
    """Python scalars inside an `nnx.data(...)` container next to Variables.

    What it does:
        Flags `nnx.data(<tuple, list or dict literal>)` whose elements mix Variables or
        Modules with Python scalars (`int`, `float`, `bool`, `str` literals).

    Why is this bad?:
        Graph-mode flattening keeps non-array leaves of data containers static. In Tree Mode
        the container is a pytree and the scalar becomes a leaf: it appears in `nnx.state`
        (checkpoint structure changes), is traced under `jit` (`TypeError: Shapes must be 1D
        sequences of concrete values of integer type` when used as a shape) and
        differentiated by `grad`; floats are silently traced. Keep scalars in plain (static)
        attributes, `nnx.static(...)`, or `nnx.List`/`nnx.Dict` elements.

    References:
        - Catalogue row H5 (`r82_python_scalars_in_data.py`, rewrite `r82_python_scalars_in_data_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX705"
    no_fix_reason = "the error comes from the container's contents, not from the mode of one call, so no call-site keyword keeps graph mode for it; keep the scalars out of the `nnx.data` container (or in `nnx.Variable`s / arrays), which needs the author's judgement"
    symbol = "scalar-in-data-container"
    kind = "raises"
    catalogue = ("H5",)
    message = (
        "Python scalar(s) {scalars} in `nnx.data(...)` next to Variables: Tree Mode makes them "
        "traced leaves (TypeError as static values)"
    )
    help = (
        "In Tree Mode they become traced pytree leaves, part of `nnx.state`, so using them as static "
        "values raises TypeError. Store them in a plain attribute or `nnx.static(...)` instead"
    )
    VALID = [
        Valid(
            "static-attributes",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(4))
                    self.cfg_param = nnx.Param(jnp.ones(1))
                    self.cfg_size = 2
                    self.layers = nnx.data([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])
                    self.sizes = nnx.List([1, 2])
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tuple-with-int",
            """
            import jax.numpy as jnp
            from flax import nnx

            class M(nnx.Module):
                def __init__(self):
                    self.w = nnx.Param(jnp.ones(4))
                    self.cfg = nnx.data((nnx.Param(jnp.ones(1)), 2))  # NNX705
                def __call__(self):
                    return jnp.zeros(self.cfg[1]) + self.w.sum()
            """,
            tree_mode=raises("TypeError", "Shapes must be 1D sequences of concrete values"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: dict) -> Reproduction:
        """A Param next to the flagged scalar in ``nnx.data((...))``, read under ``nnx.jit``:
        an int used as a shape raises (it is a traced leaf); a float/bool is silently traced
        (the observation is whether the jitted code saw a Python scalar); a string cannot be
        a leaf at all. The control keeps the scalar in a plain (static) attribute."""
        values = facts.get("scalar_values") or [2]
        value = values[0]
        scalar = literal(value)  # a literal of the analysed code: only ever repr'd plain data
        model = (
            "class M(nnx.Module):\n    def __init__(self):\n        self.w = nnx.Param(jnp.ones(4))\n"
            f"        self.cfg = nnx.data((nnx.Param(jnp.ones(1)), {scalar}))\n\n\nm = M()\n"
        )
        static = model.replace(f"self.cfg = nnx.data((nnx.Param(jnp.ones(1)), {scalar}))",
                               f"self.cfg_param = nnx.Param(jnp.ones(1))\n        self.cfg = (None, {scalar})  # static")
        if isinstance(value, int) and not isinstance(value, bool):
            use = "return list(nnx.jit(lambda m: jnp.zeros(m.cfg[1]) + m.w.sum())(m).shape)\n"
            return Reproduction(model + use, expect_error="other:TypeError", control=static + use)
        if isinstance(value, str):
            use = "nnx.jit(lambda m: m.w.sum())(m)\nreturn 'ran'\n"
            return Reproduction(model + use, expect_error="non-pytree", control=static + use)
        kind = "bool" if isinstance(value, bool) else "float"
        use = (f"seen = []\nnnx.jit(lambda m: seen.append(isinstance(m.cfg[1], {kind})))(m)\n"
               "return seen[0]  # a Python scalar inside the trace?\n")
        return Reproduction(model + use, expect_tree=False, expect_graph=True, control=static + use)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name != "data" or not call.args:
            return
        container = call.args[0]
        if isinstance(container, (nodes.Tuple, nodes.List)):
            elements = list(container.elts)
        elif isinstance(container, nodes.Dict):
            elements = [value for _, value in container.items]
        else:
            return
        scalars = [e for e in elements if isinstance(e, nodes.Const) and isinstance(e.value, _SCALAR_TYPES)]
        if not scalars:
            return
        has_state = False
        for element in elements:
            if isinstance(element, nodes.Call):
                ref = self.context.classes.class_of(element)
                if ref is not None and (ref.qualified_name.startswith("flax.nnx.") or (
                        ref.definition is not None and self.context.classes.info(ref.definition).is_nnx_module)):
                    has_state = True
        if not has_state:
            return
        self.report(node, scalars=", ".join(s.as_string() for s in scalars),
                    scalar_values=[s.value for s in scalars])


class GraphOnlyAPI(Rule):
    """Graph-mode-only APIs: `nnx.cached_partial`, and the always-broken `nnx.compat.vjp` / `jvp`.

    What it does:
        Flags `nnx.cached_partial(...)` unless graph mode is kept (`nnx.compat.cached_partial`,
        `graph=True, graph_updates=True`), and every call of `nnx.compat.vjp` /
        `nnx.compat.jvp`.

    Why is this bad?:
        `cached_partial` exists only for graph mode: Tree Mode raises `ValueError:
        cached_partial is a graph-mode-only API and requires graph_updates=True`; call the
        transformed function with the object directly (Tree Mode transforms are already
        cheap pytree wrappers). `nnx.compat.vjp` / `nnx.compat.jvp` fix `graph=True,
        graph_updates=True`, which `vjp`/`jvp` never supported: they always raise
        `NotImplementedError`. Use `nnx.vjp` / `nnx.jvp` (Tree Mode).

    References:
        - Catalogue row H8 (`r80_mode_exclusive_apis.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX706"
    fixes = ("pin",)
    symbol = "graph-only-api"
    kind = "raises"
    catalogue = ("H8",)
    no_reproduction_reason = (
        "the flagged APIs exist only for graph mode (`nnx.cached_partial`) or pin it (`nnx.compat.vjp`/`jvp`); "
        "the Tree Mode reference runtime implements Tree Mode only and has neither graph-only APIs nor "
        "`nnx.compat`, so no program with names both implementations provide contains the call (the error is "
        "the API's own mode check)"
    )
    message = "`{api}(...)`: {error}"
    help = "{instead}"
    VALID = [
        Valid(
            "tree-mode-apis",
            """
            from flax import nnx

            def run(m, x):
                step = nnx.jit(lambda m, x: m(x))
                cached = nnx.compat.cached_partial(step, m)
                y = nnx.vjp(lambda m, x: m(x), m, x)
                z = nnx.jvp(lambda m: m(x), (m,), (m,))
                return step(m, x), cached(x), y, z
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "cached-partial-and-compat-vjp",
            """
            from flax import nnx

            def run(m, x):
                step = nnx.jit(lambda m, x: m(x))
                cached = nnx.cached_partial(step, m)  # NNX706
                y = nnx.compat.vjp(lambda m, x: m(x), m, x)  # NNX706
                return cached(x), y
            """,
            tree_mode=raises("ValueError", "cached_partial is a graph-mode-only API"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None:
            return
        if call.qualified_name in ("flax.nnx.compat.vjp", "flax.nnx.compat.jvp"):
            self.report(node, api=f"nnx.compat.{call.name}",
                        error="NotImplementedError in every mode (graph-mode vjp/jvp with graph updates is "
                              "not supported)",
                        instead=f"Use `nnx.{call.name}` (Tree Mode) instead")
        elif call.name == "cached_partial" and not self.context.keeps_graph_mode(call):
            self.report(node, api="nnx.cached_partial",
                        error="Tree Mode raises ValueError (cached_partial is a graph-mode-only API)",
                        instead="Call the transformed function with the object directly, or keep graph mode "
                                "with `nnx.compat.cached_partial`", pin=self._cached_partial_pin(call))

    def _cached_partial_pin(self, call) -> list[dict]:
        """The call and the transform of the function it caches: flax's graph-mode
        ``cached_partial`` needs a graph-mode transform inside."""
        inner = transformed_code(self.context).transformed_callable(call.args[0]) if call.args else None
        return pin_sites_in(self.context, call, entry_pin_target(inner))


class GraphModeSetLate(Rule):
    """`nnx.set_graph_mode(...)` after import-time transforms of the same module, or in a thread.

    What it does:
        Flags a plain `nnx.set_graph_mode(...)` / `nnx.set_graph_updates(...)` /
        `flax.config.update('nnx_graph_mode', ...)` statement that runs after NNX transforms
        of the same module were created at import time (module-level `@nnx.jit`-style
        decorators on functions and methods, `step = nnx.jit(f)` at module level) without
        explicit `graph=`/`graph_updates=` flags; and `set_graph_mode` / `set_graph_updates`
        inside a function started as a thread (`threading.Thread(target=...)`).

    Why is this bad?:
        Transforms fix the mode when they are created: import-time decorators keep the mode
        that was in force at import, whatever is set later, so one program silently mixes
        semantics (graph APIs like `nnx.split` follow the mode at call time). The setters
        are thread-local: a thread only sees its own setting, the main thread never does.
        Set the mode process-wide before the decorators run (`flax.config.update(
        'nnx_graph_mode', ...)` before importing the model code, or the `NNX_GRAPH_MODE`
        environment variable), or pin it per transform with `graph=` / `graph_updates=`.

    References:
        - Catalogue row G2 (`r61_mode_resolution_timing.py`, rewrite `r61_mode_resolution_timing_fix.py`)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX707"
    no_fix_reason = "the fix is to set the mode before the transforms are created, or to pin each transform; which of the two matches what the setting was meant to do needs the author's judgement"
    symbol = "graph-mode-set-late"
    kind = "silent"
    catalogue = ("G2",)
    no_reproduction_reason = (
        "the pattern is two modes in one process: transforms created while graph mode is in force (at import "
        "time, or before a thread changes its own setting) and called after the switch. A reproduction runs in "
        "one fixed mode inside `run(nnx)`, and the Tree Mode reference runtime implements Tree Mode only "
        "(`set_graph_mode` accepts False only), so the graph-mode half of the program cannot be expressed"
    )
    message = "`{setter}` {when}: {effect}"
    help = "{detail}. {instead}"
    VALID = [
        Valid(
            "config-before-decorators-and-pinned",
            """
            import flax
            flax.config.update('nnx_graph_mode', False)
            flax.config.update('nnx_graph_updates', False)
            from flax import nnx

            @nnx.jit
            def step(m):
                m.a[...] += 1

            @nnx.jit(graph=False, graph_updates=False)
            def step_tree(m):
                m.a[...] += 1

            def run():
                with nnx.set_graph_mode(True):
                    pass
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "switch-after-decorator-and-in-thread",
            """
            import threading
            from flax import nnx

            @nnx.jit
            def step(m):
                m.a[...] += 1

            def run():
                nnx.set_graph_mode(False)  # NNX707
                nnx.set_graph_updates(False)  # NNX707

            def worker():
                nnx.set_graph_updates(False)  # NNX707

            t = threading.Thread(target=worker)
            """,
            tree_mode=differs("step(m) keeps the mode from import time after set_graph_mode(False)"),
        ),
    ]

    def __init__(self, context) -> None:
        super().__init__(context)
        self._import_time: list[tuple[int, str]] | None = None
        self._thread_targets: set[int] | None = None

    def visit_expr(self, node: nodes.Expr) -> None:
        if not isinstance(node.value, nodes.Call):
            return
        setter = self._setter(node.value)
        if setter is None:
            return
        function = node.scope()
        in_function = isinstance(function, (nodes.FunctionDef, nodes.AsyncFunctionDef))
        if in_function and setter.startswith("nnx.set_") and id(function) in self._targets():
            self.report(node.value, setter=setter, when="inside a function run as a thread",
                        effect="other threads silently keep their mode (thread-local)",
                        detail="The setting applies to this thread only (the main thread and other threads keep "
                               "their own mode)",
                        instead="Set the mode process-wide (`flax.config.update(...)` before decorators run) or "
                                "pin `graph=` / `graph_updates=` on the transforms",
                        in_thread=True, transforms=[])
            return
        earlier = [(line, name) for line, name in self._import_time_transforms()
                   if in_function or line < node.lineno]
        if not earlier:
            return
        names = ", ".join(f"`{name}` (line {line})" for line, name in earlier[:3])
        self.report(node.value, setter=setter,
                    when="runs after import-time NNX transforms" if in_function
                    else "comes after import-time NNX transforms above it",
                    effect=f"{names}{' and others' if len(earlier) > 3 else ''} silently keep the old mode",
                    detail="NNX transforms keep the mode that was in force when they were created",
                    instead="Set the mode before the transforms are created (process-wide "
                            "`flax.config.update(...)` before importing them), or pin `graph=` / `graph_updates=` "
                            "per transform",
                    in_thread=False, transforms=[name for _, name in earlier])

    def _setter(self, call: nodes.Call) -> str | None:
        name = self.context.qualified_name(call.func)
        if name in _SETTERS and call.args:
            return f"nnx.{name.rpartition('.')[2]}({call.args[0].as_string()})"
        if name == "flax.config.update" and len(call.args) >= 2:
            key = call.args[0]
            if isinstance(key, nodes.Const) and key.value in _CONFIG_KEYS:
                return f"flax.config.update({key.as_string()}, {call.args[1].as_string()})"
        return None

    def _targets(self) -> set[int]:
        if self._thread_targets is None:
            self._thread_targets = set()
            service = transformed_code(self.context)
            for call in self.context.module.nodes_of_class(nodes.Call):
                if self.context.qualified_name(call.func) not in ("threading.Thread", "threading.Timer"):
                    continue
                for keyword in call.keywords or []:
                    if keyword.arg == "target":
                        for function in service.functions_of(keyword.value):
                            self._thread_targets.add(id(function))
        return self._thread_targets

    def _import_time_transforms(self) -> list[tuple[int, str]]:
        if self._import_time is None:
            found: list[tuple[int, str]] = []
            module = self.context.module
            for statement in module.body:
                candidates: list[tuple[nodes.NodeNG, str]] = []
                if isinstance(statement, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and statement.decorators:
                    candidates += [(d, statement.name) for d in statement.decorators.nodes]
                elif isinstance(statement, nodes.ClassDef):
                    for item in statement.body:
                        if isinstance(item, (nodes.FunctionDef, nodes.AsyncFunctionDef)) and item.decorators:
                            candidates += [(d, f"{statement.name}.{item.name}") for d in item.decorators.nodes]
                elif isinstance(statement, nodes.Assign) and isinstance(statement.value, nodes.Call):
                    target = statement.targets[0]
                    candidates.append((statement.value, target.as_string()))
                for expression, name in candidates:
                    if self._unpinned_transform(expression):
                        found.append((expression.lineno, name))
            self._import_time = found
        return self._import_time

    def _unpinned_transform(self, expression: nodes.NodeNG) -> bool:
        if isinstance(expression, nodes.Call):
            call = self.context.nnx_call(expression)
            if call is None and isinstance(expression.func, nodes.Call):
                call = self.context.nnx_call(expression.func)
            if call is None or call.name not in TRANSFORMS or call.is_compat:
                return False
            return not ("graph" in call.keywords and "graph_updates" in call.keywords)
        name = self.context.qualified_name(expression)
        return bool(name) and name.startswith("flax.nnx.") and name.rpartition(".")[2] in TRANSFORMS
