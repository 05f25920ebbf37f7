"""NNX707 ``graph-mode-set-late``: the rule, its examples."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    DecodedTransform,
    Facts,
    Invalid,
    Rule,
    Valid,
    differs,
    fact_index,
    flax_table,
    transform_resolver,
    transformed_code,
)


_SETTERS = flax_table.MODE_SETTERS


_CONFIG_KEYS = {"nnx_graph_mode": "graph", "nnx_graph_updates": "graph_updates"}


@dataclass(frozen=True, kw_only=True)
class GraphModeSetLateFacts(Facts):
    """What ``NNX707`` reports (the diagnostic's ``facts``, in this order)."""

    setter: str
    when: str
    effect: str
    detail: str
    instead: str
    in_thread: bool
    transforms: list


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
        - Patterns in the catalogue: [G2](../catalogue.md#g2)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX707"
    facts_type = GraphModeSetLateFacts
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
        if name == flax_table.FLAX_CONFIG_UPDATE and len(call.args) >= 2:
            key = call.args[0]
            if isinstance(key, nodes.Const) and key.value in _CONFIG_KEYS:
                return f"flax.config.update({key.as_string()}, {call.args[1].as_string()})"
        return None

    def _targets(self) -> set[int]:
        if self._thread_targets is None:
            self._thread_targets = set()
            service = transformed_code(self.context)
            for call in fact_index(self.context).calls:
                if self.context.qualified_name(call.func) not in ("threading.Thread", "threading.Timer"):
                    continue
                for keyword in call.keywords or []:
                    if keyword.arg == "target":
                        for function in service.transforms.functions_of(keyword.value):
                            self._thread_targets.add(id(function))
        return self._thread_targets

    def _import_time_transforms(self) -> list[tuple[int, str]]:
        """``(line, name)`` of each NNX transform created at import time that does not pin both
        mode flags: decorators of module-level functions and methods, ``name = nnx.jit(f)``."""
        if self._import_time is None:
            resolver = transform_resolver(self.context)
            found: list[tuple[int, str]] = []
            for statement in self.context.module.body:
                candidates: list[tuple[DecodedTransform | None, str]] = []
                if isinstance(statement, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                    candidates += [(d, statement.name) for d in resolver.decorators(statement)]
                elif isinstance(statement, nodes.ClassDef):
                    for item in statement.body:
                        if isinstance(item, (nodes.FunctionDef, nodes.AsyncFunctionDef)):
                            candidates += [(d, f"{statement.name}.{item.name}") for d in resolver.decorators(item)]
                elif isinstance(statement, nodes.Assign) and isinstance(statement.value, nodes.Call):
                    candidates.append((resolver.created(statement.value), statement.targets[0].as_string()))
                for transform, name in candidates:
                    if transform is not None and not transform.is_compat \
                            and transform.given_flags != {"graph", "graph_updates"}:
                        found.append((transform.node.lineno, name))
            self._import_time = found
        return self._import_time
