"""Splitting the gate across CI jobs: ``--shard K/N`` and ``nnx-lint gate merge``.

A test belongs to shard ``K`` of ``N`` when the SHA-256 of its pytest node id, read as a number,
is ``K - 1`` modulo ``N``: the assignment depends on the id alone, not on the collection order,
so every job computes the same split without talking to the others, and adding a test moves no
other test. A module that cannot be collected is assigned by its path (its pseudo-test's id).
Each shard runs both modes of its own tests (the plugin deselects the others at collection) and
re-runs its own Tree-Mode-only failures alone. ``nnx-lint gate merge`` joins the shards' JSON
reports into one verdict and exit status, and refuses reports of different ``N``, or missing or
duplicated shards.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

#: The option the gate adds to a sharded full run; the pytest plugin deselects the other shards' tests.
PYTEST_OPTION = "--nnx-lint-gate-shard"


class ShardError(ValueError):
    """A ``--shard`` value or a set of shard reports that cannot be used."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``."""
    index, separator, count = text.partition("/")
    if not separator or not index.strip().isdigit() or not count.strip().isdigit():
        raise ShardError(f"--shard must be K/N (e.g. 1/4), not {text!r}")
    k, n = int(index), int(count)
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"--shard {text}: K must be between 1 and N")
    return k, n


def shard_of(nodeid: str, count: int) -> int:
    """The shard (1-based) of a test id among ``count`` shards."""
    return int.from_bytes(hashlib.sha256(nodeid.encode("utf-8")).digest()[:8], "big") % count + 1


def in_shard(nodeid: str, shard: tuple[int, int] | None) -> bool:
    """True when ``nodeid`` belongs to ``shard`` (always, without sharding)."""
    return shard is None or shard_of(nodeid, shard[1]) == shard[0]


def _load(path: Path) -> dict[str, Any]:
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ShardError(f"{path}: not a gate JSON report: {exc}") from None
    if not isinstance(report, dict) or report.get("tool") != "nnx-lint gate":
        raise ShardError(f"{path}: not a gate JSON report (nnx-lint gate --output-format json)")
    shard = report.get("shard")
    if not (isinstance(shard, dict) and isinstance(shard.get("index"), int) and isinstance(shard.get("count"), int)):
        raise ShardError(f"{path}: not the report of a shard (run the gate with --shard K/N)")
    return report


def merge_reports(paths: list[Path]) -> dict[str, Any]:
    """One report for all shards: the verdict lists and counts joined, each problem named by its shard.

    Raises :class:`ShardError` for reports of different ``N``, a shard missing or given twice.
    """
    reports = [(path, _load(path)) for path in paths]
    counts = {report["shard"]["count"] for _path, report in reports}
    if len(counts) != 1:
        raise ShardError("the reports come from different numbers of shards: " + ", ".join(
            f"{path} is {report['shard']['index']}/{report['shard']['count']}" for path, report in reports))
    count = counts.pop()
    seen: dict[int, Path] = {}
    for path, report in reports:
        index = report["shard"]["index"]
        if index in seen:
            raise ShardError(f"shard {index}/{count} is given twice: {seen[index]} and {path}")
        seen[index] = path
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise ShardError(f"shard(s) {', '.join(f'{k}/{count}' for k in missing)} missing: a verdict needs all {count}")
    reports.sort(key=lambda item: item[1]["shard"]["index"])
    first = reports[0][1]
    merged: dict[str, Any] = {key: first[key] for key in ("tool", "version", "project", "modes")}
    merged["shard"] = {"index": None, "count": count, "merged": [str(path) for path, _report in reports]}
    merged["runs"] = {f"{name} (shard {report['shard']['index']}/{count})": run
                      for _path, report in reports for name, run in report["runs"].items()}
    summary: dict[str, Any] = {}
    for _path, report in reports:
        for key, value in report["summary"].items():
            if isinstance(value, bool):
                summary[key] = summary.get(key, False) or value
            elif isinstance(value, (int, float)):
                summary[key] = summary.get(key, 0) + value
            elif key not in summary:
                summary[key] = value
    summary["elapsed"] = max(report["summary"]["elapsed"] for _path, report in reports)  # the jobs run in parallel
    merged["summary"] = summary
    for key in ("tree_breaks", "not_isolated", "order_dependent", "fails_in_both_modes", "graph_only",
                "findings_in_passing_tests"):
        merged[key] = sorted((item for _path, report in reports for item in report.get(key, [])),
                             key=lambda item: item.get("nodeid") or (item.get("path"), item.get("line")))
    baselines = [report["baseline"] for _path, report in reports if report.get("baseline")]
    merged["baseline"] = None if not baselines else {
        "file": baselines[0]["file"],
        # Fixed in the merged run: no shard still breaks it (each shard sees only its own tests).
        "fixed": sorted(set.intersection(*(set(baseline["fixed"]) for baseline in baselines)))}
    merged["problems"] = [f"shard {report['shard']['index']}/{count}: {problem}"
                          for _path, report in reports for problem in report["problems"]]
    untested = [f"shard {report['shard']['index']}/{count}: {report['untested']}"
                for _path, report in reports if report.get("untested")]
    merged["untested"] = "; ".join(untested) if len(untested) == len(reports) else None
    merged["problems"] += [] if merged["untested"] else [f"{item} (nothing was tested there)" for item in untested]
    merged["notes"] = list(dict.fromkeys(note for _path, report in reports for note in report["notes"]))
    statuses = [report["exit_status"] for _path, report in reports]
    merged["exit_status"] = 2 if 2 in statuses or merged["untested"] or untested else max(statuses)
    return merged
