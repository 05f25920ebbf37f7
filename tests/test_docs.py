"""The documents and the CI script say what is true: file names, counts, links, clean-up."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_runtime_doc_names_only_files_that_exist():
    text = (ROOT / "docs" / "runtime.md").read_text()
    names = set(re.findall(r"`([\w/.-]+\.py)`", text))
    assert "tests/runtime/test_runtime_differential.py" in names
    missing = [name for name in names
               if not (ROOT / name).is_file() and not (ROOT / "tree_runtime" / name).is_file()]
    assert not missing, f"docs/runtime.md names files that do not exist: {missing}"


def test_runtime_doc_has_no_changelog_and_one_story_about_set_graph_mode():
    text = (ROOT / "docs" / "runtime.md").read_text()
    assert "## Changes" not in text, "a user document, not a changelog"
    not_implemented = text.split("## Not implemented", 1)[1]
    # The runtime has set_graph_mode (False only); the document must not also call it missing.
    assert not re.search(r"`set_graph_mode`,", not_implemented)
    assert "`set_graph_mode(True)`" in not_implemented
    import tree_runtime

    assert tree_runtime.set_graph_mode.current_value() is False


def test_readme_counts_the_differential_programs():
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    sys.path.insert(0, str(ROOT / "tests" / "runtime"))
    try:
        from runtime_programs import PROGRAMS
    finally:
        sys.path.remove(str(ROOT / "tests" / "runtime"))
    match = re.search(r"\(`tests/runtime/`, (\d+) programs", (ROOT / "README.md").read_text())
    assert match and int(match.group(1)) == len(PROGRAMS)


@pytest.mark.parametrize("document", ["README.md", "docs/migration.md", "docs/notebooks.md", "docs/runtime.md",
                                      "docs/security.md", "docs/gate.md", "docs/analysis.md", "docs/github-actions.md",
                                      "docs/related-locations.md"])
def test_relative_links_resolve(document):
    path = ROOT / document
    links = re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", path.read_text())
    missing = [link for link in links if not (path.parent / link).exists()]
    assert not missing, f"{document} links to missing files: {missing}"


def test_migration_guide_covers_its_topics_in_order():
    text = (ROOT / "docs" / "migration.md").read_text()
    headings = re.findall(r"^## \d\. (.+)$", text, flags=re.MULTILINE)
    assert headings == ["Order of work", "Run your own tests in Tree Mode today",
                        "The gate: fail CI only on new breaks", "pre-commit", "GitHub Actions and code scanning",
                        "Tracking progress"]
    for needle in ("NNX_GRAPH_MODE=false NNX_GRAPH_UPDATES=false", "nnx.set_graph_mode(False)",
                   "nnx.set_graph_updates(False)", "--write-baseline", "--baseline", "nnx-lint gate",
                   "id: nnx-lint", "(gate.md)", "(github-actions.md)", "--group-by directory",
                   "--output-format markdown"):
        assert needle in text, needle


def test_migration_guide_order_of_work_matches_the_tool():
    from nnx_lint.overview import STAGES

    text = (ROOT / "docs" / "migration.md").read_text().split("## 2.", 1)[0]
    steps = re.findall(r"^\d\. \*\*(.+?)\*\*", text, flags=re.MULTILINE)
    assert steps == [stage.title for stage in STAGES]


def _stub(path: Path, body: str) -> None:
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("tests_pass", [True, False])
def test_ci_run_removes_its_virtualenv(tmp_path, tests_pass):
    """`.ci/run` with a stand-in python: whatever pytest says, the temp directory ends empty."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    tools, temp = tmp_path / "tools", tmp_path / "temp"
    tools.mkdir()
    temp.mkdir()
    # `python3 -m venv DIR` makes DIR/bin/activate, which puts a stand-in `python` first on PATH;
    # `python -m pytest` exits as the parameter says.
    _stub(tools / "python3", f"""mkdir -p "$3/bin"
cat > "$3/bin/activate" <<EOF
export PATH="$3/bin:\\$PATH"
EOF
cat > "$3/bin/python" <<'EOF'
#!/usr/bin/env bash
if [ "$2" = pytest ]; then exit {0 if tests_pass else 1}; fi
EOF
cp "$3/bin/python" "$3/bin/nnx-lint"
chmod +x "$3/bin/python" "$3/bin/nnx-lint"
head -c 1000000 /dev/zero > "$3/weight"
""")
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(temp)}
    result = subprocess.run(["bash", str(checkout / ".ci" / "run")], env=env, capture_output=True, text=True)
    assert (result.returncode == 0) == tests_pass, result.stderr
    assert list(temp.iterdir()) == [], "the virtualenv was left behind"
