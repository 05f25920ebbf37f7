"""NNX708 ``ignored-graph-option``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from dataclasses import dataclass

from astroid import nodes

from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    NNXCall,
    Reproduction,
    Rule,
    Valid,
    constant_bool,
    differs,
    pin_sites_in,
    value_model,
)

#: Options of graph APIs that only graph mode reads (flax 0.12.8, `graphlib.py`): `merge`
#: and `map` (which ends in `merge`) pass `recreate_variables` to `unflatten`, whose
#: Tree Mode branch (`_tree_unflatten`) never looks at it and wraps every raw value back
#: into a Variable of the type the split found there. Option -> the value that is ignored.
#: (`unflatten`'s `index_ref` / `outer_index_outer_ref` and `flatten`'s `ref_index` /
#: `ref_outer_index`, graph-mode bookkeeping for sharing across calls, are ignored too; they
#: take mappings, not a flag whose one value means something else, and are not covered.)
IGNORED_OPTIONS: dict[str, dict[str, bool]] = {"map": {"recreate_variables": False},
                                                "merge": {"recreate_variables": False},
                                                "unflatten": {"recreate_variables": False}}


@dataclass(frozen=True, kw_only=True)
class IgnoredGraphOptionFacts(Facts):
    """What ``NNX708`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    option: str
    pin: list = ABSENT


class IgnoredGraphOption(Rule):
    """`recreate_variables=False` on `nnx.map` / `nnx.merge` / `nnx.unflatten`: Tree Mode ignores it.

    What it does:
        Flags `nnx.map(f, node, recreate_variables=False)` unless the call keeps graph mode
        (`graph=True`, scope) or chooses Tree Mode (`graph=False`), and
        `nnx.merge(graphdef, state, recreate_variables=False)` (or `nnx.unflatten(...)`) when
        `graphdef` comes from an `nnx.split` / `nnx.graphdef` / `nnx.flatten` in the same
        function that does neither (a graphdef of unknown origin may be a graph-mode one:
        silent). These are the only flag-valued graph-API options of flax 0.12.8 that Tree
        Mode ignores (`clone(variables=False)`, `merge(copy=True)`, `flatten(with_paths=False)`
        and the filters of `split`/`state` behave the same in both modes; the
        `ref_index`-style bookkeeping arguments of `flatten`/`unflatten` are ignored too, but
        not covered).

    Why is this bad?:
        With `recreate_variables=False`, graph mode's `merge` leaves a raw value where the
        split found a Variable: `nnx.map(lambda path, x: 0, rngs, recreate_variables=False)`
        gives an `Rngs` whose `count` is the int `0`. Tree Mode's `merge` never reads the
        option and wraps every raw value in a Variable of the original type again (a
        `RngCount`), so code expecting plain values silently gets Variables (flax's
        `test_map_recreate_variables_false` fails on exactly this). To get raw values in
        both modes, map the Module as a pytree:
        `jax.tree.map(f, node, is_leaf=lambda x: isinstance(x, nnx.Variable))`, or keep
        graph mode with `graph=True` (on `nnx.map`, or on the split that made the graphdef).

    References:
        - Patterns in the catalogue: [H11](../catalogue.md#h11)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX708"
    facts_type = IgnoredGraphOptionFacts
    fixes = ("pin",)
    symbol = "ignored-graph-option"
    kind = "silent"
    catalogue = ("H11",)
    message = "`{option}` on `{api}` is silently ignored in Tree Mode: the result holds Variables again"
    help = (
        "Tree Mode's merge rebuilds every Variable the split found, whatever `{option}` says. For raw values "
        "map the Module as a pytree, `jax.tree.map(f, node, is_leaf=lambda x: isinstance(x, nnx.Variable))`, "
        "or keep graph mode with `graph=True`"
    )
    VALID = [
        Valid(
            "pytree-map-or-graph-mode",
            """
            import jax
            from flax import nnx

            def raw_counts(rngs):
                is_variable = lambda x: isinstance(x, nnx.Variable)
                plain = jax.tree.map(lambda x: 0, rngs, is_leaf=is_variable)
                kept = nnx.map(lambda path, x: 0, rngs, recreate_variables=False, graph=True)
                chosen = nnx.map(lambda path, x: 0, rngs, recreate_variables=False, graph=False)
                graphdef, state = nnx.split(rngs, graph=True)
                merged = nnx.merge(graphdef, state, recreate_variables=False)
                return plain, kept, chosen, merged, nnx.map(lambda path, x: x, rngs)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "map-and-merge",
            """
            from flax import nnx

            def raw_counts(rngs, pure):
                new = nnx.map(lambda path, x: 0, rngs, recreate_variables=False)  # NNX708
                graphdef, state = nnx.split(rngs)
                merged = nnx.merge(graphdef, pure, recreate_variables=False)  # NNX708
                return new.default.count, merged
            """,
            tree_mode=differs("`new.default.count` is an `RngCount` Variable, not the int 0"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in IGNORED_OPTIONS or call.via_partial:
            return
        option = self._ignored_option(call)
        if option is None:
            return
        if call.name == "map":
            if self.context.flip_changes(call):
                self.report(node, api="nnx.map", option=option, pin=pin_sites_in(self.context, call))
            return
        source = value_model(self.context).graphdef_source(call.args[0]) if call.args else None
        if source is not None and self.context.flip_changes(source):
            self.report(node, api=f"nnx.{call.name}", option=option, pin=pin_sites_in(self.context, source))

    @staticmethod
    def _ignored_option(call: NNXCall) -> str | None:
        for keyword, ignored in IGNORED_OPTIONS[call.name].items():
            if constant_bool(call.keywords.get(keyword)) is ignored:
                return f"{keyword}={ignored}"
        return None

    @classmethod
    def reproduce(cls, facts) -> Reproduction:
        """A Linear mapped (or split and merged from its pure dict) with the option; the
        observation is whether the kernel comes back as a Variable. Control: the Tree Mode
        rewrite, `jax.tree.map` over the Module with Variables as leaves."""
        model = "model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))"
        # tree_runtime has no flatten/unflatten: merge is the same Tree Mode unflatten
        stand_ins = ("`nnx.merge` stands for `nnx.unflatten`",) if facts.api == "nnx.unflatten" else ()
        if facts.api in ("nnx.merge", "nnx.unflatten"):
            call = ("graphdef, state = nnx.split(model)\n"
                    "new = nnx.merge(graphdef, nnx.to_pure_dict(state), recreate_variables=False)")
        else:
            call = "new = nnx.map(lambda path, v: v[...] * 0, model, recreate_variables=False)"
        observe = "return isinstance(new.kernel, nnx.Variable)"
        rewrite = ("new = jax.tree.map(lambda v: v[...] * 0, model, "
                   "is_leaf=lambda x: isinstance(x, nnx.Variable))")
        return Reproduction(f"{model}\n{call}\n{observe}\n", expect_tree=True, expect_graph=False,
                            control=f"{model}\n{rewrite}\n{observe}\n", stand_ins=stand_ins)
