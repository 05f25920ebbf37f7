"""``bench/corpora.py``: two runs on the corpora compared finding by finding, and byte for byte but for
the install directory in the rule page URLs (two checkouts of nnx-lint write different ones)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_PATH = Path(__file__).resolve().parent.parent / "bench" / "corpora.py"
_SPEC = importlib.util.spec_from_file_location("bench_corpora", _PATH)
corpora = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(corpora)


def _finding(code: str, row: int, checkout: str) -> dict:
    return {"code": code, "filename": "train.py", "location": {"row": row, "column": 1}, "message": f"{code} here",
            "url": f"file://{checkout}/nnx_lint/reporting/pages/rules/{code}.md"}


def _write(directory: Path, findings: list[dict]) -> None:
    directory.mkdir()
    (directory / "google+flax.json").write_text(json.dumps(findings))


def test_the_same_findings_from_two_checkouts_are_the_same_bytes(tmp_path, capsys) -> None:
    _write(tmp_path / "a", [_finding("NNX101", 3, "/one/checkout")])
    _write(tmp_path / "b", [_finding("NNX101", 3, "/another/place")])
    assert corpora.compare(tmp_path / "a", tmp_path / "b", check_bytes=True) == 0
    assert capsys.readouterr().out == "google/flax: 1 -> 1, same bytes\n"


def test_each_finding_only_one_run_has_is_listed_with_repeats_counted(tmp_path, capsys) -> None:
    _write(tmp_path / "a", [_finding("NNX101", 3, "/x"), _finding("NNX102", 5, "/x")])
    _write(tmp_path / "b", [_finding("NNX101", 3, "/x"), _finding("NNX103", 7, "/x"), _finding("NNX103", 7, "/x")])
    assert corpora.compare(tmp_path / "a", tmp_path / "b", check_bytes=True) == 1
    assert capsys.readouterr().out.splitlines() == [
        "google/flax: 2 -> 3, different bytes",
        "  - NNX102 train.py:5 NNX102 here",
        "  + NNX103 train.py:7 NNX103 here (x2)",
    ]


def test_every_project_is_named_by_owner_name_and_commit() -> None:
    assert all(project.count("/") == 1 and len(commit) >= 7 for project, commit in corpora.CORPORA.items())
    assert corpora.directory_name("google/flax") == "google+flax"
