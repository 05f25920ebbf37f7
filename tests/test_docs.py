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


DOCUMENTS = sorted(["README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])


def _anchors(path: Path) -> set[str]:
    """The fragments a Markdown file offers: explicit ``<a id>`` anchors and GitHub's heading slugs."""
    text = path.read_text()
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("document", DOCUMENTS)
def test_relative_links_resolve(document):
    """Every relative link names a file that exists and, with a ``#fragment`` into Markdown, an anchor in it."""
    path = ROOT / document
    links = re.findall(r"\]\(([^)#:\s]*)(#[^)\s]*)?\)", path.read_text())
    missing = [target for target, _ in links if target and not (path.parent / target).exists()]
    assert not missing, f"{document} links to missing files: {missing}"
    broken = [target + fragment for target, fragment in links
              if fragment and (target or document).endswith(".md") and (path.parent / target).is_file()
              and fragment[1:] not in _anchors(path.parent / target)]
    assert not broken, f"{document} links to missing anchors: {broken}"


def test_documents_cover_every_page():
    """The link test runs over the rule pages and the catalogue too."""
    assert "docs/catalogue.md" in DOCUMENTS and "docs/rules/NNX101.md" in DOCUMENTS


def _catalogue_sections() -> dict[str, tuple[str, str]]:
    """Pattern id -> (title, section text) as docs/catalogue.md has them, in order."""
    text = (ROOT / "docs" / "catalogue.md").read_text()
    found = re.findall(r'<a id="(\w+)"></a>\n\n### (\w+)\. ([^\n]+)\n(.*?)(?=\n<a id=|\n## |\Z)', text, flags=re.DOTALL)
    assert all(anchor == pattern_id.lower() for anchor, pattern_id, _, _ in found)
    return {pattern_id: (title, body) for _, pattern_id, title, body in found}


def test_catalogue_headings_are_the_pattern_table():
    """Rule pages take titles from nnx_lint.base.catalogue; the document's headings must say the same, in order."""
    from nnx_lint.base.catalogue import PATTERNS

    sections = _catalogue_sections()
    assert list(sections) == list(PATTERNS)
    assert {pattern_id: title for pattern_id, (title, _) in sections.items()} == PATTERNS


def test_every_pattern_a_rule_cites_is_in_the_catalogue():
    from nnx_lint.engine.registry import all_rules

    sections = _catalogue_sections()
    unknown = {rule.code: pattern_id for rule in all_rules() for pattern_id in rule.catalogue
               if pattern_id not in sections}
    assert not unknown, f"rules cite patterns docs/catalogue.md does not have: {unknown}"


def test_catalogue_names_the_rules_that_cite_each_pattern():
    """A pattern's "Flagged by" line and its row in the summary table list exactly the rules citing it."""
    from nnx_lint.engine.registry import all_rules

    text = (ROOT / "docs" / "catalogue.md").read_text()
    for pattern_id, (_, body) in _catalogue_sections().items():
        citing = {rule.code for rule in all_rules() if pattern_id in rule.catalogue}
        flagged_by = re.search(r"^- \*\*Flagged by:\*\* (.*)$", body, flags=re.MULTILINE)
        assert flagged_by, pattern_id
        assert set(re.findall(r"\[(NNX\d{3})\]\(rules/", flagged_by.group(1))) == citing, pattern_id
        assert citing or re.match(r"(No rule|Nothing to flag)\S*: \w", flagged_by.group(1)), f"{pattern_id}: say why not"
        row = re.search(rf"^\| \[{pattern_id}\]\(#{pattern_id.lower()}\) \|.*$", text, flags=re.MULTILINE)
        assert row and set(re.findall(r"\[(NNX\d{3})\]", row.group(0))) == citing, pattern_id


def test_rule_pages_link_to_their_patterns():
    from nnx_lint.reporting.docs import render_rule
    from nnx_lint.engine.registry import rule_by_code

    page = render_rule(rule_by_code("NNX101"))
    assert "[A1: Tied Variable into a transform](../catalogue.md#a1)" in page
    assert "[A2: " in page and "Catalogue rows" not in page


def test_migration_guide_covers_its_topics_in_order():
    text = (ROOT / "docs" / "migration.md").read_text()
    headings = re.findall(r"^## \d\. (.+)$", text, flags=re.MULTILINE)
    assert headings == ["Order of work", "Run your own tests in Tree Mode today",
                        "The baseline check: fail CI only on new breaks", "pre-commit", "GitHub Actions and code scanning",
                        "Tracking progress", "Fixes and your flax version"]
    for needle in ("NNX_GRAPH_MODE=false NNX_GRAPH_UPDATES=false", "nnx.set_graph_mode(False)",
                   "nnx.set_graph_updates(False)", "--write-baseline", "--baseline", "nnx-lint gate",
                   "id: nnx-lint", "(gate.md)", "(github-actions.md)", "--group-by directory",
                   "--output-format markdown"):
        assert needle in text, needle


def test_migration_guide_order_of_work_matches_the_tool():
    from nnx_lint.reporting.overview import STAGES

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
    # Where chromium is missing, .ci/run installs it: stand-ins, so this test installs nothing.
    _stub(tools / "apt-get", "exit 0\n")
    _stub(tools / "sudo", '"$@"\n')
    env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "TMPDIR": str(temp)}
    result = subprocess.run(["bash", str(checkout / ".ci" / "run")], env=env, capture_output=True, text=True)
    assert (result.returncode == 0) == tests_pass, result.stderr
    assert list(temp.iterdir()) == [], "the virtualenv was left behind"


def test_runtime_programs_tag_patterns_that_exist():
    """The differential programs are tagged with catalogue ids (`@program("A1", ...)`): each must be a pattern."""
    from nnx_lint.base.catalogue import PATTERNS

    text = (ROOT / "tests" / "runtime" / "runtime_programs.py").read_text()
    tags = {tag for args in re.findall(r"@program\(([^)]*)\)", text) for tag in re.findall(r'"([A-Z]\d+)"', args)}
    assert "A1" in tags and "C10" in tags
    assert tags <= set(PATTERNS), tags - set(PATTERNS)


def test_migration_guide_flax_version_table_is_current():
    """The table of the oldest flax each fix needs is generated from the flax table
    (``python -m nnx_lint.docs`` rewrites it)."""
    from nnx_lint.reporting.docs import MIGRATION, migration_text

    text = MIGRATION.read_text(encoding="utf-8")
    assert text == migration_text(text), "docs/migration.md is stale: run python -m nnx_lint.docs"
    assert "| pin: `graph=True, graph_updates=True` | `checkify`" in text


def test_readme_counts_and_catalogue_table_are_current():
    """README's rule count per code range and the catalogue table's rules column are generated from the
    rules: `python -m nnx_lint.docs` rewrites them, so adding a rule needs no edit of either."""
    import doctest

    from nnx_lint.engine.registry import all_rules
    from nnx_lint.reporting import doc_tables

    assert doctest.testmod(doc_tables).failed == 0
    for path, render in ((doc_tables.README, doc_tables.readme_text),
                         (doc_tables.CATALOGUE, doc_tables.catalogue_text)):
        text = path.read_text(encoding="utf-8")
        assert render(text, all_rules()) == text, f"{path.name} is stale: run python -m nnx_lint.docs"


def test_the_generated_tables_follow_a_new_rule():
    """A rule added to a range, citing a pattern no rule flagged, changes both tables; a rule of a range
    README has no row for is refused (the row's words are written by hand)."""
    from types import SimpleNamespace

    from nnx_lint.engine.registry import all_rules
    from nnx_lint.reporting.doc_tables import CATALOGUE, README, catalogue_text, readme_text

    readme, catalogue = README.read_text(encoding="utf-8"), CATALOGUE.read_text(encoding="utf-8")
    unflagged = re.search(r"^\| \[(\w+)\]\(#\w+\) \|[^|]*\|[^|]*\| — \|$", catalogue, flags=re.MULTILINE).group(1)
    new = SimpleNamespace(code="NNX790", catalogue=(unflagged,))
    rules = (*all_rules(), new)

    def count(text: str) -> int:
        return int(re.search(r"^\| NNX7xx \| .* \| (\d+) \|$", text, flags=re.MULTILINE).group(1))

    assert count(readme_text(readme, rules)) == count(readme) + 1
    row = re.compile(rf"^\| \[{unflagged}\]\(#\w+\) \|.*$", flags=re.MULTILINE)
    assert row.search(catalogue_text(catalogue, rules)).group(0).endswith("| [NNX790](rules/NNX790.md) |")
    with pytest.raises(ValueError, match="no row for NNX8xx"):
        readme_text(readme, (*rules, SimpleNamespace(code="NNX801", catalogue=())))


def test_contributing_names_what_exists():
    """CONTRIBUTING's guide to adding a rule names files that exist, services ``nnx_lint.api`` exports (each
    a per-file service of ``nnx_lint/analysis/``, as it says), and the api names a rewrite is declared with."""
    import inspect

    import nnx_lint.api as api
    from nnx_lint.analysis.context import FileContext

    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8").split("### 7.", 1)[0]
    paths = set(re.findall(r"`((?:nnx_lint|checkers|tests)/[\w/]+\.py)`", text))
    assert "nnx_lint/analysis/values.py" in paths and "tests/test_one_answer.py" in paths
    # The files the scaffold example writes are checked by tests/test_scaffold.py, which writes them.
    example = re.search(r"^(?:\$ )?python -m nnx_lint\.scaffold (NNX\d{3}) ", text, flags=re.MULTILINE).group(1)
    written = {path for path in paths if example.lower() in path.lower()}
    assert len(written) == 2
    assert [path for path in paths - written if not (ROOT / path).is_file()] == []
    capability = text.split("**A new inference capability", 1)[1].split("### 3.", 1)[0]
    services = {"value_model", "variable_model", "transform_resolver", "transformed_code", "helper_summaries"}
    assert all(f"`{name}`" in capability for name in services)
    for name in services:
        accessor = getattr(api, name)
        assert accessor.__module__.startswith("nnx_lint.analysis."), name
        assert "context.service(" in inspect.getsource(accessor), name
    assert callable(FileContext.service) and "classes" in inspect.getsource(FileContext.__init__)
    assert {"Rewrite", "RewriteSite", "PIN"} <= set(api.__all__)
    assert all(f"`{name}" in text for name in ("Rewrite(", "RewriteSite", "PIN"))
