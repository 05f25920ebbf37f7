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
    programs,
    value_model,
)

#: Options of graph APIs that only graph mode reads (flax 0.12.8, `graphlib.py`): `merge`
#: and `map` (which ends in `merge`) pass `recreate_variables` to `unflatten`, whose
#: Tree Mode branch (`_tree_unflatten`) never looks at it and wraps every raw value back
#: into a Variable of the type the split found there. Option -> the value that is ignored.
IGNORED_OPTIONS: dict[str, dict[str, bool]] = {"map": {"recreate_variables": False},
                                                "merge": {"recreate_variables": False},
                                                "unflatten": {"recreate_variables": False}}
#: The reference bookkeeping of `flatten` / `unflatten` (a `RefMap` / `IndexMap` the caller
#: keeps to share node identities across calls): `flatten` passes `ref_index` and
#: `ref_outer_index` only to its graph branch and `unflatten` reads `index_ref` and
#: `outer_index_outer_ref` only for a graph-mode GraphDef, so in Tree Mode the maps stay
#: empty (checked with flax 0.12.8). Any value but a literal `None` is ignored.
IGNORED_MAPPINGS: dict[str, tuple[str, ...]] = {"flatten": ("ref_index", "ref_outer_index"),
                                                "unflatten": ("index_ref", "outer_index_outer_ref")}
_MAPPING_OPTIONS = frozenset(option for options in IGNORED_MAPPINGS.values() for option in options)
#: What each ignored option changes, and the way out (the diagnostic's ``effect`` / ``instead``).
_RAW_VALUES = ("the result holds Variables again",
               "Tree Mode's merge rebuilds every Variable the split found, whatever `{option}` says. For raw "
               "values map the Module as a pytree, `jax.tree.map(f, node, is_leaf=lambda x: isinstance(x, "
               "nnx.Variable))`, or keep graph mode with `graph=True`")
_REFERENCES = ("the map stays empty, no identity is shared across calls",
               "Tree Mode flattens a Module as a pytree and keeps no reference index; pass every object that "
               "shares references in one call (`nnx.split((a, b))`), or keep graph mode with `graph=True`")


@dataclass(frozen=True, kw_only=True)
class IgnoredGraphOptionFacts(Facts):
    """What ``NNX708`` reports (the diagnostic's ``facts``, in this order)."""

    api: str
    option: str
    effect: str
    instead: str
    pin: list = ABSENT


class IgnoredGraphOption(Rule):
    """Graph-API options Tree Mode ignores: `recreate_variables=False`, and the reference maps of `flatten` / `unflatten`.

    What it does:
        Flags `nnx.map(f, node, recreate_variables=False)` unless the call keeps graph mode
        (`graph=True`, scope) or chooses Tree Mode (`graph=False`), and
        `nnx.merge(graphdef, state, recreate_variables=False)` (or `nnx.unflatten(...)`) when
        `graphdef` comes from an `nnx.split` / `nnx.graphdef` / `nnx.flatten` in the same
        function that does neither (a graphdef of unknown origin may be a graph-mode one:
        silent). These are the only flag-valued graph-API options of flax 0.12.8 that Tree
        Mode ignores (`clone(variables=False)`, `merge(copy=True)`, `flatten(with_paths=False)`
        and the filters of `split`/`state` behave the same in both modes). Also flags the
        reference bookkeeping of the low-level graph API: `nnx.graphlib.flatten(node,
        ref_index=..., ref_outer_index=...)` under the same conditions as `nnx.map`, and
        `nnx.graphlib.unflatten(graphdef, state, index_ref=..., outer_index_outer_ref=...)`
        under the same conditions as `merge` (any value but a literal `None`).

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
        The `RefMap` / `IndexMap` given to `flatten` / `unflatten` record which object got
        which index, so that separate calls can share references (flax's own transforms once
        relied on it). Tree Mode's flatten never fills them and its unflatten never reads
        them: the map stays empty, and a node unflattened with an outer index is a new
        object, not the one the caller had (flax's `test_cached_unflatten*` tests fail, one
        with a `RecursionError` on a self-reference).

    References:
        - Patterns in the catalogue: [H11](../catalogue.md#h11)
        - [FLIP 5310](https://github.com/google/flax/issues/5310)
    """

    code = "NNX708"
    visits_nnx_calls_only = True
    facts_type = IgnoredGraphOptionFacts
    fixes = ("pin",)
    symbol = "ignored-graph-option"
    kind = "silent"
    catalogue = ("H11",)
    message = "`{option}` on `{api}` is silently ignored in Tree Mode: {effect}"
    help = "{instead}"
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
        Valid(
            "reference-maps-in-graph-mode",
            """
            from flax import nnx

            def flatten_shared(a, b):
                refmap = nnx.graphlib.RefMap()
                first = nnx.graphlib.flatten(a, ref_index=refmap, graph=True)
                second = nnx.graphlib.flatten(b, ref_index=refmap, graph=True)
                together = nnx.graphlib.flatten((a, b), ref_index=None)
                return first, second, together
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
        Invalid(
            "reference-maps",
            """
            from flax import nnx

            def flatten_shared(a, b):
                refmap = nnx.graphlib.RefMap()
                graphdef, state = nnx.graphlib.flatten(a, ref_index=refmap)  # NNX708
                index = nnx.graphlib.IndexMap()
                again = nnx.graphlib.unflatten(graphdef, state, index_ref=index)  # NNX708
                return len(refmap), len(index), again
            """,
            tree_mode=differs("`len(refmap)` and `len(index)` are 0: Tree Mode never fills the maps"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.via_partial:
            return
        found = self._ignored_option(call)
        if found is None:
            return
        option, (effect, instead) = found
        facts = {"option": option, "effect": effect, "instead": instead.format(option=option)}
        if call.name in ("map", "flatten"):
            # the call's own mode decides (the split inside `map`, the flatten itself)
            if self.context.flip_changes(call):
                self.report(node, api=f"nnx.{call.name}", pin=pin_sites_in(self.context, call), **facts)
            return
        # merge / unflatten follow the GraphDef they are given: the split that made it decides
        source = value_model(self.context).graphdef_source(call.args[0]) if call.args else None
        if source is not None and self.context.flip_changes(source):
            self.report(node, api=f"nnx.{call.name}", pin=pin_sites_in(self.context, source), **facts)

    @staticmethod
    def _ignored_option(call: NNXCall) -> tuple[str, tuple[str, str]] | None:
        """The first option of this call that Tree Mode ignores, as written, with its effect and way out."""
        for keyword, ignored in IGNORED_OPTIONS.get(call.name, {}).items():
            if constant_bool(call.keywords.get(keyword)) is ignored:
                return f"{keyword}={ignored}", _RAW_VALUES
        for keyword in IGNORED_MAPPINGS.get(call.name, ()):
            value = call.keywords.get(keyword)
            if value is not None and not (isinstance(value, nodes.Const) and value.value is None):
                return keyword, _REFERENCES
        return None

    @classmethod
    def reproduce(cls, facts) -> Reproduction:
        """A Linear mapped (or split and merged from its pure dict) with the option; the
        observation is whether the kernel comes back as a Variable. Control: the Tree Mode
        rewrite, `jax.tree.map` over the Module with Variables as leaves."""
        if facts.option in _MAPPING_OPTIONS:
            return ("the reference maps belong to the low-level graph API (`nnx.graphlib.flatten` / "
                    "`unflatten`), which the Tree Mode reference runtime does not have")
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
        return Reproduction(programs.lines(model, call, observe), expect_tree=True, expect_graph=False,
                            control=programs.lines(model, rewrite, observe), stand_ins=stand_ins)
