"""What the value model makes of `nnx.merge`, and what NNX104 / NNX110 report about returned references.

Every Tree Mode claim here was run with flax 0.12.8 in both modes (the fixtures
`NNX104_merge_holds_the_state_input.py` and `NNX110_returned_mutable_array_refs.py` carry the runs).
"""
from __future__ import annotations

import textwrap

from nnx_lint.engine.walk import lint_bytes
from nnx_lint.engine.registry import rule_by_code


def _lint(source: str, *codes: str):
    rules = [rule_by_code(code) for code in codes]
    return lint_bytes(textwrap.dedent(source).encode(), "case.py", rules)


MERGED_AND_ITS_PARAMS = """
    from flax import nnx

    model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    merged = nnx.merge(graphdef, params, rest{copy})
    nnx.jit(lambda a, b: None)(merged, params)
"""


def test_a_merge_of_one_objects_groups_is_that_object():
    """Tree Mode: `Duplicate Param` (the merge holds `params`' own Variables); graph mode runs."""
    (diagnostic,) = _lint(MERGED_AND_ITS_PARAMS.format(copy=""), "NNX103")
    assert diagnostic.code == "NNX103"


def test_a_merge_with_copy_true_is_a_new_object():
    assert _lint(MERGED_AND_ITS_PARAMS.format(copy=", copy=True"), "NNX103") == []


SPLIT_OF_MERGED = """
    from flax import nnx

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)

    @nnx.jit(static_argnames=("graphdef",))
    def step(graphdef, state):
        m = nnx.merge(graphdef, state)
        _, new_state = nnx.split(m)
        return new_state

    step(graphdef, {argument})
"""


def test_the_state_parameters_kind_comes_from_the_split_group_its_caller_passes():
    (diagnostic,) = _lint(SPLIT_OF_MERGED.format(argument="state"), "NNX104")
    facts = diagnostic.facts
    assert (facts["parameter"], facts["kind"], facts["evidence"], facts["confidence"]) == (
        "state", "State", "call-site", "static")
    assert facts["view"] == "split"


def test_a_pure_dict_state_is_not_the_inputs_variables():
    """`nnx.to_pure_dict(state)` holds arrays: the merged module's Variables are new (runs in both modes)."""
    assert _lint(SPLIT_OF_MERGED.format(argument="nnx.to_pure_dict(state)"), "NNX104") == []


def test_returned_refs_say_where_they_come_from_and_reproduce_accordingly():
    source = """
        import jax
        import jax.numpy as jnp
        from flax import nnx

        model = nnx.Linear(1, 1, rngs=nnx.Rngs(0))

        @nnx.jit
        def f(r: jax.Ref, m):
            fresh = jax.new_ref(jnp.ones(2))
            built = nnx.with_vars(nnx.Linear(1, 1, rngs=nnx.Rngs(1)), ref=True)
            return r, fresh, built

        f(jax.new_ref(jnp.ones(2)), model)
    """
    diagnostics = _lint(source, "NNX110")
    origins = [(d.facts["returned"], d.facts["origin"], d.facts["parameter"]) for d in diagnostics]
    assert origins == [("r", "input", "r"), ("fresh", "new ref", None), ("built", "ref variables", None)]
    rule = rule_by_code("NNX110")
    input_repro = rule.reproduce(rule.facts_from(diagnostics[0].facts))
    made_repro = rule.reproduce(rule.facts_from(diagnostics[1].facts))
    assert input_repro.expect_error == made_repro.expect_error == "mutable-array-output"
    assert "nnx.jit(lambda r: r)(r)" in input_repro.body
    assert "nnx.Linear" in made_repro.body  # graph mode returns a new ref only next to an NNX input


def test_a_new_ref_without_an_nnx_input_is_silent():
    """Both modes raise there (graph mode too: no NNX input to carry the ref back)."""
    source = """
        import jax
        from flax import nnx

        make = nnx.jit(lambda x: jax.new_ref(x))
    """
    assert _lint(source, "NNX110") == []
