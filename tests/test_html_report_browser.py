"""The HTML report in a real browser: playwright driving Debian's chromium.

Each page loads from ``file://`` with no console error and no request outside the report;
every link resolves (its file and its anchor); the totals equal the JSON output of the same
run; the tables sort; a hostile file name and ``setattr`` name render as text and run
nothing; the trend has one point per history line. The README's screenshot is taken here
(``NNX_LINT_UPDATE_SCREENSHOT=1`` writes docs/report-screenshot.png).

Without chromium (or playwright) these tests skip and say why; with
``NNX_LINT_REQUIRE_BROWSER=1`` (set by .ci/run) they fail instead.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlparse

import pytest

from _report_support import GATE_REPORT, HOSTILE, REPO, check, expected_totals, make_project, report_run
from nnx_lint.reporting.html.escape import file_page

#: Runs other programs end to end (see CONTRIBUTING.md): outside the quick loop.
pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOT = REPO / "docs" / "report-screenshot.png"


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium; .ci/run installs it)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        if os.environ.get("NNX_LINT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser tests must run here (NNX_LINT_REQUIRE_BROWSER=1): {missing}")
        pytest.skip(f"browser tests skipped: {missing}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def run(browser, tmp_path_factory):
    """A report over the test project with a history of three runs and the gate's page, and the
    JSON output of the same run."""
    root = tmp_path_factory.mktemp("browser")
    project = make_project(root / "project")
    history = root / "history.jsonl"
    for _ in range(2):
        check(project, "--history", str(history), "--output-format", "json", "-o", str(root / "earlier.json"))
    report, findings = report_run(project, root / "report", "--history", str(history))
    return report, findings, history


class Visit:
    """A page opened in the browser, with what it logged, requested and tried to show."""

    def __init__(self, browser, path: Path):
        self.page = browser.new_page()
        self.console: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda message: self.console.append(f"{message.type}: {message.text}"))
        self.page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")

    def close(self) -> None:
        self.page.close()


def _html_pages(report: Path) -> list[Path]:
    return sorted(report.rglob("*.html"))


def test_every_page_loads_without_console_error_or_network_request(browser, run):
    report = run[0]
    pages = _html_pages(report)
    assert len(pages) > 8
    for path in pages:
        visit = Visit(browser, path)
        try:
            assert [m for m in visit.console if not m.startswith(("log:", "info:", "debug:"))] == [], path
            assert visit.dialogs == []
            for url in visit.requests:
                assert url.startswith("file://"), (path, url)
                assert Path(unquote(urlparse(url).path)).resolve().is_relative_to(report.resolve()), (path, url)
        finally:
            visit.close()


def test_every_link_resolves_to_a_file_and_an_anchor_of_the_report(browser, run):
    report = run[0]
    targets: dict[Path, set[str]] = {}
    for path in _html_pages(report):
        visit = Visit(browser, path)
        try:
            # getAttribute, not .href: a link inside the SVG charts has an SVGAnimatedString there.
            hrefs = visit.page.eval_on_selector_all(
                "a[href]", "links => links.map(link => new URL(link.getAttribute('href'), document.baseURI).href)")
        finally:
            visit.close()
        for href in hrefs:
            url, fragment = urldefrag(href)
            assert url.startswith("file://"), (path, href)
            target = Path(unquote(urlparse(url).path))
            assert target.is_file() and target.resolve().is_relative_to(report.resolve()), (path, href)
            targets.setdefault(target, set()).add(fragment)
    assert len(targets) > 8
    for target, fragments in targets.items():
        visit = Visit(browser, target)
        try:
            ids = set(visit.page.eval_on_selector_all("[id]", "nodes => nodes.map(node => node.id)"))
        finally:
            visit.close()
        assert {fragment for fragment in fragments if fragment} <= ids, target


def test_the_counts_on_the_page_equal_the_json_output_of_the_same_run(browser, run):
    report, findings, _history = run
    visit = Visit(browser, report / "index.html")
    try:
        shown = visit.page.eval_on_selector_all(
            "[data-total]", "nodes => Object.fromEntries(nodes.map(n => [n.dataset.total, Number(n.textContent)]))")
        rows = visit.page.eval_on_selector_all(
            "#by-file + table tbody tr", "rows => rows.map(row => [row.cells[0].textContent, "
                                         "Number(row.cells[row.cells.length - 1].textContent)])")
    finally:
        visit.close()
    assert shown == expected_totals(findings)
    per_file = {}
    for finding in findings:
        per_file[finding["filename"]] = per_file.get(finding["filename"], 0) + 1
    assert dict(rows) == per_file
    # The worst first: the file with the most findings that raise heads the table.
    raising = {name: sum(f["kind"] == "raises" for f in findings if f["filename"] == name) for name in per_file}
    assert raising[rows[0][0]] == max(raising.values())


def test_the_tables_sort_by_a_click_on_a_heading(browser, run):
    visit = Visit(browser, run[0] / "index.html")
    try:
        table = visit.page.locator("#by-file + table")
        names = lambda: table.locator("tbody tr td:first-child").all_text_contents()  # noqa: E731
        totals = lambda: [int(t) for t in table.locator("tbody tr td:last-child").all_text_contents()]  # noqa: E731
        table.locator("th", has_text="file").click()
        assert names() == sorted(names()) and len(names()) > 2
        table.locator("th", has_text="file").click()
        assert names() == sorted(names(), reverse=True)
        table.locator("th", has_text="total").click()
        assert totals() == sorted(totals(), reverse=True)
        table.locator("th", has_text="total").click()
        assert totals() == sorted(totals())
        assert visit.console == []
    finally:
        visit.close()


def test_a_hostile_file_name_and_identifier_render_as_text_and_run_nothing(browser, run):
    report = run[0]
    for path in (report / "index.html", report / file_page(f"{HOSTILE}.py"), report / "rules" / "NNX101.html"):
        visit = Visit(browser, path)
        try:
            page = visit.page
            assert page.locator("img").count() == 0
            assert page.evaluate("document.scripts.length") == 1  # sort.js
            assert f"{HOSTILE}.py" in page.inner_text("main")
            assert visit.dialogs == [] and visit.console == []
        finally:
            visit.close()
    visit = Visit(browser, report / file_page(f"{HOSTILE}.py"))
    try:
        assert visit.page.inner_text("h1") == f"{HOSTILE}.py"
        assert f"self.{HOSTILE}" in visit.page.inner_text(".finding .message")
    finally:
        visit.close()


def test_the_trend_has_one_point_per_history_line(browser, run):
    report, _findings, history = run
    runs = len(history.read_text().splitlines())
    assert runs == 3
    visit = Visit(browser, report / "index.html")
    try:
        assert visit.page.locator("svg.trend circle.point.k-breaks").count() == runs
        assert visit.page.locator("svg.trend circle.point.k-total").count() == runs
    finally:
        visit.close()


def test_the_gate_page_links_each_break_to_its_findings(browser, run):
    report, findings, _history = run
    visit = Visit(browser, report / "gate.html")
    try:
        link = visit.page.locator("tr.explained a", has_text="NNX201").first
        link.click()
        visit.page.wait_for_load_state("load")
        anchor = urldefrag(visit.page.url)[1]
        assert findings[int(anchor[1:])]["code"] == "NNX201"
        assert visit.page.locator(f"#{anchor}").is_visible()
    finally:
        visit.close()


def test_screenshot_of_the_report_on_docs_example(browser, tmp_path):
    """The README's screenshot: the report on docs/example (written to the docs only with
    ``NNX_LINT_UPDATE_SCREENSHOT=1``, so a CI run never rewrites a committed file)."""
    project = tmp_path / "example"
    shutil.copytree(REPO / "docs" / "example", project)
    check(project, "--output-format", "html", "-o", str(tmp_path / "report"))
    visit = Visit(browser, tmp_path / "report" / "index.html")
    try:
        visit.page.set_viewport_size({"width": 1000, "height": 800})
        shot = visit.page.screenshot(full_page=True)
        assert shot[:8] == b"\x89PNG\r\n\x1a\n" and visit.console == []
    finally:
        visit.close()
    if os.environ.get("NNX_LINT_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.write_bytes(shot)
    assert SCREENSHOT.is_file()
