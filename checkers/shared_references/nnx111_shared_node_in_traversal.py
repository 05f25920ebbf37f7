"""NNX111 ``shared-node-in-traversal``: the rule, its examples and its reproduction builder."""
from __future__ import annotations

from typing import ClassVar

from dataclasses import dataclass

from astroid import nodes

from checkers.shared_references.messages import short_source
from checkers.shared_references.base import FamilyRule
from checkers.shared_references.reproduction import BOX, dedented
from nnx_lint.api import (
    ABSENT,
    Facts,
    Invalid,
    Ref,
    Reproduction,
    Valid,
    differs,
    fact_index,
    flax_table,
    pin_sites_in,
    programs,
    value_model,
)

#: What each traversal does, in Tree Mode, with a node reachable at two paths (measured with
#: flax 0.12.8 on a Variable-free `nnx.Pytree` / `nnx.Module` in a list, a dict and two
#: attributes): the callback runs or the loop sees it once per path, or the result holds
#: one copy per path where graph mode kept one object. `iter_children`,
#: `iter_module_children`, `eval()`/`train()`, `set_attributes` without filters,
#: `find_duplicates` and `graphdef` give the same result in both modes and are not listed.
EFFECTS: dict[str, str] = {
    "recursive_map": "maps it once per path",
    "iter_graph": "yields it once per path",
    "iter_modules": "yields it once per path",
    "map": "copies it once per path",
    "clone": "copies it once per path",
    "view": "copies it once per path",
    "with_attributes": "copies it once per path",
    "merge": "copies it once per path",
    "unflatten": "copies it once per path",
}
#: An NNX transform applied to the value: the function gets (and its outputs give back) one
#: copy per path (measured with flax 0.12.8 on `nnx.jit`: inside and after the call,
#: `m.left is m.right` is False in Tree Mode, True in graph mode).
TRANSFORM_EFFECT = "passes it to the function once per path"
#: The deprecated ``Module.iter_modules()`` method walks as ``nnx.iter_modules`` does.


@dataclass(frozen=True, kw_only=True)
class SharedNodeInTraversalFacts(Facts):
    """What ``NNX111`` reports (the diagnostic's ``facts``, in this order)."""

    #: The shared object's paths, as flax's aliasing errors name them (``Facts.paths``).
    paths: ClassVar[tuple[tuple[str, ...], ...]] = (("first_path",), ("second_path",))

    api: str
    value: str
    node_class: str
    first_path: str
    second_path: str
    effect: str
    pin: list = ABSENT


class SharedNodeInTraversal(FamilyRule):
    """A graph node without Variables reachable twice, walked by a graph traversal or a transform that shows it.

    What it does:
        Flags `nnx.recursive_map`, `nnx.iter_graph`, `nnx.iter_modules` (and the
        `Module.iter_modules()` method), `nnx.map`, `nnx.clone`, `nnx.view` and
        `nnx.with_attributes` given a value that reaches one Module or Pytree holding no
        Variables at two paths, an NNX transform (`nnx.jit`, `nnx.vmap`, ...) applied to
        such a value, and `nnx.merge` / `nnx.unflatten` of a GraphDef that an `nnx.split` /
        `nnx.graphdef` / `nnx.flatten` of such a value made in the same function, or in
        every caller that passes the GraphDef in: `[foo, foo]`, `{"a": foo, "b": foo}`, a class that stores
        it twice (`self.right = self.left`, one `__init__` argument at two attributes) or
        a construction passing it twice (`Pair(a=drop, b=drop)`). The node's class must be
        known (a project class whose stores hold no Variables with the arguments given,
        `nnx.Dropout` without `rngs`): plain Python objects keep their identity in both
        modes, and a node holding Variables makes Tree Mode raise instead (NNX101-NNX103).
        Silent when the call keeps graph mode (`graph=True`, `nnx.compat.*`, scope) or
        already chooses Tree Mode (`graph=False`).

        Not flagged, because their result is the same in both modes (measured with flax
        0.12.8): `nnx.iter_children`, `nnx.iter_module_children`, `nnx.find_duplicates`,
        `nnx.graphdef`, `model.eval()`/`train()` (the attribute is set on the one object
        twice). Not flagged either: `nnx.state`, whose State holds the node's arrays once per
        path (the change only shows where they are used), a merge of a GraphDef of unknown
        origin, and `set_attributes` with a path filter, which in Tree Mode also matches the
        second path.

    Why is this bad?:
        Tree Mode walks pytrees, not graphs: it accepts a node without Variables reachable
        twice (only Variables and mutable array refs are checked for aliasing), but visits
        it once per path. Graph mode visited it once and kept one object, so a callback
        that counts or rewrites nodes runs twice, a loop over `iter_modules` sees the
        Module twice, and `out.a is out.b` stops holding after `clone`/`map`/`view` and
        inside and after a transform (setting an attribute on one copy no longer reaches
        the other; measured on flax's `docs_nnx/guides/pytree.ipynb`, cells 44 and 46). Store the node
        once, map it once and put the result at both places, re-tie after the call
        (`out.b = out.a`), or keep graph mode for the call (`graph=True`).

    References:
        - [Tree Mode in brief: shared references](../tree-mode.md#shared-references) — patterns [A12](../catalogue.md#a12)
        - {spec}
    """

    code = "NNX111"
    facts_type = SharedNodeInTraversalFacts
    fixes = ("pin",)
    symbol = "shared-node-in-traversal"
    kind = "silent"
    catalogue = ("A12",)
    message = (
        "`{value}` holds one `{node_class}` at `{first_path}` and `{second_path}`: Tree Mode's `{api}` silently {effect}"
    )
    help = (
        "Tree Mode walks `{value}` as a tree: the `{node_class}` reached at `{first_path}` and `{second_path}` is "
        "visited and rebuilt once per path. Store it once, apply the call to it once and place the result at "
        "both paths (or re-tie after the call: `out.b = out.a`), or keep graph mode with `graph=True`"
    )
    VALID = [
        Valid(
            "map-once-then-place",
            """
            from flax import nnx

            class Foo(nnx.Pytree):
                def __init__(self, d):
                    self.d = d

            def bump(path, node):
                if isinstance(node, Foo):
                    node.d += 1
                return node

            def run():
                foo = Foo(10)
                mapped = nnx.recursive_map(bump, foo)
                bar = [mapped, nnx.recursive_map(bump, Foo(20)), mapped]
                kept = nnx.recursive_map(bump, [foo, Foo(20), foo], graph=True)
                count = len(list(nnx.iter_children([foo, foo])))
                return bar, kept, count
            """,
        ),
        Valid(
            "plain-objects-and-variables",
            """
            import dataclasses
            import jax.numpy as jnp
            from flax import nnx

            @dataclasses.dataclass
            class Config:
                width: int

            def run(rngs):
                config = Config(2)
                nnx.clone([config, config])
                drop = nnx.Dropout(0.1, rngs=rngs)
                nnx.iter_graph([drop, drop], graph=False)
                return nnx.compat.iter_graph([drop, drop])
            """,
        ),
    ]
    INVALID = [
        Invalid(
            "recursive-map-list",
            """
            from flax import nnx

            class Foo(nnx.Pytree):
                def __init__(self, d):
                    self.d = d

            def bump(path, node):
                if isinstance(node, Foo):
                    node.d += 1
                return node

            def run():
                foo1, foo2 = Foo(10), Foo(20)
                bar = [foo1, foo2, foo1]
                return nnx.recursive_map(bump, bar)  # NNX111
            """,
            tree_mode=differs("`bump` runs on `foo1` twice, and the result holds two copies of it"),
        ),
        Invalid(
            "stored-twice-then-walked",
            """
            from flax import nnx

            class Parent(nnx.Module):
                def __init__(self):
                    self.left = nnx.Dropout(0.5)
                    self.right = self.left

            def run():
                model = Parent()
                count = len(list(nnx.iter_modules(model)))  # NNX111
                copy = nnx.clone(model)  # NNX111
                graphdef, state = nnx.split(model)
                merged = nnx.merge(graphdef, state)  # NNX111
                return count, copy.left is copy.right, merged.left is merged.right
            """,
            tree_mode=differs("`iter_modules` yields the Dropout twice; the clone and the merge hold two Dropouts"),
        ),
    ]

    def visit_call(self, node: nodes.Call) -> None:
        call = self.context.nnx_call(node)
        if call is not None and call.name in flax_table.GRAPHDEF_MERGES and call.args and not call.via_partial:
            source = value_model(self.context).graphdef_source(call.args[0])
            if source is not None and self.context.flip_changes(source) and source.graph_node_argument is not None:
                self._check(node, source.graph_node_argument, f"nnx.{call.name}", call.name,
                            pin_sites_in(self.context, source), made_by=source.node)
            return
        entry = fact_index(self.context).running_entry(node)
        if entry is not None:
            if entry.affected:
                for argument in [*node.args, *(k.value for k in node.keywords or [])]:
                    if not isinstance(argument, nodes.Starred) and \
                            self._check(node, argument, f"nnx.{entry.transform}", "", ABSENT, made_by=entry.node):
                        break  # one finding per call
            return
        if call is not None:
            if call.name not in EFFECTS or call.via_partial or not self.context.flip_changes(call):
                return
            walked = call.graph_node_argument
            if walked is not None:
                self._check(node, walked, f"nnx.{call.name}", call.name, pin_sites_in(self.context, call))
            return
        if isinstance(node.func, nodes.Attribute) and node.func.attrname in flax_table.WALKING_METHODS and not node.args \
                and not self.context.mode.scope_keeps_graph_mode(node, transform=False):
            receiver = node.func.expr
            if self.classes.class_of_self(receiver) is not None:
                self._check(node, receiver, f".{node.func.attrname}()", node.func.attrname, ABSENT)

    def _check(self, node: nodes.Call, walked: nodes.NodeNG, api: str, name: str, pin,
               made_by: nodes.NodeNG | None = None) -> bool:
        """Report ``walked`` if it reaches a Variable-free node twice (``name``: the
        traversal, or "" for a transform); whether it did."""
        values = value_model(self.context)
        shared = values.shared_node_within(walked)
        if shared is None or values.shared_within(walked) is not None:
            return False  # nothing shared, or a shared Variable: Tree Mode raises there (NNX101-NNX103)
        related = [(shared.container, "the node is placed at its second path here")] \
            if shared.container is not None and shared.container is not node else []
        if made_by is not None:
            related.append((made_by, "the GraphDef is made here" if name else "the transform is applied here"))
        self.report(node, api=api, value=short_source(walked, 40), node_class=self._class_name(shared.ref),
                    first_path=shared.first_path, second_path=shared.second_path,
                    effect=EFFECTS[name] if name else TRANSFORM_EFFECT, pin=pin, related=related or None)
        return True

    def _class_name(self, ref: Ref) -> str:
        cls = self.classes.class_of(ref.root[1]) if ref.origin == "new" else None
        return cls.short_name if cls is not None else ref.describe()

    @classmethod
    def reproduce(cls, facts) -> Reproduction:
        """A Variable-free Module held twice by a `Box` (or a list, for `recursive_map`),
        given to the finding's traversal; the observation is how often the walk meets it
        and whether the result keeps one object. Control: the traversal applied to the node
        once, the result placed (or re-tied) at both places. `with_attributes` is
        reproduced with `nnx.view`, `unflatten` with `nnx.merge(*nnx.split(...))`
        (tree_runtime has neither `with_attributes` nor `flatten`/`unflatten`), and a
        transform with `nnx.jit` of a function returning its argument."""
        api = facts.api.removeprefix("nnx.").removeprefix(".").removesuffix("()")
        node = "class Node(nnx.Module):\n    def __init__(self):\n        self.d = 1\n\nnode = Node()"
        if api == "recursive_map":
            visit = ("count = [0]\n\ndef visit(path, x):\n    if isinstance(x, Node):\n        count[0] += 1\n"
                     "    return x")
            body = dedented(node, visit, "out = nnx.recursive_map(visit, [node, node])",
                         "return [count[0], out[0] is out[1]]")
            control = dedented(node, visit, "mapped = nnx.recursive_map(visit, node)", "out = [mapped, mapped]",
                            "return [count[0], out[0] is out[1]]")
            return Reproduction(body, expect_tree=[2, False], expect_graph=[1, True], control=control)
        if api in flax_table.MODULE_WALKS:
            def walk(box: str) -> str:
                return dedented(BOX, node, programs.assign("box", box),
                                programs.filled("return sum(isinstance(x, Node) for _, x in nnx.API(box))",
                                                {"API": api}))
            return Reproduction(walk("Box(a=node, b=node)"), expect_tree=2, expect_graph=1,
                                control=walk("Box(a=node)"))
        if api not in EFFECTS:  # a transform: the function returns what it was given
            body = dedented(BOX, node, "box = Box(a=node, b=node)", "out = nnx.jit(lambda b: b)(box)",
                         "return out.a is out.b")
            control = dedented(BOX, node, "box = Box(a=node)", "out = nnx.jit(lambda b: b)(box)", "out.b = out.a",
                            "return out.a is out.b")
            stand_ins = () if api == "jit" else ("`nnx.jit` stands for `nnx.%s`" % programs.identifier_or(api, "?"),)
            return Reproduction(body, expect_tree=False, expect_graph=True, control=control, stand_ins=stand_ins)
        call = {"map": "nnx.map(lambda path, v: v, box)", "clone": "nnx.clone(box)",
                "merge": "nnx.merge(*nnx.split(box))", "unflatten": "nnx.merge(*nnx.split(box))",
                }.get(api, "nnx.view(box)")
        body = dedented(BOX, node, "box = Box(a=node, b=node)", programs.assign("out", call), "return out.a is out.b")
        control = dedented(BOX, node, "box = Box(a=node)", programs.assign("out", call), "out.b = out.a",
                           "return out.a is out.b")
        stand_ins = {"with_attributes": ("`nnx.view` stands for `nnx.with_attributes`",),
                     "unflatten": ("`nnx.merge(*nnx.split(...))` stands for `nnx.unflatten(*nnx.flatten(...))`",),
                     }.get(api, ())
        return Reproduction(body, expect_tree=False, expect_graph=True, control=control, stand_ins=stand_ins)
