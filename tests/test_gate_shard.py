"""``nnx-lint gate --shard K/N`` and ``nnx-lint gate merge``, run as a user would (subprocesses).

The shards partition the tests by a hash of the node id, their union is the unsharded run, and
the merged verdict and exit status are the unsharded ones. The project is flax-free (its tests
read ``NNX_GRAPH_MODE`` themselves), so each run costs seconds.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nnx_lint.gate.shard import ShardError, in_shard, parse_shard, shard_of

BREAKS = ("break_a", "break_b", "break_c")
PASSES = ("pass_a", "pass_b", "pass_c", "pass_d")
PROJECT = {
    "pytest.ini": "[pytest]\npython_files = check_*.py\n",
    "check_shard.py": "import os\n\nTREE = os.environ.get('NNX_GRAPH_MODE') == 'false'\n\n" + "".join(
        f"\ndef test_{name}():\n    assert not TREE\n\n" for name in BREAKS) + "".join(
        f"\ndef test_{name}():\n    pass\n\n" for name in PASSES),
}
SECTIONS = ("tree_breaks", "not_isolated", "order_dependent", "fails_in_both_modes", "graph_only")


def _gate(root: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", *arguments], cwd=root, capture_output=True,
                          text=True, timeout=600)


def _verdicts(report: dict) -> dict[str, set[str]]:
    return {key: {item["nodeid"] for item in report[key]} for key in SECTIONS}


def test_assignment_is_by_the_node_id_alone():
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/2", "3/2", "2", "a/b", "1/0"):
        with pytest.raises(ShardError):
            parse_shard(bad)
    ids = [f"tests/test_{index}.py::test_x[{index}]" for index in range(400)]
    owners = [[k for k in (1, 2, 3) if in_shard(nodeid, (k, 3))] for nodeid in ids]
    assert all(len(owner) == 1 for owner in owners)  # a partition
    assert {owner[0] for owner in owners} == {1, 2, 3}
    assert [shard_of(nodeid, 3) for nodeid in reversed(ids)] == [owner[0] for owner in reversed(owners)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("shard")
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    whole = _gate(root, ".", "--output-format", "json", "--no-warm-reruns")
    shards = [_gate(root, ".", "--shard", f"{k}/2", "--report-file", f"shard-{k}.json", "--no-warm-reruns")
              for k in (1, 2)]
    return root, whole, shards


@pytest.mark.slow
def test_shards_partition_the_tests_and_merge_to_the_unsharded_verdict(runs):
    root, whole, shards = runs
    unsharded = json.loads(whole.stdout)
    assert whole.returncode == 1, whole.stdout + whole.stderr
    assert {item["nodeid"].rpartition("::test_")[2] for item in unsharded["tree_breaks"]} == set(BREAKS)
    reports = [json.loads((root / f"shard-{k}.json").read_text()) for k in (1, 2)]
    for k, (done, report) in enumerate(zip(shards, reports), start=1):
        assert report["shard"] == {"index": k, "count": 2}
        assert done.returncode == report["exit_status"]
        nodeids = set().union(*_verdicts(report).values())
        assert nodeids and all(shard_of(nodeid, 2) == k for nodeid in nodeids)
        # Both modes of the shard's own tests, and only those.
        expected = sum(1 for name in BREAKS + PASSES if shard_of(f"check_shard.py::test_{name}", 2) == k)
        assert report["runs"]["graph"]["tests"] == report["runs"]["tree"]["tests"] == expected
    assert sum(report["runs"]["tree"]["tests"] for report in reports) == unsharded["runs"]["tree"]["tests"]
    for key in SECTIONS:
        assert _verdicts(reports[0])[key].isdisjoint(_verdicts(reports[1])[key])
        assert _verdicts(reports[0])[key] | _verdicts(reports[1])[key] == _verdicts(unsharded)[key]

    merged = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", "merge", "shard-2.json", "shard-1.json",
                             "--output-format", "json"], cwd=root, capture_output=True, text=True, timeout=60)
    report = json.loads(merged.stdout)
    assert merged.returncode == whole.returncode == report["exit_status"]
    assert _verdicts(report) == _verdicts(unsharded)
    for key in ("tests", "tree_breaks", "new_breaks", "reruns"):
        assert report["summary"][key] == unsharded["summary"][key], key
    text = subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", "merge", "shard-1.json", "shard-2.json"],
                          cwd=root, capture_output=True, text=True, timeout=60).stdout
    assert text.splitlines()[-1].startswith("7 tests: 3 break(s) in Tree Mode")


@pytest.mark.slow
def test_merge_refuses_missing_duplicated_and_foreign_shards(runs):
    root, _whole, _shards = runs

    def merge(*names: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nnx_lint.cli", "gate", "merge", *names], cwd=root,
                              capture_output=True, text=True, timeout=60)

    done = merge("shard-1.json")
    assert done.returncode == 2 and "shard(s) 2/2 missing" in done.stderr
    done = merge("shard-1.json", "shard-1.json")
    assert done.returncode == 2 and "shard 1/2 is given twice" in done.stderr
    other = json.loads((root / "shard-2.json").read_text())
    other["shard"] = {"index": 2, "count": 3}
    (root / "other.json").write_text(json.dumps(other))
    done = merge("shard-1.json", "other.json")
    assert done.returncode == 2 and "different numbers of shards" in done.stderr
    (root / "whole.json").write_text(json.dumps({**other, "shard": None}))
    done = merge("shard-1.json", "whole.json")
    assert done.returncode == 2 and "not the report of a shard" in done.stderr


def _documented_matrix() -> dict:
    """The GitHub Actions matrix of docs/gate.md (its one ``yaml`` block with ``--shard``)."""
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[test]')")
    text = (Path(__file__).resolve().parent.parent / "docs" / "gate.md").read_text()
    blocks = [block.split("\n", 1)[1] for block in text.split("```yaml")[1:]]
    (matrix,) = [block.split("```", 1)[0] for block in blocks if "--shard" in block.split("```", 1)[0]]
    return yaml.safe_load(matrix)


def test_the_documented_matrix_runs_every_shard_once_and_merges_them_all():
    """Each job's command line is a valid ``nnx-lint gate`` run of its own shard of N (N the matrix's
    size), its report is what the verdict job downloads and merges, and nnx-lint is installed from a
    pinned commit (it is not on the package index)."""
    import shlex

    from nnx_lint.cli import build_parser

    jobs = _documented_matrix()["jobs"]
    shards = jobs["gate"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    runs = [step["run"] for job in jobs.values() for step in job["steps"] if "run" in step]
    (gate_line,) = [line for line in runs if "--shard" in line]
    seen = []
    for shard in shards:
        words = shlex.split(gate_line.replace("${{ matrix.shard }}", str(shard)))
        words = words[:words.index("||")] if "||" in words else words
        assert words[:2] == ["nnx-lint", "gate"]
        args = build_parser().parse_args(words[1:])
        seen.append(parse_shard(args.shard))
        assert Path(args.report_file).match("gate-*.json")
    assert seen == [(shard, len(shards)) for shard in shards]
    merges = [shlex.split(line.split(">>")[0]) for line in runs if "gate merge" in line]
    assert merges and all(words[:4] == ["nnx-lint", "gate", "merge", "gate-*.json"] for words in merges)
    installs = [line for line in runs if line.startswith("pip install")]
    assert installs and all("nnx-lint/nnx-lint@<commit>" in line for line in installs), installs
