"""``nnx-lint gate``: run the project's own tests in graph mode and in Tree Mode.

The gate answers what static analysis cannot: which tests break when flax flips NNX to
Tree Mode, where, why, and whether ``nnx-lint check`` predicted it. Unlike ``check``, it
EXECUTES the project's code (its tests) by design: run it only where you would run the tests.

Modules: ``modes`` (the environment of each mode), ``pytest_plugin`` (per-test outcomes
and modes from inside the test process), ``channel`` (the signed pipe they arrive on),
``results`` (reading them: plugin records or junit XML), ``trust`` (whether a run's records
can be believed), ``runner`` (one test-command run: time budget, process group, progress), ``classify``
(the two full runs, the isolated re-runs, the verdicts), ``attribution`` (joining breaks
with static findings), ``baseline``, ``report`` and ``command`` (the CLI).
"""
from __future__ import annotations
