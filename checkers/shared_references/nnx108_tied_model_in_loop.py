"""NNX108 ``tied-model-in-loop``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import KIND_WORDS, short_source
from checkers.shared_references.base import FamilyRule
from checkers.shared_references.reproduction import (
    class_storing,
    BOX,
    access_of,
    dedented,
    emit_tree,
    index_of,
    path_parts,
    tree_of,
)
from nnx_lint.api import (
    Argument,
    Facts,
    Invalid,
    Reproduction,
    Valid,
    differs,
    fact_index,
    flax_table,
    join_path,
    pin_sites_in,
    programs,
    shared_objects,
)


@dataclass(frozen=True, kw_only=True)
class TiedModelInLoopFacts(Facts):
    """What ``NNX108`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("first_path",), ("second_path",))

    transform: str
    what: str
    class_name: str | None
    first_path: str
    second_path: str
    argument: str
    confidence: str
    kind: str
    first_part: str
    second_part: str
    container_type: str | None
    pin: list


class TiedModelInLoop(FamilyRule):
    """A model with shared Variables carried through `nnx.fori_loop` / `nnx.while_loop`.

    What it does:
        Flags `nnx.fori_loop(...)` / `nnx.while_loop(...)` whose `init_val` is (or
        contains) an instance of a class with aliased attributes (the NNX101 / NNX102 /
        NNX105 findings), or contains one object twice. Respects the loop's opt-in
        (`graph=True, graph_updates=True`, `nnx.compat.*`, scope).

    Why is this bad?:
        Unlike every other NNX transform, Tree Mode `fori_loop` / `while_loop` do not
        check for aliasing: each alias is carried as an independent copy and written back
        in path order, so the last alias wins and the other updates are silently lost
        (`a=1.0 b=1.0` instead of `3.0` in the catalogue's reproduction); inside the body
        the aliases diverge. Untie the model (store the Variable once) before looping.

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A6](../catalogue.md#a6)
        - {spec}
    """

    code = "NNX108"
    visits_nnx_calls_only = True
    facts_type = TiedModelInLoopFacts
    fixes = ("pin",)
    symbol = "tied-model-in-loop"
    kind = "silent"
    catalogue = ("A6",)
    message = "`nnx.{transform}` carries {what}: Tree Mode silently loses some updates"
    help = (
        "Tree Mode loops do not check aliasing: each alias is carried as an independent copy and all but "
        "one of the updates are silently lost. Untie the model (store the Variable once and tie by use) "
        "before looping"
    )
    VALID = [
        Valid(
            "untied-model-loop",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Untied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(()))
                def __call__(self, x):
                    self.a[...] += 1.0
                    return x * self.a[...] * self.a[...]

            m = Untied()
            m = nnx.fori_loop(0, 2, lambda i, m: (m(jnp.ones(())), m)[1], m)
            """,
        ),
        Valid(
            "opted-in-loop",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(())); self.b = self.a

            m = Tied()
            m = nnx.compat.fori_loop(0, 2, lambda i, m: m, m)
            m = nnx.while_loop(lambda m: m.a[...] < 3, lambda m: m, m, graph=True, graph_updates=True)
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "tied-model-r75",
            """
            import jax.numpy as jnp
            from flax import nnx

            class Tied(nnx.Module):
                def __init__(self):
                    self.a = nnx.Param(jnp.ones(())); self.b = self.a
                def __call__(self, x):
                    self.a[...] += 1.0
                    return x * self.a[...] * self.b[...]

            x = jnp.ones(())
            m = Tied()
            m = nnx.fori_loop(0, 2, lambda i, m: (m(x), m)[1], m)  # NNX108
            m = nnx.while_loop(lambda m: m.a[...] < 3, lambda m: (m(x), m)[1], m)  # NNX108
            """,
            tree_mode=differs("the tied attributes end at a=1.0 b=1.0 instead of 3.0 (updates lost)"),
        ),
        Invalid(
            "same-object-twice-in-carry",
            """
            from flax import nnx

            model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
            state = nnx.fori_loop(0, 3, lambda i, c: c, (model, model))  # NNX108
            """,
            tree_mode=differs("each copy is updated independently; the last one written back wins"),
        ),
    ]

    @classmethod
    def reproduce(cls, facts: Facts) -> Reproduction:
        """The tied class (or the carry holding one object twice) in the finding's loop;
        see :func:`_tied_loop_reproduction` for why both Tree Mode oracles observe the lost
        update although tree_runtime raises where flax stays silent (deviation A6).
        Control: the object stored (carried) once."""
        return _tied_loop_reproduction(facts)

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is None or call.name not in flax_table.CARRY_LOOPS:
            return
        use = fact_index(self.context).application(node)
        if use is None or use.keeps_graph or not use.arguments:
            return
        init = use.arguments[0].expression
        parts = list(init.elts) if isinstance(init, (nodes.Tuple, nodes.List)) else [init]
        for part in parts:
            cls = self.classes.class_of(part)
            if cls is None or cls.definition is None:
                continue
            aliases = self.classes.construction(cls.definition).aliases
            if aliases:
                alias = aliases[0]
                what = (f"`{short_source(part)}`, a `{cls.short_name}` whose `{join_path(alias.first_path)}` and "
                        f"`{join_path(alias.second.path)}` are one object")
                self.report(node, transform=call.name, what=what, class_name=cls.short_name,
                            first_path=join_path(alias.first_path), second_path=alias.second.display_path,
                            argument=short_source(part), confidence="static",
                            kind=KIND_WORDS.get(alias.kind, alias.kind), **shared_objects.alias_shape(alias),
                            pin=pin_sites_in(self.context, call))
                return
        refs = [(Argument(f"init_val[{i}]", i, part), self.classes.ref_of(part)) for i, part in enumerate(parts)]
        pair = shared_objects.overlapping_pair(self.classes, refs)
        if pair is not None:
            first, ref_a, second, ref_b, kinds = pair
            first_part, second_part = shared_objects.relative_parts(ref_a, ref_b)
            what = f"`{short_source(first.expression)}` and `{short_source(second.expression)}`, one object twice"
            self.report(node, transform=call.name, what=what, class_name=None, first_path=first.label,
                        second_path=second.label, argument=short_source(init), confidence="static",
                        kind=KIND_WORDS.get(kinds[0], kinds[0]) if not first_part else
                        KIND_WORDS.get(kinds[1], kinds[1]),
                        first_part=first_part, second_part=second_part, container_type=None,
                        pin=pin_sites_in(self.context, call))


#: NNX108's program after the model: the loop body updates one alias, the observation reads both.
_LOOP_PROGRAM = """
def body(*args):
    m = args[-1]
    UPDATE
    return m

try:
    LOOP
except ValueError as error:
    if "Duplicate" not in str(error):
        raise
return [FIRST, SECOND]
"""


def _tied_loop_reproduction(facts: Facts) -> Reproduction:
    """NNX108: the finding's tied model (or a carry holding one object twice) in the loop.

    The body updates the alias that comes first in flattening order (sorted attribute
    names, list positions): Tree Mode writes the carried copies back in that order, so the
    other alias's stale copy overwrites the update. The observation is the value of both
    aliases after the loop: graph mode gives the updated value at both, flax in Tree Mode
    silently gives the initial one at both. tree_runtime follows the FLIP and rejects the
    aliased carry (aliasing ValueError "Duplicate ..." before anything runs); the program
    catches exactly that error and observes the untouched model, so both Tree Mode
    implementations observe the same lost update (docs/runtime.md, deviation A6).
    ``traced=False``: the observation is the loop's concrete values, which abstract
    tracing cannot show.
    """
    kind = facts.kind or "Variable"
    transform = facts.transform if facts.transform in ("fori_loop", "while_loop") else "fori_loop"
    first_part, second_part = facts.first_part, facts.second_part
    first, second = facts.first_path or "a", facts.second_path or "b"
    carry = first.startswith("init_val[") and second.startswith("init_val[")
    if kind == "Rngs":
        stream = next((p for p in (first_part, second_part) if programs.is_identifier(p)), "default")
        shared = programs.call("nnx.Rngs", **{stream: "0"})
        number, start, updated = "int", 0, 2

        def update(target: str) -> str:  # draw from the stream
            return programs.call(target)

        def value_of(target: str) -> str:
            return programs.subscript(programs.attribute(target, "count"), "...")

        def leaf(base: str, part: str | None) -> str:  # the stream: stored as such, or of the Rngs
            return base if part else programs.attribute(base, stream)
    else:
        # a scalar Param reached from both aliases: at the deeper part, else `.w` of a Box
        deepest = max([first_part or "", second_part or ""], key=len)
        if deepest:
            shared = emit_tree(tree_of([(deepest, "nnx.Param(jnp.ones(()))")]))
        else:
            shared = "nnx.Param(jnp.ones(()))" if kind == "Variable" else "Box(w=nnx.Param(jnp.ones(())))"
        number, start, updated = "float", 1.0, 3.0

        def update(target: str) -> str:
            return programs.filled("TARGET[...] += 1.0", expressions={"TARGET": target})

        def value_of(target: str) -> str:
            return programs.call("jnp.sum", programs.subscript(target, "..."))

        def leaf(base: str, part: str | None) -> str:
            # `base` holds `shared` reached at `part`: go on to the Param
            own = part or ""
            rest = deepest[len(own):].lstrip(".") if deepest else ("" if kind == "Variable" else "w")
            return access_of(base, rest)

    if carry:
        parts = {programs.bounded_index(index_of(first)[1], "the carry position"): first_part,
                 programs.bounded_index(index_of(second)[1], "the carry position"): second_part}
        positions = sorted(parts)
        size = max(positions) + 1

        def make(tied: bool) -> str:
            items = [access_of("shared", parts[i]) if i in parts else "jnp.ones(())" for i in range(size)]
            if not tied:  # the rewrite: carry the object once
                items = [item for i, item in enumerate(items) if i != positions[-1]]
            return programs.lines(programs.assign("shared", shared), programs.assign("model", programs.items(*items)))

        targets = [leaf(programs.subscript("model", p), parts[p]) for p in (positions[0], positions[-1])]
        body_target = leaf(programs.subscript("m", positions[0]), parts[positions[0]])
    else:
        class_name = programs.identifier_or(facts.class_name, "Model")

        def flattening_order(item):
            return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in path_parts(item[0])]

        ordered = sorted([(first, first_part), (second, second_part)], key=flattening_order)
        tree = tree_of([(path, access_of("shared", part)) for path, part in ordered])

        def make(tied: bool) -> str:
            stores = tree if tied else tree_without(tree, ordered[1][0])  # the rewrite: store it once
            return class_storing(class_name, shared, stores)

        targets = [leaf(access_of("model", path), part) for path, part in ordered]
        body_target = leaf(access_of("m", ordered[0][0]), ordered[0][1])
    value = value_of(body_target)  # the loop condition compares the traced value itself

    def observe(target: str) -> str:  # the concrete number the program returns
        return programs.call(number, value_of(target))

    loop = ("nnx.fori_loop(0, 2, body, model)" if transform == "fori_loop"
            else programs.call("nnx.while_loop", programs.filled("lambda m: VALUE < LIMIT", expressions={
                "VALUE": value, "LIMIT": programs.literal(updated)}), "body", "model"))

    def program(tied: bool) -> str:
        observed = targets if tied else [targets[0], targets[0]]
        return dedented(BOX, make(tied), "# tree_runtime (FLIP) rejects the aliased carry: the program catches that",
                        programs.filled(_LOOP_PROGRAM, expressions={
                            "LOOP": loop, "FIRST": observe(observed[0]), "SECOND": observe(observed[1])},
                            statements={"UPDATE": update(body_target)}))

    return Reproduction(program(True), expect_tree=[start, start], expect_graph=[updated, updated],
                        control=program(False), traced=False)


def tree_without(tree: dict, path: str) -> dict:
    """A copy of a nested store tree without the store at ``path``."""
    import copy

    result = copy.deepcopy(tree)
    parts = path_parts(path)
    node = result
    for part in parts[:-1]:
        node = node.get(part, {})
    if isinstance(node, dict):
        node.pop(parts[-1], None)
    return result
