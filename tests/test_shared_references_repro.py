"""NNX1xx reproduction builders: variants chosen from facts beyond the rules' INVALID cases.

Each facts dict is what a rule could report (other transforms and graph APIs, nested
paths, parts, state views, keyword positions, Rngs streams, carries); every reproduction
must be confirmed by both Tree Mode oracles, run in graph mode as the builder says, and
its control (the Tree Mode rewrite) must run cleanly and not be confirmed.
"""
from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")

from checkers.shared_references.nnx101_aliased_module_attribute import AliasedAttribute  # noqa: E402
from checkers.shared_references.nnx102_repeated_container_element import RepeatedContainerElement  # noqa: E402
from checkers.shared_references.nnx103_duplicate_transform_argument import DuplicateTransformArgument  # noqa: E402
from checkers.shared_references.nnx104_transform_returns_input import TransformReturnsInput  # noqa: E402
from checkers.shared_references.nnx105_shared_rngs import SharedRngs  # noqa: E402
from checkers.shared_references.nnx106_transform_builds_from_input import TransformBuildsFromInput  # noqa: E402
from checkers.shared_references.nnx107_argument_holds_argument import ArgumentHoldsArgument  # noqa: E402
from checkers.shared_references.nnx108_tied_model_in_loop import TiedModelInLoop  # noqa: E402
from nnx_lint.confirmation.oracle import judge, run_programs  # noqa: E402
from _support import partial_facts  # noqa: E402

VARIANTS = [
    (AliasedAttribute, {"class_name": "M", "first_path": "z", "second_path": "a.b", "kind": "Module",
                        "first_part": "", "second_part": "", "used_with": "Optimizer"}),
    (AliasedAttribute, {"class_name": "M", "first_path": "lin", "second_path": "w", "kind": "Module",
                        "first_part": "", "second_part": "kernel", "used_with": "clone"}),
    (AliasedAttribute, {"class_name": "M", "first_path": "x", "second_path": "y", "kind": "Module",
                        "used_with": "cond"}),
    (AliasedAttribute, {"class_name": "M", "first_path": "x", "second_path": "y", "kind": "Variable",
                        "used_with": "grad"}),
    (RepeatedContainerElement, {"class_name": "S", "first_path": "mlp.layers[0]", "second_path": "mlp.layers[3]",
                                "kind": "Module", "container_type": "Sequential"}),
    (SharedRngs, {"class_name": "M", "first_path": "rngs", "second_path": "blocks[0].stream", "kind": "Rngs",
                  "first_part": "", "second_part": "dropout", "used_with": "state"}),
    (DuplicateTransformArgument, {"transform": "eval_shape", "first_position": "args[0]",
                                  "second_position": "args[1]", "kinds": ["Module", "Module"]}),
    (DuplicateTransformArgument, {"transform": "cond", "first_position": "operands[0]",
                                  "second_position": "operands[1]", "kinds": ["Module", "Module"],
                                  "second_view": "split"}),
    (DuplicateTransformArgument, {"transform": "jit", "first_position": "args[0]",
                                  "second_position": "kwargs['other']", "kinds": ["Rngs", "Rngs"]}),
    (DuplicateTransformArgument, {"transform": "value_and_grad", "first_position": "args[1]",
                                  "second_position": "args[2]", "kinds": ["Module", "Module"],
                                  "second_part": "encoder"}),
    (DuplicateTransformArgument, {"transform": "shard_map", "first_position": "args[0].v",
                                  "second_position": "args[2].v", "kinds": ["Variable", "Variable"],
                                  "sharing": "held"}),
    (TransformReturnsInput, {"transform": "vmap", "position": 1, "kind": "Module", "part": "encoder", "view": None}),
    (TransformReturnsInput, {"transform": "cond", "position": 0, "kind": "State", "part": "", "view": "split"}),
    (TransformReturnsInput, {"transform": "grad", "position": 0, "kind": "Variable", "part": "kernel",
                             "view": None, "has_aux": True}),
    (TransformBuildsFromInput, {"transform": "eval_shape", "function": "<lambda>", "form": "direct",
                                "class_name": "Net", "position": 1, "stored_path": "child.rngs", "kind": "Rngs"}),
    (TransformBuildsFromInput, {"transform": "jit", "function": "Net", "form": "applied", "class_name": "Net",
                                "position": 0, "stored_path": "base", "kind": "Module"}),
    (ArgumentHoldsArgument, {"transform": "vmap", "holder_class": "TrainState", "holder_position": "args[0]",
                             "held_position": "args[1]", "held_path": "params.model", "kind": "Module"}),
    (ArgumentHoldsArgument, {"transform": "grad", "holder_class": "ModelAndOptimizer", "holder_position": "args[1]",
                             "held_position": "args[0]", "held_path": "model", "kind": "Module"}),
    (TiedModelInLoop, {"transform": "while_loop", "class_name": "T", "first_path": "z.w", "second_path": "a",
                       "kind": "Variable", "first_part": "", "second_part": ""}),
    (TiedModelInLoop, {"transform": "fori_loop", "class_name": "T", "first_path": "layers[0]",
                       "second_path": "layers[1]", "kind": "Module", "first_part": "", "second_part": ""}),
    (TiedModelInLoop, {"transform": "while_loop", "class_name": "T", "first_path": "rngs",
                       "second_path": "sampler.stream", "kind": "Rngs", "first_part": "", "second_part": "dropout"}),
    (TiedModelInLoop, {"transform": "fori_loop", "class_name": "T", "first_path": "lin", "second_path": "w",
                       "kind": "Module", "first_part": "", "second_part": "kernel"}),
    (TiedModelInLoop, {"transform": "fori_loop", "class_name": None, "first_path": "init_val[0]",
                       "second_path": "init_val[2]", "kind": "Module", "first_part": "", "second_part": "enc"}),
]
REPRODUCTIONS = [rule.reproduce(partial_facts(rule, **facts)) for rule, facts in VARIANTS]
IDS = [f"{rule.code}-{i}" for i, (rule, _facts) in enumerate(VARIANTS)]
MAIN = [r.program() for r in REPRODUCTIONS]
CONTROLS = [r.program(r.control) for r in REPRODUCTIONS]


@pytest.fixture(scope="module", params=["tree_runtime", "flax", "flax-graph"])
def outcomes(request):
    found = run_programs(MAIN + CONTROLS, request.param)
    return request.param, found[: len(MAIN)], found[len(MAIN):]


@pytest.mark.parametrize("index", range(len(VARIANTS)), ids=IDS)
def test_variant(outcomes, index):
    oracle, main, controls = outcomes
    reproduction = REPRODUCTIONS[index]
    verdict = judge(reproduction, main[index])
    # a program with stand-ins (nnx.jit for shard_map, or for a use the file does not show)
    # confirms the pattern only, and says so
    confirmed = "pattern-confirmed" if reproduction.stand_ins else "confirmed"
    expected = "not-confirmed" if oracle == "flax-graph" else confirmed
    assert verdict[0] == expected, f"{oracle}: {verdict[1]}\n{MAIN[index]}"
    assert controls[index]["status"] == "ok", f"{oracle}: control failed: {controls[index]}\n{CONTROLS[index]}"
    assert judge(reproduction, controls[index])[0] == "not-confirmed"
