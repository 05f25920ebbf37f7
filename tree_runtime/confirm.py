"""The confirmation worker: run reproduction programs under Tree Mode, report what happened.

nnx-lint starts it isolated (see :mod:`nnx_lint.sandbox`) and talks to it one JSON value
per line. On stdin: first ``{"oracle": "tree_runtime" | "flax" | "flax-graph"}``, then one
program text per line; on stdout: first ``{"ready": true}`` (or ``{"ready": false,
"message": ...}`` when the oracle cannot be imported), then one outcome per program, in
order. Each program text (see :class:`nnx_lint.rule.Reproduction`) defines ``run(nnx)``
and ``TRACED``. Each outcome is ``{"status": "ok", "observation": ...}``,
``{"status": "raises", "category": ..., "message": ...}`` (the category from
:func:`tree_runtime.error_category`), or ``{"status": "error", "message": ...}`` when the
program itself could not be built. An outcome with ``"retire": true`` is the worker's last
(a ``RecursionError`` left the process unusable): nnx-lint starts a fresh worker for the
rest. Answering one program at a time lets nnx-lint give
each its own timeout while one process (and one JAX import) serves the whole batch.
The user's code is never imported, only these generated programs are executed.
"""
from __future__ import annotations

import json
import os
import sys
import traceback
import typing as tp

import jax
import numpy as np

from ._errors import error_category


def _jsonable(value: tp.Any) -> tp.Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, jax.ShapeDtypeStruct):
        return ["array", list(value.shape), str(value.dtype)]
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        try:
            return np.asarray(value).tolist()
        except Exception:  # a tracer: only its abstract value is known
            return ["array", list(value.shape), str(value.dtype)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _oracle(name: str) -> tuple[tp.Any, tp.Callable[[], tp.ContextManager]]:
    """The ``nnx`` namespace and the mode context of an oracle.

    ``flax-graph`` (flax in graph mode) is not an oracle for users: the tests use it to
    check that each reproduction really behaves as its builder says graph mode does.
    """
    import contextlib

    if name in ("flax", "flax-graph"):
        from flax import nnx

        graph = name == "flax-graph"

        def mode():
            stack = contextlib.ExitStack()
            stack.enter_context(nnx.set_graph_mode(graph))
            stack.enter_context(nnx.set_graph_updates(graph))
            return stack

        return nnx, mode
    import tree_runtime

    return tree_runtime, contextlib.nullcontext


def run_one(text: str, nnx: tp.Any, tree_mode: tp.Callable[[], tp.ContextManager]) -> dict:
    """Execute one program text and describe its outcome."""
    namespace: dict[str, tp.Any] = {"__name__": "nnx_lint_reproduction"}
    try:
        exec(compile(text, "<reproduction>", "exec"), namespace)  # the generated program, never user code
        run = namespace["run"]
        traced = bool(namespace.get("TRACED", True))
    except Exception as exc:
        return {"status": "error", "message": "the reproduction does not build: %r" % (exc,)}
    box: dict[str, tp.Any] = {}
    try:
        with tree_mode():
            if traced:
                def body():
                    box["observation"] = run(nnx)
                    return 0

                jax.make_jaxpr(body)()
            else:
                box["observation"] = run(nnx)
    except Exception as exc:
        message = (str(exc).strip().splitlines() or [""])[0][:300]
        outcome = {"status": "raises", "category": error_category(exc), "type": type(exc).__name__, "message": message}
        if isinstance(exc, RecursionError):
            # JAX's C++ pytree flattening does not give back the recursion depth it used when
            # a RecursionError passes through it (measured with jax 0.10.2: ~990 of 1000 frames
            # stay taken), so every later program in this process would fail too. The worker
            # answers, then retires; the sandbox starts a fresh one for the rest.
            outcome["retire"] = True
        return outcome
    observation = _jsonable(box.get("observation"))
    try:
        json.dumps(observation)
    except (TypeError, ValueError):  # one odd value must not break the whole batch
        observation = repr(observation)
    return {"status": "ok", "observation": observation}


def _protocol_channels() -> tuple[tp.BinaryIO, tp.BinaryIO]:
    """Private copies of stdin and stdout for the protocol.

    fd 0 then reads from the null device and fd 1 goes to stderr, so a program that reads
    input or prints cannot consume requests or corrupt answers (``os.dup`` copies are not
    inherited by anything a program starts).
    """
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - lives as long as the worker
    sys.stdout = sys.stderr
    return requests, answers


def main() -> int:
    requests, answers = _protocol_channels()

    def answer(message: tp.Any) -> None:
        answers.write(json.dumps(message).encode("utf-8") + b"\n")
        answers.flush()

    request = json.loads(requests.readline() or b"{}")
    try:
        nnx, tree_mode = _oracle(request.get("oracle", "tree_runtime"))
    except ImportError as exc:
        answer({"ready": False, "message": "oracle unavailable: %s" % exc})
        return 0
    answer({"ready": True})
    for line in requests:
        try:
            outcome = run_one(json.loads(line), nnx, tree_mode)
            json.dumps(outcome)
        except BaseException as exc:  # keep the batch alive: one broken program is one error
            outcome = {"status": "error", "message": "".join(traceback.format_exception_only(exc)).strip()}
        answer(outcome)
        if outcome.get("retire"):
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
