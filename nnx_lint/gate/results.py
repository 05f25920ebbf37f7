"""Per-test results of one run, read from the plugin's JSON lines or from junit XML."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable, Sequence

#: Outcomes that count as "the test broke".
FAILING = frozenset({"failed", "error"})


@dataclass(frozen=True)
class Frame:
    """One traceback frame: absolute file, 1-based line, function name."""

    file: str
    line: int
    function: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


@dataclass
class Failure:
    """The exception that failed a test: type, message, stable category, frames."""

    type: str
    message: str
    category: str | None = None
    frames: list[Frame] = field(default_factory=list)
    phase: str = "call"

    @property
    def short_type(self) -> str:
        return self.type.rpartition(".")[2]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "category": self.category, "phase": self.phase,
                "frames": [frame.to_dict() for frame in self.frames]}


@dataclass
class TestResult:
    """One test's overall outcome in one run.

    ``outcome`` is ``passed``, ``failed`` (the test body), ``error`` (setup/teardown or a
    collection error), ``skipped``, ``xfailed`` or ``xpassed``.
    """

    __test__ = False  # not a pytest test class, whatever its name

    nodeid: str
    outcome: str = "passed"
    duration: float = 0.0
    failure: Failure | None = None

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING


@dataclass
class RunResults:
    """Everything one run of the test command told us."""

    tests: dict[str, TestResult] = field(default_factory=dict)
    collect_errors: dict[str, str] = field(default_factory=dict)
    collected: int | None = None
    #: The run reached its end (the plugin's ``finished`` line, or a readable junit file).
    finished: bool = False
    flax_version: str | None = None
    saw_session: bool = False
    #: pytest's rootdir: node ids are relative to it.
    rootdir: str | None = None
    #: ``flax.config.nnx_graph_mode`` / ``nnx_graph_updates`` as the tests saw them (None: flax not imported).
    flax_config: dict[str, bool] | None = None
    pytest_status: int | None = None
    #: Where the mode was observed, as ``(node id, phase, observation)`` (see
    #: ``pytest_plugin.observed_mode``); the ``finished`` record's end-of-run observation has
    #: the node id ``""`` and the phase ``"end"``.
    modes_seen: list[tuple[str, str, Any]] = field(default_factory=list)
    #: The source files of the modules the run loaded and the interpreter's bytecode tag (the
    #: ``finished`` record's ``bytecode``), for the gate's bytecode cache.
    loaded_modules: list[str] = field(default_factory=list)
    cache_tag: str | None = None
    #: ``(name, file)`` of the modules pytest's start imported before any conftest (the ``finished``
    #: record's ``startup_modules``), for the warm servers.
    startup_modules: list[tuple[str, str]] = field(default_factory=list)
    #: What makes the records untrustworthy (a forged or reordered record on the channel).
    channel_problems: list[str] = field(default_factory=list)

    def failing_count(self) -> int:
        """Failed or errored tests, and modules that could not be collected."""
        return sum(1 for test in self.tests.values() if test.failing) + len(self.collect_errors)


def _apply_phase(result: TestResult, record: dict[str, Any]) -> None:
    phase, outcome = record.get("phase", "call"), record.get("outcome", "passed")
    result.duration += float(record.get("duration") or 0.0)
    if result.failing:
        return  # the first failing phase decides (a teardown after a failed call adds nothing)
    if outcome == "failed":
        result.outcome = "failed" if phase == "call" else "error"
        if record.get("wasxfail"):
            result.outcome = "xpassed"  # a strict xfail that passed
            return
        exception = record.get("exception")
        if exception:
            result.failure = Failure(
                type=str(exception.get("type", "Exception")), message=str(exception.get("message", "")),
                category=exception.get("category"), phase=phase,
                frames=[Frame(str(f["file"]), int(f["line"]), str(f["function"])) for f in exception.get("frames", [])],
            )
        else:
            result.failure = Failure(type="Failure", message=str(record.get("message", ""))[-2000:], phase=phase)
    elif outcome == "skipped":
        if result.outcome == "passed":
            result.outcome = "xfailed" if record.get("wasxfail") else "skipped"
    elif outcome == "passed" and record.get("wasxfail") and phase == "call":
        result.outcome = "xpassed"


def read_plugin_report(path: Path) -> RunResults:
    """Parse a report file of JSON lines; a missing file or a torn last line is tolerated."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return RunResults()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a crash or a kill
    return results_from_records(records)


def results_from_records(records: Iterable[Any]) -> RunResults:
    """The results the plugin's records describe, in the order they were written."""
    results = RunResults()
    for record in records:
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "session":
            results.saw_session = True
            results.flax_version = record.get("flax")
            results.rootdir = record.get("rootdir")
        elif event == "collected":
            results.collected = max(results.collected or 0, int(record.get("count") or 0))
        elif event == "collect_error":
            results.collect_errors[str(record.get("nodeid"))] = str(record.get("message", ""))
        elif event == "report":
            nodeid = str(record.get("nodeid"))
            test = results.tests.setdefault(nodeid, TestResult(nodeid))
            _apply_phase(test, record)
            for mode in record.get("modes") or ():
                results.modes_seen.append((nodeid, str(record.get("phase")), mode))
        elif event == "finished":
            results.finished = True
            results.flax_config = record.get("flax_config")
            results.pytest_status = record.get("exitstatus")
            startup = record.get("startup_modules")
            if isinstance(startup, list):
                results.startup_modules = [(entry[0], entry[1]) for entry in startup if isinstance(entry, list)
                                           and len(entry) == 2 and all(isinstance(part, str) for part in entry)]
            bytecode = record.get("bytecode")
            if isinstance(bytecode, dict) and isinstance(bytecode.get("tag"), str):
                results.cache_tag = bytecode["tag"]
                modules = bytecode.get("modules")
                results.loaded_modules = [name for name in modules if isinstance(name, str)] if isinstance(
                    modules, list) else []
            for mode in record.get("modes") or ():
                results.modes_seen.append(("", "end", mode))
    return results


def load_runtime_errors() -> ModuleType | None:
    """``tree_runtime/_errors.py`` (the error categories), loaded by file.

    Importing it as ``tree_runtime._errors`` would run the package ``__init__``, which imports
    jax; the module itself needs only ``re``. It is nnx-lint's own copy, installed beside
    ``nnx_lint`` (never a ``tree_runtime`` found first on ``sys.path``), loaded under a private
    name. None when it cannot be loaded. (An edge import-linter cannot see:
    ``tests/test_layers.py`` runs the gate's categorisation with jax unimportable.)
    """
    try:
        errors_file = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                   "tree_runtime", "_errors.py")
        errors_spec = importlib.util.spec_from_file_location("_nnx_lint_gate_tree_runtime_errors", errors_file)
        if errors_spec is None or errors_spec.loader is None:
            return None
        module = importlib.util.module_from_spec(errors_spec)
        errors_spec.loader.exec_module(module)
        return module
    except Exception:  # noqa: BLE001 - no category is better than a broken test run
        return None


def load_error_category() -> Callable[[BaseException], str] | None:
    """``tree_runtime``'s ``error_category`` (of an exception object), or None (see :func:`load_runtime_errors`)."""
    module = load_runtime_errors()
    return module.error_category if module is not None else None


# "File "x.py", line 3, in f" (Python) and "x.py:3: ValueError" (pytest's short style).
_PYTHON_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')
_PYTEST_FRAME = re.compile(r"^(?P<file>[^\s:][^:]*\.py):(?P<line>\d+): ", re.MULTILINE)


def frames_from_text(text: str, base: Path) -> list[Frame]:
    """Frames recovered from a traceback printed as text (junit's failure body)."""
    frames: list[Frame] = []
    for match in _PYTHON_FRAME.finditer(text):
        frames.append(Frame(str((base / match["file"]).resolve()), int(match["line"]), match["function"]))
    if not frames:
        for match in _PYTEST_FRAME.finditer(text):
            frames.append(Frame(str((base / match["file"]).resolve()), int(match["line"]), "?"))
    return frames


_RUNTIME_ERRORS: list[ModuleType | None] = []


def _gate_error_category() -> Callable[[Sequence[str], str], str] | None:
    """The gate's copy of ``tree_runtime``'s textual ``category_from_text``, loaded once (see
    ``preload`` in ``command``)."""
    if not _RUNTIME_ERRORS:
        _RUNTIME_ERRORS.append(load_runtime_errors())
    module = _RUNTIME_ERRORS[0]
    return module.category_from_text if module is not None else None


def category_from_text(type_name: str, message: str) -> str | None:
    """The error category from a type NAME and message only (junit: the object is gone).

    Textual, as ``tree_runtime`` categorises a report: the class's short name and the
    message; categories that depend on a flax subclass' hierarchy are lost.
    """
    categorise = _gate_error_category()
    if categorise is None:
        return None
    short = type_name.rpartition(".")[2] or "Exception"
    if not short.isidentifier():
        return None
    return categorise([short], message)


def read_junit(path: Path, base: Path) -> RunResults:
    """Parse a junit XML file (pytest's ``--junitxml`` or any tool writing the same shape)."""
    results = RunResults()
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return results
    results.finished = True
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        file = case.get("file")
        nodeid = f"{file}::{name}" if file else (f"{classname}::{name}" if classname else name)
        test = TestResult(nodeid, duration=float(case.get("time") or 0.0))
        for child in case:
            tag = child.tag
            if tag in ("failure", "error"):
                text = (child.text or "") + "\n" + (child.get("message") or "")
                type_name = child.get("type") or "Failure"
                message = child.get("message") or ""
                test.outcome = "failed" if tag == "failure" else "error"
                test.failure = Failure(type=type_name, message=message, frames=frames_from_text(text, base),
                                       category=category_from_text(type_name, message))
                break
            if tag == "skipped":
                test.outcome = "xfailed" if (child.get("type") or "").endswith("xfail") else "skipped"
        results.tests[nodeid] = test
    results.collected = len(results.tests)
    return results
