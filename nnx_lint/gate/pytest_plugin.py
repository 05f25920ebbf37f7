"""The pytest plugin of ``nnx-lint gate``: per-test outcomes, and the mode each test ran in.

Loaded by the gate with ``-p nnx_lint.gate.pytest_plugin``. It sends its records over the
channel the gate hands it (``nnx_lint.gate.channel``: an inherited pipe, each record signed
with a per-run key); outside the gate, ``NNX_LINT_GATE_REPORT=<file>`` makes it append the same
records to a file instead (for measurement scripts; unsigned). With neither it does nothing.
It only uses the standard library and pytest, so it costs the test process nothing at import.

The channel is opened when this module is imported, i.e. when pytest processes ``-p``, before
it imports any ``conftest.py`` of the project: the key is gone from the pipe before project
code runs.

One JSON object per record, each with an ``event``:

- ``session``: the interpreter and the installed flax version (``null`` when flax is missing);
- ``collected``: how many tests were collected (the progress total);
- ``collect_error``: a module (or other collector) that could not be collected;
- ``report``: one phase (``setup``/``call``/``teardown``) of one test: outcome, duration,
  for a failure the exception (type, message, stable category, traceback frames), and
  ``modes``: the flax mode seen at the start and end of the phase (see :func:`observed_mode`);
- ``finished``: pytest's exit status, the flax configuration the tests actually ran with, and
  the source files of the modules the run loaded (``bytecode``: the gate's bytecode cache).

Under pytest-xdist the exception and the modes are captured in the worker (where the test
runs) and travel to the controller in ``report.user_properties``; only the controller writes.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

import pytest

from nnx_lint.gate.channel import REPORT_ENV, open_writer_from_environment
from nnx_lint.gate.results import load_error_category
from nnx_lint.gate.shard import PYTEST_OPTION as SHARD_OPTION
from nnx_lint.gate.shard import in_shard, parse_shard

#: The key under which a failure's details travel in ``report.user_properties``.
_PROPERTY = "nnx_lint_gate_exception"
#: The key under which a phase's observed modes travel in ``report.user_properties``.
_MODES_PROPERTY = "nnx_lint_gate_modes"
#: Bounds on what one failure may add to the report.
_MAX_MESSAGE = 4000
_MAX_FRAMES = 200
#: Bound on the module files the ``finished`` record lists.
_MAX_MODULES = 50_000

_category_function: Any = None
#: False in an xdist worker: the controller writes the worker's reports.
_writer = True
#: Opened at import, before any project code can read the key (see the module docstring).
_channel = open_writer_from_environment()


def _report_path() -> str | None:
    return os.environ.get(REPORT_ENV) or None


def _active() -> bool:
    """True when the records go somewhere: the gate's channel or a report file."""
    return _channel is not None or _report_path() is not None


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _write(record: dict[str, Any]) -> None:
    if _channel is not None:
        _channel.send(record)
        return
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
    in the test process.
    """
    global _category_function
    if _category_function is None:
        _category_function = load_error_category() or False
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


def observed_mode() -> list[bool] | None:
    """The flax mode in force right now, as ``[config graph_mode, config graph_updates,
    current graph_mode, current graph_updates]``; None when flax is not imported.

    The first two are ``flax.config``; the last two what ``nnx.set_graph_mode`` /
    ``nnx.set_graph_updates`` make current (a context entered by a fixture, or the stack
    entry a bare ``nnx.set_graph_mode(True)`` call leaves behind), which the transforms
    read. Read from ``sys.modules`` only: the plugin never imports flax.
    """
    flax = sys.modules.get("flax")
    if flax is None:
        return None
    try:
        config = [bool(flax.config.nnx_graph_mode), bool(flax.config.nnx_graph_updates)]
    except Exception:  # noqa: BLE001 - an older flax without these options: it has no Tree Mode
        return None
    current = list(config)
    graphlib = sys.modules.get("flax.nnx.graphlib")
    for index, name in enumerate(("set_graph_mode", "set_graph_updates")):
        context = getattr(graphlib, name, None) if graphlib is not None else None
        try:
            if context is not None:
                current[index] = bool(context.current_value())
        except Exception:  # noqa: BLE001 - an unexpected flax: config alone then
            pass
    return config + current


def _observe(item: pytest.Item, phase: str) -> None:
    """Note the mode now, for ``phase`` of ``item`` (distinct observations only)."""
    seen = item.__dict__.setdefault("_nnx_lint_gate_modes", {}).setdefault(phase, [])
    mode = observed_mode()
    if mode not in seen:
        seen.append(mode)


# The checkpoints: the start of each phase (trylast: inside every other wrapper, so a conftest
# wrapper that switches the mode around the phase is seen), the start and end of the test
# function itself (inside pytest's own runtest), and the end of each phase (makereport).
@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    _observe(item, "setup")
    yield


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    _observe(item, "call")
    yield


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Any:
    _observe(pyfuncitem, "call")
    yield
    _observe(pyfuncitem, "call")


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    _observe(item, "teardown")
    yield


def pytest_configure(config: pytest.Config) -> None:
    global _writer
    _writer = not _is_xdist_worker(config)
    if not _active() or not _writer:
        return
    _write({"event": "session", "time": time.time(), "python": sys.executable,
            "pid": os.getpid(), "flax": _flax_version(),
            "rootdir": str(config.rootpath), "args": list(config.invocation_params.args)})


def pytest_collection_finish(session: pytest.Session) -> None:
    if not _active() or _is_xdist_worker(session.config):
        return
    _write({"event": "collected", "count": len(session.items)})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under xdist the controller learns the total from the workers (each collects it all)."""
    if not _active():
        return
    _write({"event": "collected", "count": len(ids), "worker": str(getattr(node, "gateway", node))})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(SHARD_OPTION, dest="nnx_lint_gate_shard", default=None, metavar="K/N",
                     help="nnx-lint gate: run only the tests of shard K of N (by a hash of the node id)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``nnx-lint gate --shard K/N``, deselect the tests of the other shards."""
    value = config.getoption("nnx_lint_gate_shard", None)
    if not value:
        return
    shard = parse_shard(value)
    kept = [item for item in items if in_shard(item.nodeid, shard)]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if not in_shard(item.nodeid, shard)])
        items[:] = kept


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if not _active() or not _writer or not report.failed:
        return
    _write({"event": "collect_error", "nodeid": report.nodeid or ".",
            "message": str(report.longreprtext)[-_MAX_MESSAGE:]})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    # In an xdist worker the environment says nothing (the channel is the controller's):
    # describe every phase there, the controller decides whether to write.
    if not (_active() or _is_xdist_worker(item.config)):
        return
    report = outcome.get_result()
    _observe(item, call.when)
    modes = item.__dict__.get("_nnx_lint_gate_modes", {}).pop(call.when, [])
    report.user_properties.append((_MODES_PROPERTY, json.dumps(modes)))
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
    if not _active() or not _writer:
        return
    exception = None
    modes = None
    for name, value in report.user_properties:
        if name == _PROPERTY:
            exception = json.loads(value)
        elif name == _MODES_PROPERTY:
            modes = json.loads(value)
    record: dict[str, Any] = {
        "event": "report", "nodeid": report.nodeid, "phase": report.when, "outcome": report.outcome,
        "duration": round(report.duration, 4), "location": list(report.location),
    }
    if modes is not None:
        record["modes"] = modes
    if hasattr(report, "wasxfail"):
        record["wasxfail"] = True
    if exception is not None:
        record["exception"] = exception
    elif report.failed:
        record["message"] = str(report.longreprtext)[-_MAX_MESSAGE:]
    _write(record)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _active() or _is_xdist_worker(config):
        return
    mode = observed_mode()
    flax_config = None if mode is None else {"nnx_graph_mode": mode[0], "nnx_graph_updates": mode[1]}
    session = getattr(config, "_nnx_lint_gate_session", None)
    # session.exitstatus, read last: what pytest returns (a later sessionfinish hook may change it).
    status = int(getattr(session, "exitstatus", -1)) if session is not None else -1
    _write({"event": "finished", "exitstatus": status, "flax_config": flax_config, "modes": [mode],
            "bytecode": _loaded_modules(), "startup_modules": _startup_modules})


#: What pytest's start imported (name, file), before any conftest; see ``pytest_load_initial_conftests``.
_startup_modules: list[list[str]] = []


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Note the modules pytest's start has imported by now (the plugins pytest auto-loads and what
    they import), before the project's first ``conftest.py``: the gate's warm servers import the
    same ones once instead of every re-run importing them (``nnx_lint.gate.warm``). Modules
    pytest rewrote (the plugins' own, marked for assertion rewriting) are left out: imported
    outside pytest they would not be rewritten."""
    from _pytest.assertion.rewrite import AssertionRewritingHook

    _startup_modules[:] = [[name, str(getattr(module, "__file__", None) or "")]
                           for name, module in list(sys.modules.items())[:_MAX_MODULES]
                           if not isinstance(getattr(module, "__loader__", None), AssertionRewritingHook)]


def _loaded_modules() -> dict[str, Any]:
    """The source files of the modules this run loaded, and the interpreter's bytecode tag: the
    gate links their installed bytecode into its private cache for the later runs
    (``nnx_lint.gate.bytecode``)."""
    files = [module.__file__ for module in list(sys.modules.values())
             if isinstance(getattr(module, "__file__", None), str) and module.__file__.endswith(".py")]
    return {"tag": sys.implementation.cache_tag, "modules": files[:_MAX_MODULES]}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config._nnx_lint_gate_session = session  # type: ignore[attr-defined]
