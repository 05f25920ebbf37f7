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
    # Its tests hash to other shards of 3 (and the derived run id names the shard count too).
    assert done.returncode == 2 and "not of this shard 2/3" in done.stderr
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
        words = shlex.split(gate_line.replace("${{ matrix.shard }}", str(shard)).replace("${{ github.run_id }}", "7"))
        words = words[:words.index("||")] if "||" in words else words
        assert words[:2] == ["nnx-lint", "gate"]
        args = build_parser().parse_args(words[1:])
        seen.append(parse_shard(args.shard))
        assert args.run_id == "7"  # every shard names the workflow run, and the merge checks it
        assert Path(args.report_file).match("gate-*.json")
    assert seen == [(shard, len(shards)) for shard in shards]
    merges = [shlex.split(line.split(">>")[0]) for line in runs if "gate merge" in line]
    assert merges and all(words[:4] == ["nnx-lint", "gate", "merge", "gate-*.json"] for words in merges)
    assert all(words[4:8] == ["--run-id", "${{", "github.run_id", "}}"] for words in merges)
    installs = [line for line in runs if line.startswith("pip install")]
    # Installed from the repository the workflow's variables name (issue 45: no unpublished address).
    assert installs and all("@ git+${{ github.server_url }}/${{ vars.NNX_LINT_REPOSITORY }}@${{ vars.NNX_LINT_REF }}"
                            in line for line in installs), installs


# --- issue 44, c3 and m3: gate merge validates its inputs and escapes their text -----------------

FORGED_SHARDS = Path(__file__).resolve().parent / "fixtures_gate" / "forged_shards"


def _merge(root: Path, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "nnx-lint"), "gate", "merge", *arguments], cwd=root,
                          capture_output=True, text=True, timeout=120)


def _as_current(report: dict) -> dict:
    """A round-three reproducer's report (format 1) as this version writes it: with a run identity."""
    return {**report, "version": 2, "run": {"id": "ci-run-7", "commit": "a" * 40}}


def test_c3_a_shard_claiming_exit_status_256_never_turns_another_shards_break_into_exit_0(tmp_path):
    """The round-three reproducer's real shard reports (shard 2 holds a break)."""
    honest = [json.loads((FORGED_SHARDS / f"shard{k}.json").read_text()) for k in (1, 2)]
    # As the reproducer has them (format 1, no run identity): refused, never exit 0.
    for k, report in enumerate(honest, start=1):
        (tmp_path / f"old{k}.json").write_text(json.dumps(report))
    (tmp_path / "old1-forged.json").write_text(json.dumps({**honest[0], "exit_status": 256}))
    for names in (("old1.json", "old2.json"), ("old1-forged.json", "old2.json")):
        done = _merge(tmp_path, *names)
        assert done.returncode == 2 and "no run identity" in done.stderr, done.stderr

    current = [_as_current(report) for report in honest]
    for k, report in enumerate(current, start=1):
        (tmp_path / f"shard{k}.json").write_text(json.dumps(report))
    done = _merge(tmp_path, "shard1.json", "shard2.json")
    assert done.returncode == 1 and done.stdout.splitlines()[-1].startswith("3 tests: 1 break(s)"), done.stdout
    for forged_status in (256, -1, 3, True, 0.0, "0", None):
        (tmp_path / "forged.json").write_text(json.dumps({**current[0], "exit_status": forged_status}))
        done = _merge(tmp_path, "forged.json", "shard2.json")
        assert done.returncode == 2 and "exit_status" in done.stderr, (forged_status, done.stderr)
    # The shard that holds the break cannot claim 0 either: its own content gives 1.
    (tmp_path / "forged.json").write_text(json.dumps({**current[1], "exit_status": 0}))
    done = _merge(tmp_path, "shard1.json", "forged.json")
    assert done.returncode == 2 and "claims 0, its own content gives 1" in done.stderr, done.stderr


def _forge(report: dict, change) -> dict:
    forged = json.loads(json.dumps(report))
    change(forged)
    return forged


#: Forged variants of an honest shard report, each refused (exit 2) with the field it names.
FORGERIES = {
    "another commit": (lambda r: r["run"].update(commit="b" * 40), "different projects, commits or runs"),
    "another run": (lambda r: r["run"].update(id="another-run"), "different projects, commits or runs"),
    "another project": (lambda r: r.update(project="/elsewhere"), "different projects, commits or runs"),
    "negative count": (lambda r: r["summary"].update(reruns=-1), "summary.reruns"),
    "bool for an int": (lambda r: r["runs"]["tree"].update(tests=True), "runs.tree.tests"),
    "huge count": (lambda r: r["summary"].update(tests=10**30), "summary.tests"),
    "failing over tests": (lambda r: r["runs"]["graph"].update(failing=r["runs"]["graph"]["tests"] + 1),
                           "runs.graph.failing"),
    "infinite time": (lambda r: r["summary"].update(elapsed=float("inf")), "summary.elapsed"),
    "unknown key": (lambda r: r.update(verdict_override=0), "unknown key"),
    "notes not a list": (lambda r: r.update(notes="x"), "notes"),
    "summary hides a break": (lambda r: r["summary"].update(tree_breaks=0), "summary.tree_breaks"),
    "baselined only in the summary": (lambda r: r["summary"].update(new_breaks=0), "summary.new_breaks"),
    "a test of the other shard": (lambda r: r["tree_breaks"].append(
        {**r["tree_breaks"][0], "nodeid": next(f"check_shard.py::test_x{i}" for i in range(99)
                                               if shard_of(f"check_shard.py::test_x{i}", 2) != r["shard"]["index"])}),
        "not of this shard"),
    "verdict of another section": (lambda r: r["tree_breaks"][0].update(verdict="graph-only"),
                                   "tree_breaks[0].verdict"),
    "deeply nested": (lambda r: r["runs"]["tree"].update(flax_config=json.loads("[" * 200 + "]" * 200)),
                      "nested deeper"),
}


@pytest.mark.slow
@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_c3_merge_refuses_a_forged_or_foreign_shard(runs, forgery):
    root, _whole, _shards = runs
    reports = {k: json.loads((root / f"shard-{k}.json").read_text()) for k in (1, 2)}
    assert reports[1]["version"] == 2 and reports[1]["run"] == reports[2]["run"]  # one run, as the gate wrote them
    change, named = FORGERIES[forgery]
    # Forge the shard that holds a break where the forgery needs one.
    k = next(k for k in (1, 2) if reports[k]["tree_breaks"])
    (root / "forged.json").write_text(json.dumps(_forge(reports[k], change), allow_nan=True))
    done = _merge(root, "forged.json", f"shard-{3 - k}.json")
    assert done.returncode == 2 and named in done.stderr, done.stderr
    assert not done.stdout


@pytest.mark.slow
def test_c3_merge_can_pin_the_run_and_the_commit(runs):
    root, _whole, _shards = runs
    report = json.loads((root / "shard-1.json").read_text())
    done = _merge(root, "shard-1.json", "shard-2.json", "--run-id", report["run"]["id"])
    assert done.returncode == 1, done.stderr
    done = _merge(root, "shard-1.json", "shard-2.json", "--run-id", "another-run")
    assert done.returncode == 2 and "not of --run-id another-run" in done.stderr
    done = _merge(root, "shard-1.json", "shard-2.json", "--commit", "c" * 40)
    assert done.returncode == 2 and "not of --commit" in done.stderr


HOSTILE = "ok\n::error file=pyproject.toml,line=1::FORGED ANNOTATION\n\x1b[2J ##[error]legacy ##vso[task.complete]x"


@pytest.mark.slow
def test_m3_shard_text_reaches_the_merged_output_escaped(runs):
    root, _whole, _shards = runs
    reports = {k: json.loads((root / f"shard-{k}.json").read_text()) for k in (1, 2)}

    def plant(report: dict) -> None:
        report["notes"].append(HOSTILE)
        report["problems"].append("x\n::stop-commands::tok")
        report["exit_status"] = 2  # consistent with the problem it now reports
        report["runs"]["graph"]["flax_version"] = "##[warning]v"
        item = (report["tree_breaks"] or report["fails_in_both_modes"] or [None])[0]
        if item is not None:
            item["note"] = HOSTILE

    (root / "hostile.json").write_text(json.dumps(_forge(reports[1], plant)))
    for output_format in ("text", "markdown"):
        done = _merge(root, "hostile.json", "shard-2.json", "--output-format", output_format)
        assert done.returncode == 2, done.stderr  # the planted problem
        output = done.stdout + done.stderr
        if output_format == "text":
            assert "FORGED ANNOTATION" in output  # shown, as data
        assert "\x1b" not in output
        assert not [line for line in output.splitlines() if line.lstrip().startswith("::")]
        assert "##[" not in output and "##vso[" not in output.lower()


def test_the_run_identity_names_the_checked_out_commit_and_the_run(tmp_path):
    """What ties shards together, read from git's own files (loose and packed refs, a detached HEAD)."""
    import shutil

    from nnx_lint.gate.run_identity import RunIdError, checked_run_id, run_identity

    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")

    def run_git(*arguments: str) -> str:
        return subprocess.run([git, "-c", "user.name=t", "-c", "user.email=t@t", *arguments], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    run_git("init", "-q")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text("x = 1\n")
    run_git("add", ".")
    run_git("commit", "-q", "-m", "one")
    head = run_git("rev-parse", "HEAD")
    assert run_identity(tmp_path / "sub", 2, ["pytest"], None)["commit"] == head  # a loose ref
    run_git("pack-refs", "--all")
    assert run_identity(tmp_path, 2, ["pytest"], None)["commit"] == head  # packed-refs
    run_git("checkout", "-q", "--detach")
    assert run_identity(tmp_path, 2, ["pytest"], None)["commit"] == head  # a detached HEAD, as CI checks out
    assert run_identity(tmp_path.parent / "elsewhere-not-git", 2, [], None)["commit"] is None

    derived = run_identity(tmp_path, 2, ["pytest"], None, environ={})["id"]
    assert derived == run_identity(tmp_path, 2, ["pytest"], None, environ={})["id"]  # every job derives the same
    assert derived != run_identity(tmp_path, 3, ["pytest"], None, environ={})["id"]
    assert derived != run_identity(tmp_path, 2, ["pytest"], None, environ={"GITHUB_RUN_ID": "8"})["id"]
    assert run_identity(tmp_path, 2, ["pytest"], "ci-7")["id"] == "ci-7"
    for bad in ("", "has space", "x" * 201, "tab\t", "é"):
        with pytest.raises(RunIdError):
            checked_run_id(bad)
