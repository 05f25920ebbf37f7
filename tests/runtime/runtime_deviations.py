"""Differential-suite glue: documented deviations on top of
``tree_runtime.differential`` (which holds run_program / run_on_flax /
run_on_runtime / assert_same, the API the confirmer reuses)."""

from __future__ import annotations

import typing as tp

from tree_runtime.differential import assert_same, run_on_flax, run_on_runtime, run_program  # noqa: F401


def agrees(prog: tp.Any, traced: bool = False) -> tuple[bool, tp.Any, tp.Any]:
    """(outcomes agree?, runtime outcome, flax outcome) for one program."""
    ours, theirs = run_on_runtime(prog.fn, traced=traced), run_on_flax(prog.fn, traced=traced)
    if prog.deviation is not None:
        expected_flax = prog.deviation.flax
        flax_ok = theirs[0] == "ok" if expected_flax == "ok" else theirs == expected_flax
        return ours == prog.deviation.runtime and flax_ok, ours, theirs
    try:
        assert ours[0] == theirs[0], f"{ours} vs {theirs}"
        assert_same(ours[1], theirs[1])
        return True, ours, theirs
    except AssertionError:
        return False, ours, theirs
