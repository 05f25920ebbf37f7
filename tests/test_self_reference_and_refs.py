"""Cycles (NNX109) and raw mutable array refs (jax.new_ref) stored twice: analysis facts,
reproduction fidelity, tree_runtime's checks and the confirmation worker's recovery."""
from __future__ import annotations

import textwrap

import pytest

from nnx_lint.engine.walk import lint_bytes
from nnx_lint.engine.registry import rule_by_code


def _lint(source: str, *codes: str):
    rules = [rule_by_code(code) for code in codes]
    return lint_bytes(textwrap.dedent(source).encode(), "case.py", rules)


CHILD_KEEPS_PARENT = """
    import jax.numpy as jnp
    from flax import nnx

    class Child(nnx.Module):
        def __init__(self, owner):
            self.owner = owner

    class Counter(nnx.Module):
        def __init__(self):
            self.total = jnp.zeros(())
            self.child = Child(self)

    nnx.jit(lambda m: None)(Counter())
"""


def test_child_keeping_its_parent_names_both_stores_and_carries_the_facts():
    (diagnostic,) = _lint(CHILD_KEEPS_PARENT, "NNX109")
    assert diagnostic.line == 12
    facts = diagnostic.facts
    assert (facts["class_name"], facts["path"], facts["target"], facts["via_class"]) == (
        "Counter", "child.owner", "", "Child")
    assert facts["holds_variables"] is False and facts["used_with"] == "jit"
    assert [(r.line, r.message) for r in diagnostic.related] == [
        (7, "`self.owner` keeps the owner here, in `Child`")]


def test_the_reproduction_carries_the_users_class_path_and_variables():
    """Confirmation fidelity: a Variable-free class is reproduced Variable-free, under its name."""
    (diagnostic,) = _lint(CHILD_KEEPS_PARENT, "NNX109")
    rule = rule_by_code("NNX109")
    reproduction = rule.reproduce(rule.facts_from(diagnostic.facts))
    assert "class Counter(nnx.Module)" in reproduction.body
    assert "self.child = Box()" in reproduction.body and "self.child.owner = self" in reproduction.body
    assert "nnx.Param" not in reproduction.body and "jnp.ones(2)" in reproduction.body
    assert "self.child.owner = self" not in reproduction.control
    with_params = CHILD_KEEPS_PARENT.replace("jnp.zeros(())", "nnx.Param(jnp.zeros(()))")
    (diagnostic,) = _lint(with_params, "NNX109")
    assert "nnx.Param(jnp.ones(2))" in rule.reproduce(rule.facts_from(diagnostic.facts)).body


def test_a_cycle_is_not_reported_as_an_alias():
    source = """
        from flax import nnx

        class Block(nnx.Module):
            def __init__(self, parent, rngs):
                self.parent = parent
                self.lin = nnx.Linear(2, 2, rngs=rngs)

        class Tower(nnx.Module):
            def __init__(self, rngs):
                self.blocks = nnx.List([Block(self, rngs) for _ in range(2)])
                self.me = self
                self.also = self

        nnx.split(Tower(nnx.Rngs(0)))
    """
    found = _lint(source, "NNX101", "NNX102", "NNX109")
    assert sorted((d.code, d.line) for d in found) == [("NNX109", 11), ("NNX109", 12), ("NNX109", 13)]


def test_a_raw_ref_stored_twice_is_reproduced_with_a_raw_ref():
    source = """
        import jax
        import jax.numpy as jnp
        from flax import nnx

        class Counter(nnx.Module):
            def __init__(self):
                self.count = jax.new_ref(jnp.zeros(()))
                self.alias = self.count
    """
    (diagnostic,) = _lint(source, "NNX101")
    assert diagnostic.facts["kind"] == "mutable array ref"
    rule = rule_by_code("NNX101")
    reproduction = rule.reproduce(rule.facts_from(diagnostic.facts))
    assert "jax.new_ref(" in reproduction.body and "nnx.Linear" not in reproduction.body


def test_a_ref_used_once_or_copied_is_silent():
    source = """
        import jax
        import jax.numpy as jnp
        from flax import nnx

        class Counter(nnx.Module):
            def __init__(self):
                self.count = jax.new_ref(jnp.zeros(()))
                self.copy = jax.new_ref(self.count[...])
                self.plain = jnp.zeros(())
                self.other = self.plain

        nnx.jit(lambda m: None)(Counter())
    """
    assert _lint(source, "NNX101", "NNX102", "NNX103") == []


# -- tree_runtime and the worker ---------------------------------------------------------------

jax = pytest.importorskip("jax")


def test_recursion_errors_and_cycle_reports_are_the_cycle_category():
    from tree_runtime import error_category

    assert error_category(RecursionError("maximum recursion depth exceeded")) == "cycle"
    assert error_category(ValueError("Cycle detected for Parent\nfound at paths")) == "cycle"
    assert error_category(ValueError(
        "only one reference to a mutable array may be passed as an argument to a function")) == "aliasing"


def test_tree_runtime_reports_cycles_and_duplicate_refs():
    import jax.numpy as jnp

    import tree_runtime as nnx

    class Loop(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.sub = self

    with pytest.raises(nnx.CycleError, match=r"\.args\[0\]\.sub"):
        nnx.jit(lambda m: None)(Loop())

    class Twice(nnx.Module):
        def __init__(self):
            self.a = jax.new_ref(jnp.ones(2))
            self.b = self.a

    with pytest.raises(nnx.AliasingError):
        nnx.split(Twice())

    class Once(nnx.Module):
        def __init__(self):
            self.a = jax.new_ref(jnp.ones(2))

    graphdef, state = nnx.split(Once())
    assert len(jax.tree.leaves(state)) == 1


_LOOP = """
import jax
import jax.numpy as jnp

def run(nnx):
    class Loop(nnx.Module):
        def __init__(self):
            self.w = jnp.ones(2)
            self.sub = self
    nnx.jit(lambda m: None)(Loop())
    return 'ran'
"""
_FINE = """
import jax
import jax.numpy as jnp

def run(nnx):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda m: None)(model)
    return 'ran'
"""


@pytest.mark.parametrize("oracle", ["tree_runtime", "flax"])
@pytest.mark.slow
def test_a_recursion_error_does_not_break_the_programs_after_it(oracle):
    """flax flattens a cycle until RecursionError, and JAX's C++ flattening then keeps the
    recursion depth it used: the worker retires after it, so later programs still run."""
    pytest.importorskip("flax")
    from nnx_lint.confirmation.oracle import run_programs

    outcomes = run_programs([_LOOP, _FINE, _LOOP, _FINE], oracle)
    assert [(o["status"], o.get("category")) for o in outcomes] == [
        ("raises", "cycle"), ("ok", None), ("raises", "cycle"), ("ok", None)]
    assert all("retire" not in o for o in outcomes)
