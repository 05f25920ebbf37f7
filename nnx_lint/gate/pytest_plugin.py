"""The pytest plugin of ``nnx-lint gate``: per-test outcomes as JSON lines.

Loaded by the gate with ``-p nnx_lint.gate.pytest_plugin``; it does nothing unless the
environment variable ``NNX_LINT_GATE_REPORT`` names the file to append to. It only uses
the standard library and pytest, so it costs the test process nothing at import.

One JSON object per line, each with an ``event``:

- ``session``: the interpreter and the installed flax version (``null`` when flax is missing);
- ``collected``: how many tests were collected (the progress total);
- ``collect_error``: a module (or other collector) that could not be collected;
- ``report``: one phase (``setup``/``call``/``teardown``) of one test: outcome, duration,
  and for a failure the exception: type, message, stable category, traceback frames;
- ``finished``: pytest's exit status and the flax configuration the tests actually ran with.

Under pytest-xdist the exception is captured in the worker (where the exception object
lives) and travels to the controller in ``report.user_properties``; only the controller
writes the file.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import traceback
from typing import Any

import pytest

#: The environment variable naming the report file.
REPORT_ENV = "NNX_LINT_GATE_REPORT"
#: The key under which a failure's details travel in ``report.user_properties``.
_PROPERTY = "nnx_lint_gate_exception"
#: Bounds on what one failure may add to the report.
_MAX_MESSAGE = 4000
_MAX_FRAMES = 200

_category_function: Any = None
#: False in an xdist worker: the controller writes the worker's reports.
_writer = True


def _report_path() -> str | None:
    return os.environ.get(REPORT_ENV) or None


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _write(record: dict[str, Any]) -> None:
    path = _report_path()
    if path is None:
        return
    # One write per line, flushed at once: the gate reads the file while the run goes on
    # (progress), and a crash of the run leaves every line written so far intact.
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(record, default=str) + "\n")


def _flax_version() -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("flax")
    except PackageNotFoundError:
        return None


def _error_category(exc: BaseException) -> str | None:
    """``tree_runtime``'s ``error_category`` of ``exc``, or None when it cannot be loaded.

    The category needs the exception object (its class hierarchy), so it is computed here,
    in the test process. ``tree_runtime/_errors.py`` is loaded by file, without running the
    package ``__init__`` (which imports jax): it needs only ``re``.
    """
    global _category_function
    if _category_function is None:
        _category_function = False
        try:
            spec = importlib.util.find_spec("tree_runtime")
            locations = list(spec.submodule_search_locations or []) if spec else []
            if locations:
                errors_spec = importlib.util.spec_from_file_location(
                    "_nnx_lint_gate_tree_runtime_errors", os.path.join(locations[0], "_errors.py"))
                if errors_spec is not None and errors_spec.loader is not None:
                    module = importlib.util.module_from_spec(errors_spec)
                    errors_spec.loader.exec_module(module)
                    _category_function = module.error_category
        except Exception:  # noqa: BLE001 - no category is better than a broken test run
            _category_function = False
    if not _category_function:
        return None
    try:
        return _category_function(exc)
    except Exception:  # noqa: BLE001
        return None


def describe_exception(exc: BaseException, tb: Any) -> dict[str, Any]:
    """The JSON-able description of a failure: type, message, category and frames."""
    frames = [{"file": os.path.abspath(frame.filename), "line": frame.lineno, "function": frame.name}
              for frame in traceback.extract_tb(tb)]
    if len(frames) > _MAX_FRAMES:  # keep both ends: the test's frame and the deepest ones
        frames = frames[:_MAX_FRAMES // 2] + frames[-_MAX_FRAMES // 2:]
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the report
        message = f"<unprintable {type(exc).__name__}>"
    return {
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "type_names": [cls.__name__ for cls in type(exc).__mro__],
        "message": message[:_MAX_MESSAGE],
        "category": _error_category(exc),
        "frames": frames,
    }


def pytest_configure(config: pytest.Config) -> None:
    global _writer
    _writer = not _is_xdist_worker(config)
    if _report_path() is None or not _writer:
        return
    _write({"event": "session", "time": time.time(), "python": sys.executable,
            "pid": os.getpid(), "flax": _flax_version(),
            "rootdir": str(config.rootpath), "args": list(config.invocation_params.args)})


def pytest_collection_finish(session: pytest.Session) -> None:
    if _report_path() is None or _is_xdist_worker(session.config):
        return
    _write({"event": "collected", "count": len(session.items)})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist the controller learns the total from the workers (each collects it all)."""
    if _report_path() is None:
        return
    _write({"event": "collected", "count": len(ids), "worker": str(getattr(node, "gateway", node))})


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if _report_path() is None or not _writer or not report.failed:
        return
    _write({"event": "collect_error", "nodeid": report.nodeid or ".",
            "message": str(report.longreprtext)[-_MAX_MESSAGE:]})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    if _report_path() is None:
        return
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is None or report.skipped or not report.failed:
        return
    try:
        details = describe_exception(excinfo.value, excinfo.tb)
    except Exception as exc:  # noqa: BLE001
        details = {"type": type(excinfo.value).__name__, "type_names": [], "message": f"(gate: {exc})",
                   "category": None, "frames": []}
    report.user_properties.append((_PROPERTY, json.dumps(details, default=str)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _report_path() is None or not _writer:
        return
    exception = None
    for name, value in report.user_properties:
        if name == _PROPERTY:
            exception = json.loads(value)
    record: dict[str, Any] = {
        "event": "report", "nodeid": report.nodeid, "phase": report.when, "outcome": report.outcome,
        "duration": round(report.duration, 4), "location": list(report.location),
    }
    if hasattr(report, "wasxfail"):
        record["wasxfail"] = True
    if exception is not None:
        record["exception"] = exception
    elif report.failed:
        record["message"] = str(report.longreprtext)[-_MAX_MESSAGE:]
    _write(record)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _report_path() is None or _is_xdist_worker(config):
        return
    flax_config = None
    flax = sys.modules.get("flax")
    if flax is not None:  # read only if the tests imported flax: never import it here
        try:
            flax_config = {"nnx_graph_mode": bool(flax.config.nnx_graph_mode),
                           "nnx_graph_updates": bool(flax.config.nnx_graph_updates)}
        except Exception:  # noqa: BLE001 - an older flax without these options
            flax_config = None
    _write({"event": "finished", "exitstatus": int(getattr(config, "_nnx_lint_gate_status", -1)),
            "flax_config": flax_config})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._nnx_lint_gate_status = int(exitstatus)  # type: ignore[attr-defined]
