"""Splitting the gate across CI jobs: ``--shard K/N`` and ``nnx-lint gate merge``.

A test belongs to shard ``K`` of ``N`` when the SHA-256 of its pytest node id, read as a number,
is ``K - 1`` modulo ``N``: the assignment depends on the id alone, not on the collection order,
so every job computes the same split without talking to the others, and adding a test moves no
other test. A module that cannot be collected is assigned by its path (its pseudo-test's id).
Each shard runs both modes of its own tests (the plugin deselects the others at collection) and
re-runs its own Tree-Mode-only failures alone. ``nnx-lint gate merge`` joins the shards' JSON
reports into one verdict and exit status. It refuses a report that is malformed, out of bounds or
inconsistent with itself (:mod:`nnx_lint.gate.shard_schema`), reports of different ``N``, of
another project, commit or run (:mod:`nnx_lint.gate.run_identity`), and missing or duplicated
shards. The merged exit status is computed from the shards' breaks and problems, never copied
from a status a shard claims.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from nnx_lint.gate.shard_schema import (  # noqa: F401 (shard_of: the shard of a test id, read from here too)
    SECTION_KINDS,
    ShardError,
    own_verdict,
    read_report,
    shard_of,
    validated_shard,
)

#: The option the gate adds to a sharded full run; the pytest plugin deselects the other shards' tests.
PYTEST_OPTION = "--nnx-lint-gate-shard"


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``."""
    index, separator, count = text.partition("/")
    if not separator or not index.strip().isdigit() or not count.strip().isdigit():
        raise ShardError(f"--shard must be K/N (e.g. 1/4), not {text!r}")
    k, n = int(index), int(count)
    if n < 1 or not 1 <= k <= n:
        raise ShardError(f"--shard {text}: K must be between 1 and N")
    return k, n


def in_shard(nodeid: str, shard: tuple[int, int] | None) -> bool:
    """True when ``nodeid`` belongs to ``shard`` (always, without sharding)."""
    return shard is None or shard_of(nodeid, shard[1]) == shard[0]


def merge_reports(paths: list[Path], run_id: str | None = None, commit: str | None = None) -> dict[str, Any]:
    """One report for all shards: the verdict lists and counts joined, each problem named by its shard.

    Raises :class:`ShardError` for a report that fails :func:`~nnx_lint.gate.shard_schema.validated_shard`,
    reports of different ``N``, project, commit or run id (or not of ``run_id`` / ``commit`` when
    given), and a shard missing or given twice.
    """
    reports = [(path, validated_shard(path, read_report(path))) for path in paths]
    identities = {(report["project"], report["run"]["commit"], report["run"]["id"]) for _path, report in reports}
    if len(identities) != 1:
        raise ShardError("the reports come from different projects, commits or runs: " + "; ".join(
            f"{path}: project {report['project']}, commit {report['run']['commit']}, run {report['run']['id']}"
            for path, report in reports))
    ((_project, shards_commit, shards_run),) = identities
    if run_id is not None and shards_run != run_id:
        raise ShardError(f"the reports are of run {shards_run}, not of --run-id {run_id}")
    if commit is not None and shards_commit != commit:
        raise ShardError(f"the reports are of commit {shards_commit}, not of --commit {commit}")
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
    modes = {repr(report["modes"]) for _path, report in reports}
    if len(modes) != 1:
        raise ShardError("the reports ran different modes: " + ", ".join(str(path) for path, _report in reports))
    reports.sort(key=lambda item: item[1]["shard"]["index"])
    first = reports[0][1]
    merged: dict[str, Any] = {key: first[key] for key in ("tool", "version", "project", "run", "modes")}
    merged["shard"] = {"index": None, "count": count, "merged": [str(path) for path, _report in reports]}
    merged["runs"] = {f"{name} (shard {report['shard']['index']}/{count})": run
                      for _path, report in reports for name, run in report["runs"].items()}
    summary: dict[str, Any] = {}
    for _path, report in reports:  # every count is bounded by the schema, so the sums are too
        for key, value in report["summary"].items():
            if isinstance(value, bool):
                summary[key] = summary.get(key, False) or value
            elif isinstance(value, (int, float)):
                summary[key] = summary.get(key, 0) + value
            elif key not in summary:
                summary[key] = value
    summary["elapsed"] = max(report["summary"]["elapsed"] for _path, report in reports)  # the jobs run in parallel
    merged["summary"] = summary
    for key in (*SECTION_KINDS, "findings_in_passing_tests"):
        merged[key] = sorted((item for _path, report in reports for item in report[key]),
                             key=lambda item: (item.get("nodeid") or "", item.get("path") or "", item.get("line") or 0))
    summary.update({key: len(merged[key]) for key in SECTION_KINDS})
    summary["new_breaks"] = sum(1 for key in ("tree_breaks", "not_isolated") for item in merged[key]
                                if not item["in_baseline"])
    baselines = [report["baseline"] for _path, report in reports if report["baseline"]]
    merged["baseline"] = None if not baselines else {
        "file": baselines[0]["file"],
        # Fixed in the merged run: no shard still breaks it (each shard sees only its own tests).
        "fixed": sorted(set.intersection(*(set(baseline["fixed"]) for baseline in baselines)))}
    merged["problems"] = [f"shard {report['shard']['index']}/{count}: {problem}"
                          for _path, report in reports for problem in report["problems"]]
    untested = [f"shard {report['shard']['index']}/{count}: {report['untested']}"
                for _path, report in reports if report["untested"]]
    merged["untested"] = "; ".join(untested) if len(untested) == len(reports) else None
    merged["problems"] += [] if merged["untested"] else [f"{item} (nothing was tested there)" for item in untested]
    merged["notes"] = list(dict.fromkeys(note for _path, report in reports for note in report["notes"]))
    # From the breaks and problems themselves: a status a shard claims is never copied (each shard's
    # claim was checked against its own content, and a break in any shard fails the merge).
    merged["exit_status"] = own_verdict(merged)
    return merged
