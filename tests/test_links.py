"""Issue 27, item 7: every link and every pinned version in the output and the documents resolves.

Run as a user would: the installed ``nnx-lint`` console script in a subprocess."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import pytest
from _support import REPO

NNX_LINT = str(Path(sys.executable).with_name("nnx-lint"))
BAD = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"


def _check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NNX_LINT, "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _page(uri: str) -> Path:
    parsed = urlparse(uri)
    assert parsed.scheme == "file", uri
    return Path(url2pathname(parsed.path))


def test_without_a_rule_url_base_json_and_sarif_carry_no_link_and_sarif_carries_the_page(tmp_path):
    """Issue 45: a ``file://`` path of the machine that ran the lint is a dead link in code scanning and
    exposes the runner's paths. Without ``rule-url-base``, JSON's ``url`` is null, SARIF has no
    ``helpUri``, and the rule's page travels inside SARIF as ``help.text`` / ``help.markdown``."""
    from nnx_lint.base.links import shipped_page

    (tmp_path / "bad.py").write_text(BAD)
    json_run = _check(tmp_path, "--output-format", "json", "bad.py").stdout
    (found,) = json.loads(json_run)
    assert found["url"] is None and "file:" not in json_run
    sarif_run = _check(tmp_path, "--output-format", "sarif", "bad.py").stdout
    assert "file:" not in sarif_run
    (rule,) = json.loads(sarif_run)["runs"][0]["tool"]["driver"]["rules"]
    assert "helpUri" not in rule
    page = shipped_page("NNX201").read_text()
    assert rule["help"]["markdown"].startswith("# NNX201 `state-axes-prefix`")
    assert rule["help"]["text"] == rule["help"]["markdown"]
    assert "## What it does" in rule["help"]["markdown"] and "## How to fix" in page
    # The page's relative links (../catalogue.md) lead nowhere in code scanning: their text stays.
    assert "../catalogue.md" in page and "../catalogue.md" not in rule["help"]["markdown"]


def test_the_shipped_pages_link_to_a_shipped_catalogue():
    from nnx_lint.base.links import shipped_page

    page = shipped_page("NNX201")
    targets = re.findall(r"\]\((\.\./catalogue\.md)#", page.read_text())
    assert targets
    for target in targets:
        assert (page.parent / target).is_file()


@pytest.mark.slow
def test_rule_url_base_from_the_config_and_the_command_line(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\nrule-url-base = "https://docs.example.org/rules/"\n')
    (found,) = json.loads(_check(tmp_path, "--output-format", "json", "bad.py").stdout)
    assert found["url"] == "https://docs.example.org/rules/NNX201.md"
    markdown = _check(tmp_path, "--output-format", "markdown", "bad.py").stdout
    assert "[NNX201](https://docs.example.org/rules/NNX201.md)" in markdown
    flag = _check(tmp_path, "--output-format", "sarif", "--rule-url-base", "https://x.test/{code}.html", "bad.py")
    (rule,) = json.loads(flag.stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert rule["helpUri"] == "https://x.test/NNX201.html"
    assert rule["help"]["markdown"].startswith("# NNX201 `state-axes-prefix`")


def test_a_hostile_rule_url_base_cannot_break_a_markdown_link(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\nrule-url-base = "https://x.test/a) [evil](https://e.test/"\n')
    markdown = _check(tmp_path, "--output-format", "markdown", "bad.py").stdout
    assert "[evil]" not in markdown and "(https://e.test/" not in markdown


def test_markdown_without_a_base_names_the_command_not_a_local_file(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    markdown = _check(tmp_path, "--output-format", "markdown", "bad.py").stdout
    assert "| nnx-lint rule NNX201 |" in markdown and "file://" not in markdown and "https://github.com/nnx-lint" not in markdown


def test_the_shipped_pages_are_current():
    from nnx_lint.reporting.docs import shipped_pages
    from nnx_lint.base.links import PAGES_DIR

    stale = [str(name) for name, content in shipped_pages().items()
             if not (PAGES_DIR / name).is_file() or (PAGES_DIR / name).read_text(encoding="utf-8") != content]
    assert not stale, f"run `python -m nnx_lint.docs`: {stale}"
    shipped = {p.relative_to(PAGES_DIR) for p in PAGES_DIR.rglob("*.md")}
    assert shipped == set(shipped_pages()), "orphan shipped pages"


def test_the_pages_are_package_data():
    text = (REPO / "pyproject.toml").read_text()
    assert '"nnx_lint.reporting" = ["pages/*.md", "pages/rules/*.md"]' in text


def _toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads(path.read_text())


def test_project_urls_exist_and_name_no_unpublished_address():
    urls = _toml(REPO / "pyproject.toml")["project"]["urls"]
    assert urls
    assert not [url for url in urls.values() if "nnx-lint/nnx-lint" in url]


def _documents() -> list[Path]:
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / ".pre-commit-hooks.yaml",
            *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "docs").rglob("*.yml"))]


def test_no_document_names_an_unpublished_address_or_package():
    """Issue 45: ``github.com/nnx-lint/nnx-lint`` does not exist and ``nnx-lint`` is not on an index, so
    whoever registered either first would be installed. The documents install nnx-lint from a clone or
    a repository named by a variable; a release tag comes from docs/releasing.md."""
    found = {}
    for path in _documents():
        text = path.read_text()
        for needle in ("github.com/nnx-lint", "<commit>", "pip install 'nnx-lint[", 'pip install "nnx-lint[',
                       "pip install nnx-lint"):
            if needle in text:
                found.setdefault(str(path.relative_to(REPO)), []).append(needle)
    assert not found, found
    release = (REPO / "docs" / "releasing.md").read_text()
    assert "git tag -a \"v$(python -c 'import nnx_lint; print(nnx_lint.__version__)')\"" in release
