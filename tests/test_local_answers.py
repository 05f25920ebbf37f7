"""Value questions that rules and services used to answer each on their own now have one answer
in ``nnx_lint/analysis/`` (issue 43, "remove the rule-local answers"): each test asks that one
place and, where two callers used to disagree, shows both callers get the same answer."""
from __future__ import annotations

import textwrap

import astroid
from astroid import nodes

from nnx_lint.analysis.flow import bound_values, bound_values_of


def _module(source: str) -> nodes.Module:
    return astroid.parse(textwrap.dedent(source), module_name="m")


def _name_in(module: nodes.Module, name: str, line: int) -> nodes.Name:
    return next(n for n in module.nodes_of_class(nodes.Name) if n.name == name and n.lineno == line)


def test_bound_values_reads_every_plain_binding_form_through_one_reader():
    module = _module("""
        a = 1
        b: int = 2
        c, d = 3, 4
        if (e := 5):
            pass
        print(a, b, c, d, e)
        """)
    use = {name: _name_in(module, name, 7) for name in "abcde"}
    assert {name: [v.value for v in bound_values(n)] for name, n in use.items()} == \
        {"a": [1], "b": [2], "c": [3], "d": [4], "e": [5]}
    walrus = next(module.nodes_of_class(nodes.NamedExpr)).target
    assert [v.value for v in bound_values_of(walrus)] == [5]


#: A Module that holds an Rngs only as ``holder.keys.fork()``: the Rngs is reached through another
#: object's attribute, which the class model knows (``Holder.keys: nnx.Rngs``).
_FORKED_FROM_AN_ATTRIBUTE = """\
import jax.numpy as jnp
from flax import nnx


class Holder(nnx.Module):
    def __init__(self, keys: nnx.Rngs):
        self.keys = keys


class Net(nnx.Module):
    def __init__(self, holder: Holder):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        self.noise = holder.keys.fork()

    def __call__(self, x):
        return self.lin(x) + self.noise.uniform((x.shape[0], 2))


def loss(model, x):
    return model(x).sum()


def train(x):
    model = Net(Holder(nnx.Rngs(1)))
    return nnx.grad(loss)(model, x)  # NNX401


def summary():
    model = Net(Holder(nnx.Rngs(1)))
    return nnx.tabulate(model, jnp.ones((4, 2)))  # NNX711
"""


def _diagnostics(source: str) -> set[tuple[str, int]]:
    from nnx_lint.base.diagnostic import shown
    from nnx_lint.engine.registry import all_rules
    from nnx_lint.engine.walk import lint_bytes

    found = shown(lint_bytes(source.encode(), "model.py", all_rules()), strict=False)
    return {(d.code, d.line) for d in found}


def _marked(source: str) -> set[tuple[str, int]]:
    return {(line.rsplit("# ", 1)[1], number) for number, line in enumerate(source.splitlines(), 1)
            if "  # NNX" in line}


def test_one_rngs_answer_reaches_the_grad_rules_and_tabulate_alike():
    """"Is this an Rngs?" was answered twice: by the Variable model (for the grad rules) and by
    NNX711. The Variable model did not look at an attribute's class, so NNX711 saw the Rngs that
    ``holder.keys.fork()`` makes and NNX401 did not; both now ask ``ValueModel.is_rngs``."""
    assert _marked(_FORKED_FROM_AN_ATTRIBUTE) <= _diagnostics(_FORKED_FROM_AN_ATTRIBUTE)


def test_the_bridge_module_spellings_are_the_installed_flax_bridge_module():
    """NNX704 learns that a base is ``nnx.bridge.Module`` from the flax table (it looked the import
    up itself): every spelling the table lists is that one class, and a subclass is not a pytree."""
    import pytest

    pytest.importorskip("flax.nnx")
    from flax import nnx
    from flax.nnx import bridge

    from _support import resolve_dotted
    from nnx_lint.flax_table import table as flax_table

    assert {resolve_dotted(name) for name in flax_table.BRIDGE_MODULES} == {bridge.Module}
    assert resolve_dotted(flax_table.NNX_OBJECT) is not bridge.Module

    class Legacy(bridge.Module):
        def __call__(self, x):
            return x

    with pytest.raises(ValueError, match="pytree=False"):
        nnx.split(Legacy(), graph=False)


_NOT_PYTREES = """\
from flax.nnx.bridge.module import Module as Base
from flax.nnx import bridge
from flax import nnx


class A(Base):
    pass


class B(bridge.Module):
    pass


class C(nnx.Module, pytree=False):
    pass


class D(C):
    pass


class E(nnx.Object):
    pass


class F(E):
    pass


class Inner(nnx.Module):
    def __init__(self):
        self.legacy = C()


class Outer(nnx.Module):
    def __init__(self):
        self.inner = Inner()
"""


def test_one_answer_says_which_classes_are_not_pytrees_and_where(tmp_path):
    """NNX704 answered this itself (its own import lookup for the bridge Module, its own walk of
    the stores); the value model answers it now."""
    from _support import file_context
    from nnx_lint.analysis.values import value_model

    context = file_context(tmp_path, _NOT_PYTREES)
    values = value_model(context)
    refs = {c.name: context.classes.ref_of_definition(c) for c in context.module.nodes_of_class(nodes.ClassDef)}
    found = {name: values.not_pytree(ref, levels=0) for name, ref in refs.items()}
    assert found == {"A": ("A", "an nnx.bridge.Module subclass", None),
                     "B": ("B", "an nnx.bridge.Module subclass", None),
                     "C": ("C", "declared with pytree=False", None), "D": None,
                     "E": ("E", "an nnx.Object subclass", None), "F": ("F", "an nnx.Object subclass", None),
                     "Inner": None, "Outer": None}
    assert values.not_pytree(refs["Inner"]) == ("C", "declared with pytree=False", "legacy")
    assert values.not_pytree(refs["Outer"]) == ("C", "declared with pytree=False", "inner.legacy")
    assert values.not_pytree(refs["Outer"], levels=1) is None


def test_the_loops_that_take_a_new_carry_in_graph_mode_only_are_the_installed_flax_loops():
    """NNX308's loops come from the flax table (``NEW_CARRY_IN_GRAPH_MODE``): a body that returns a
    new Module runs in graph mode and raises in Tree Mode; the other carry loops raise in both."""
    import pytest

    pytest.importorskip("flax.nnx")
    import jax.numpy as jnp
    from flax import nnx

    from nnx_lint.flax_table import table as flax_table

    class Counter(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.zeros(()))

    def runs(loop: str, graph: bool) -> bool:
        fresh = lambda *carry: Counter()  # noqa: E731 - the body that returns a new carry
        with nnx.set_graph_mode(graph):
            try:
                if loop == "fori_loop":
                    nnx.fori_loop(0, 2, fresh, Counter())
                else:
                    nnx.while_loop(lambda m: m.w[...] < 1, fresh, Counter())
            except Exception:  # flax's error types differ between the loops and the modes
                return False
        return True

    loops = sorted(flax_table.CARRY_LOOPS)
    assert {loop for loop in loops if runs(loop, graph=True)} == set(flax_table.NEW_CARRY_IN_GRAPH_MODE)
    assert not any(runs(loop, graph=False) for loop in loops)


_MODULE_CLASSES = """\
from flax import nnx


class Plain:
    pass


class Leaf(nnx.Module):
    def __init__(self):
        self.scale = 2.0


class Tree(nnx.Module):
    def __init__(self, rngs):
        self.leaf = Leaf()
        self.lin = nnx.Linear(2, 2, rngs=rngs)


class Wide(nnx.Linear):
    pass


a, b, c, d = Plain(), Leaf(), Tree(nnx.Rngs(0)), Wide(2, 2, rngs=nnx.Rngs(0))
e, f = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)))
g = nnx.Rngs(0)
"""


def test_one_answer_says_which_classes_are_modules_and_may_hold_another(tmp_path):
    """NNX112 answered both itself; NNX308 asked its own form of the first."""
    from _support import file_context
    from nnx_lint.analysis.values import value_model

    context = file_context(tmp_path, _MODULE_CLASSES)
    values = value_model(context)
    refs = {}
    for assign in context.module.body[-3:]:
        targets = assign.targets[0].elts if isinstance(assign.targets[0], nodes.Tuple) else assign.targets
        values_ = assign.value.elts if isinstance(assign.value, nodes.Tuple) else [assign.value]
        refs.update({target.name: context.classes.class_of(value) for target, value in zip(targets, values_)})
    assert set(refs) == set("abcdefg") and all(refs.values())
    assert {name for name, ref in refs.items() if values.is_module_class(ref)} == set("bcdef")
    assert {name for name in "bcef" if values.may_hold_a_module(refs[name])} == {"c", "f"}
    assert not values.is_module_class(None)


def test_variable_value_attributes_are_the_installed_variables_value():
    """The graph-update rules' ``{"value", "raw_value"}`` is the flax table's
    ``VARIABLE_VALUE_ATTRIBUTES``: writing either sets the Variable's value in place."""
    import pytest

    pytest.importorskip("flax.nnx")
    import jax.numpy as jnp
    from flax import nnx

    from nnx_lint.flax_table import table as flax_table

    import warnings

    for attribute in sorted(flax_table.VARIABLE_VALUE_ATTRIBUTES):
        variable = nnx.Param(jnp.zeros(2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # flax 0.12.8 deprecates both
            setattr(variable, attribute, jnp.ones(2))
            assert float(getattr(variable, attribute).sum()) == 2.0, attribute
        assert float(variable[...].sum()) == 2.0, attribute
