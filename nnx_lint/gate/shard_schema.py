"""The shape and bounds of a gate shard report, as ``nnx-lint gate merge`` accepts it.

A shard report is the artifact of a CI job that ran the pull request's tests: anyone who
controls that job controls the file. :func:`validated_shard` reads one at most
:data:`REPORT_LIMIT` bytes long and refuses it (:class:`ShardError`, naming the field) unless

- every top-level key is a known one and has its type (a bool is never taken for a number);
- every number is within its bounds (counts, line numbers, exit and return codes, times),
  every list and string within its length;
- each verdict sits in its own section (``"verdict"`` matches), and each test id belongs to
  the shard that reports it (``shard_of(nodeid, N) == K``): a shard cannot speak for the
  tests of another;
- its summary counts are those of its lists, and its ``exit_status`` is the one its own
  content gives (2 with problems or nothing tested, else 1 with a break not in the baseline,
  else 0): a shard cannot claim a status its findings contradict.

Nested data the merge only copies into its JSON output (the attribution's matches, the
flax configuration of a run) is checked as bounded JSON data. The merge then computes the
verdict from the shards' breaks and problems, never from a claimed status
(:func:`nnx_lint.gate.shard.merge_reports`).
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from nnx_lint.gate.run_identity import RUN_ID_LIMIT, is_commit


class ShardError(ValueError):
    """A ``--shard`` value or a set of shard reports that cannot be used."""


#: Largest shard report read (bytes), deepest nesting, longest list and string, largest count.
REPORT_LIMIT = 64 * 1024 * 1024
DEPTH_LIMIT = 32
ITEMS_LIMIT = 100_000
TEXT_LIMIT = 256 * 1024
NAME_LIMIT = 256
COUNT_LIMIT = 10_000_000
SHARDS_LIMIT = 1024
SECONDS_LIMIT = 10_000_000.0

#: The sections of verdicts and the verdict each holds.
SECTION_KINDS = {"tree_breaks": "tree-break", "not_isolated": "not-isolated", "order_dependent": "order-dependent",
                 "fails_in_both_modes": "both", "graph_only": "graph-only"}
BREAKING_SECTIONS = ("tree_breaks", "not_isolated")
_COUNTS = ("tests", "tree_breaks", "not_isolated", "new_breaks", "order_dependent", "fails_in_both_modes",
           "graph_only", "explained", "explained_in_dependencies", "unproven", "unexplained", "reruns",
           "warm_reruns", "reruns_skipped")
_KEYS = {"tool", "version", "project", "run", "modes", "shard", "runs", "summary", *SECTION_KINDS,
         "findings_in_passing_tests", "baseline", "problems", "notes", "untested", "exit_status"}


def read_report(path: Path) -> Any:
    """The JSON of a report file: a regular file of at most :data:`REPORT_LIMIT` bytes."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ShardError(f"{path}: cannot read it: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ShardError(f"{path}: not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(REPORT_LIMIT + 1)
    finally:
        os.close(descriptor)
    if len(data) > REPORT_LIMIT:
        raise ShardError(f"{path}: over {REPORT_LIMIT // (1024 * 1024)} MiB: not a gate shard report")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ShardError(f"{path}: not a gate JSON report: {type(exc).__name__}") from None


class _Checker:
    """Checks one report; every refusal names the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> ShardError:
        return ShardError(f"{self.path}: {where}: {what}")

    def dict(self, value: Any, where: str, required: set[str], optional: set[str] = frozenset()) -> dict:
        if not isinstance(value, dict):
            raise self.fail(where, "not an object")
        missing, unknown = required - value.keys(), value.keys() - required - optional
        if missing:
            raise self.fail(where, f"missing {', '.join(sorted(missing))}")
        if unknown:
            raise self.fail(where, f"unknown key(s) {', '.join(sorted(repr(k)[:40] for k in unknown)[:5])}")
        return value

    def int(self, value: Any, where: str, low: int = 0, high: int = COUNT_LIMIT, none: bool = False) -> None:
        if value is None and none:
            return
        if type(value) is not int or not low <= value <= high:
            raise self.fail(where, f"not an integer from {low} to {high}")

    def seconds(self, value: Any, where: str) -> None:
        if type(value) not in (int, float) or not math.isfinite(value) or not 0 <= value <= SECONDS_LIMIT:
            raise self.fail(where, f"not a duration from 0 to {SECONDS_LIMIT:.0f} s")

    def bool(self, value: Any, where: str) -> None:
        if type(value) is not bool:
            raise self.fail(where, "not true or false")

    def text(self, value: Any, where: str, limit: int = TEXT_LIMIT, none: bool = False) -> None:
        if value is None and none:
            return
        if not isinstance(value, str) or len(value) > limit:
            raise self.fail(where, f"not a string of at most {limit} characters")

    def texts(self, value: Any, where: str, limit: int = TEXT_LIMIT) -> None:
        self.list(value, where)
        for index, item in enumerate(value):
            self.text(item, f"{where}[{index}]", limit)

    def list(self, value: Any, where: str) -> list:
        if not isinstance(value, list) or len(value) > ITEMS_LIMIT:
            raise self.fail(where, f"not a list of at most {ITEMS_LIMIT} items")
        return value

    def data(self, value: Any, where: str, depth: int = 0) -> None:
        """Plain JSON data the merge only copies: bounded in depth, lengths and numbers."""
        if depth > DEPTH_LIMIT:
            raise self.fail(where, f"nested deeper than {DEPTH_LIMIT}")
        if isinstance(value, dict):
            if len(value) > ITEMS_LIMIT:
                raise self.fail(where, "too many keys")
            for key, item in value.items():
                self.text(key, where, NAME_LIMIT)
                self.data(item, f"{where}.{key[:40]}", depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(self.list(value, where)):
                self.data(item, f"{where}[{index}]", depth + 1)
        elif isinstance(value, str):
            self.text(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise self.fail(where, "not a finite number")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
            raise self.fail(where, "a number out of bounds")


def validated_shard(path: Path, report: Any) -> dict[str, Any]:
    """``report`` if it is a well-formed, bounded, self-consistent shard report (see the module docstring)."""
    check = _Checker(path)
    if not isinstance(report, dict) or report.get("tool") != "nnx-lint gate":
        raise ShardError(f"{path}: not a gate JSON report (nnx-lint gate --output-format json)")
    if report.get("shard") is None:
        raise ShardError(f"{path}: not the report of a shard (run the gate with --shard K/N)")
    if report.get("version") != 2:
        raise ShardError(f"{path}: report version {str(report.get('version'))[:20]}, not 2: written by another "
                         "nnx-lint (version 1 reports carry no run identity); run every shard with this one")
    check.dict(report, "the report", _KEYS)
    check.text(report["project"], "project", 4096)
    run = check.dict(report["run"], "run", {"id", "commit"})
    check.text(run["id"], "run.id", RUN_ID_LIMIT)
    if run["commit"] is not None and not is_commit(run["commit"]):
        raise check.fail("run.commit", "not a full commit hash or null")
    for mode, variables in check.dict(report["modes"], "modes", {"graph", "tree"}).items():
        check.data(variables, f"modes.{mode}")
    shard = check.dict(report["shard"], "shard", {"index", "count"})
    check.int(shard["count"], "shard.count", 1, SHARDS_LIMIT)
    check.int(shard["index"], "shard.index", 1, shard["count"])
    runs = report["runs"]
    if not isinstance(runs, dict) or len(runs) > 16:
        raise check.fail("runs", "not an object of at most 16 runs")
    for name, record in runs.items():
        _check_run(check, name, record)
    summary = check.dict(report["summary"], "summary", {*_COUNTS, "static_findings", "interrupted", "elapsed"})
    for key in _COUNTS:
        check.int(summary[key], f"summary.{key}")
    check.int(summary["static_findings"], "summary.static_findings", none=True)
    check.bool(summary["interrupted"], "summary.interrupted")
    check.seconds(summary["elapsed"], "summary.elapsed")
    for section, kind in SECTION_KINDS.items():
        for index, item in enumerate(check.list(report[section], section)):
            _check_verdict(check, f"{section}[{index}]", item, section, kind, (shard["index"], shard["count"]))
        if summary[section] != len(report[section]):
            raise check.fail(f"summary.{section}", f"says {summary[section]}, the list holds {len(report[section])}")
    for index, item in enumerate(check.list(report["findings_in_passing_tests"], "findings_in_passing_tests")):
        where = f"findings_in_passing_tests[{index}]"
        check.dict(item, where, {"code", "kind", "path", "line", "message", "tests"})
        check.text(item["code"], f"{where}.code", NAME_LIMIT)
        check.text(item["kind"], f"{where}.kind", NAME_LIMIT)
        check.text(item["path"], f"{where}.path", 4096)
        check.int(item["line"], f"{where}.line", 0, 10**9)
        check.text(item["message"], f"{where}.message")
        check.texts(item["tests"], f"{where}.tests", 4096)
    if report["baseline"] is not None:
        baseline = check.dict(report["baseline"], "baseline", {"file", "fixed"})
        check.text(baseline["file"], "baseline.file", 4096)
        check.texts(baseline["fixed"], "baseline.fixed", 4096)
    check.texts(report["problems"], "problems")
    check.texts(report["notes"], "notes")
    check.text(report["untested"], "untested", none=True)
    check.int(report["exit_status"], "exit_status", 0, 2)
    new_breaks = sum(1 for section in BREAKING_SECTIONS for item in report[section] if not item["in_baseline"])
    if summary["new_breaks"] != new_breaks:
        raise check.fail("summary.new_breaks", f"says {summary['new_breaks']}, the lists hold {new_breaks}")
    if report["exit_status"] != own_verdict(report):
        raise check.fail("exit_status", f"claims {report['exit_status']}, its own content gives {own_verdict(report)}")
    return report


def own_verdict(report: dict[str, Any]) -> int:
    """The exit status a (validated) report's content gives: 2 with problems or nothing tested,
    else 1 with a break not in the baseline, else 0 (``nnx_lint.gate.command.exit_status``)."""
    if report["problems"] or report["untested"]:
        return 2
    breaking = any(not item["in_baseline"] for section in BREAKING_SECTIONS for item in report[section])
    return 1 if breaking else 0


def _check_run(check: _Checker, name: Any, record: Any) -> None:
    check.text(name, "runs", NAME_LIMIT)
    where = f"runs.{name[:40]}"
    check.dict(record, where, {"status", "returncode", "elapsed", "tests", "failing", "collect_errors",
                               "flax_version", "flax_config", "command", "output_tail"})
    check.text(record["status"], f"{where}.status", NAME_LIMIT)
    check.int(record["returncode"], f"{where}.returncode", -255, 255, none=True)
    check.seconds(record["elapsed"], f"{where}.elapsed")
    check.int(record["tests"], f"{where}.tests")
    check.int(record["failing"], f"{where}.failing", 0, record["tests"])
    check.texts(record["collect_errors"], f"{where}.collect_errors", 4096)
    check.text(record["flax_version"], f"{where}.flax_version", NAME_LIMIT, none=True)
    check.data(record["flax_config"], f"{where}.flax_config")
    check.texts(record["command"], f"{where}.command", 4096)
    check.text(record["output_tail"], f"{where}.output_tail")


def shard_of(nodeid: str, count: int) -> int:
    """The shard (1-based) of a test id among ``count`` shards (a report's verdicts must be its own)."""
    return int.from_bytes(hashlib.sha256(nodeid.encode("utf-8")).digest()[:8], "big") % count + 1


def _check_verdict(check: _Checker, where: str, item: Any, section: str, kind: str, shard: tuple[int, int]) -> None:
    breaking = section in BREAKING_SECTIONS
    check.dict(item, where, {"nodeid", "verdict", "note", "full_graph", "full_tree", "alone_tree", "alone_graph",
                             *(("in_baseline",) if breaking else ())}, {"attribution"})
    check.text(item["nodeid"], f"{where}.nodeid", 4096)
    if item["verdict"] != kind:
        raise check.fail(f"{where}.verdict", f"not {kind!r}, the verdict of its section")
    if shard_of(item["nodeid"], shard[1]) != shard[0]:
        raise check.fail(f"{where}.nodeid", f"a test of shard {shard_of(item['nodeid'], shard[1])}/{shard[1]}, "
                                            f"not of this shard {shard[0]}/{shard[1]}")
    check.text(item["note"], f"{where}.note")
    if breaking:
        check.bool(item["in_baseline"], f"{where}.in_baseline")
    for key in ("full_graph", "full_tree", "alone_tree", "alone_graph"):
        result = item[key]
        if result is None:
            continue
        check.dict(result, f"{where}.{key}", {"outcome", "duration", "exception"})
        check.text(result["outcome"], f"{where}.{key}.outcome", NAME_LIMIT)
        check.seconds(result["duration"], f"{where}.{key}.duration")
        if result["exception"] is not None:
            exception = check.dict(result["exception"], f"{where}.{key}.exception", {"type", "message", "category"})
            check.text(exception["type"], f"{where}.{key}.exception.type", 4096)
            check.text(exception["message"], f"{where}.{key}.exception.message")
            check.text(exception["category"], f"{where}.{key}.exception.category", NAME_LIMIT, none=True)
    if "attribution" in item:
        attribution = check.dict(item["attribution"], f"{where}.attribution",
                                 {"deepest_frame", "exception", "explained", "summary", "matches"})
        frame = attribution["deepest_frame"]
        if frame is not None:
            check.dict(frame, f"{where}.attribution.deepest_frame", {"file", "line", "function"})
            check.text(frame["file"], f"{where}.attribution.deepest_frame.file", 4096)
            check.int(frame["line"], f"{where}.attribution.deepest_frame.line", 0, 10**9)
            check.text(frame["function"], f"{where}.attribution.deepest_frame.function", 4096)
        check.bool(attribution["explained"], f"{where}.attribution.explained")
        check.text(attribution["summary"], f"{where}.attribution.summary")
        check.data(attribution["exception"], f"{where}.attribution.exception")
        check.data(attribution["matches"], f"{where}.attribution.matches")
