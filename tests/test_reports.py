"""Reporters: escaping of analysed text, GitHub levels, notebooks, statistics grouping, Markdown."""
from __future__ import annotations

import doctest
import json
import re

import pytest

from nnx_lint.base import escaping, notebook_lines
from nnx_lint.cli import main

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
METADATA = "from flax import nnx\nf = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n"
COMPAT = "from flax import nnx\nf = nnx.compat.jit(g)\n"
# A setattr name is source text that a message quotes (NNX101 names both attribute paths).
HOSTILE_SETATTR = (
    "from flax import nnx\n"
    "class Tied(nnx.Module):\n"
    "    def __init__(self, rngs: nnx.Rngs):\n"
    "        self.a = nnx.Linear(2, 2, rngs=rngs)\n"
    "        setattr(self, \"\\x1b[2J\\rX\", self.a)\n"
)
WORKFLOW_COMMAND = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")
PROPERTY_KEYS = ["title", "file", "line", "col", "endLine", "endColumn"]


def run(capsys, *args: str) -> tuple[int, str]:
    # One process: forking worker processes after another test imported JAX risks a deadlock.
    code = main(["check", "--no-cache", "-j", "1", *args])
    return code, capsys.readouterr().out


def unescape_property(value: str) -> str:
    """What the Actions runner does with a property value (its ``unescapeProperty``)."""
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, char)
    return value


def parse_workflow_commands(out: str) -> list[tuple[str, dict[str, str], str]]:
    """Every line is one workflow command with exactly our properties, or the test fails."""
    commands = []
    for line in out.rstrip("\n").split("\n"):
        match = WORKFLOW_COMMAND.match(line)
        assert match, f"not a single workflow command: {line!r}"
        level, properties, message = match.groups()
        pairs = [item.split("=", 1) for item in properties.split(",")]
        assert [key for key, _ in pairs] == PROPERTY_KEYS, line
        commands.append((level, {key: unescape_property(value) for key, value in pairs}, message))
    return commands


def test_escaping_doctests():
    for module in (escaping, notebook_lines):
        failures, tried = doctest.testmod(module)
        assert tried and not failures


def test_printable_escapes_everything_isprintable_rejects():
    hostile = "a\x00\x1b[2J\r\n\t\x7f\u202e\u2028\u200b\U000e0001z"
    escaped = escaping.printable(hostile)
    assert escaped.isprintable() and escaped.startswith("a") and escaped.endswith("z")
    assert escaped == "a" + "".join(repr(c)[1:-1] for c in hostile[1:-1]) + "z"
    assert escaping.printable("é – 😀 self.w") == "é – 😀 self.w", "printable text is unchanged"
    assert escaping.printable("a\nb", keep="\n") == "a\nb"


@pytest.mark.parametrize("name", ["a\n::stop-commands::pwned\nb.py", "c,d::e.py", "f%0Ag\r.py", "h\x1bi.py"])
def test_github_file_names_cannot_inject_workflow_commands(tmp_path, monkeypatch, capsys, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(STATE_AXES)
    (tmp_path / "plain.py").write_text(METADATA)
    _, out = run(capsys, "--output-format", "github", ".")
    assert all(char.isprintable() for char in out.replace("\n", "")), repr(out)
    commands = parse_workflow_commands(out)
    assert len(commands) == 2
    files = {properties["file"] for _, properties, _ in commands}
    expected = name if "\x1b" not in name else "h\\x1bi.py"  # no runner escape exists for ESC
    assert files == {expected, "plain.py"}, "line breaks, ':' and ',' survive the round trip"


def test_github_messages_carry_no_control_characters(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tied.py").write_text(HOSTILE_SETATTR)
    _, out = run(capsys, "--output-format", "github", "tied.py")
    ((level, properties, message),) = parse_workflow_commands(out)
    assert level == "error" and properties["title"] == "NNX101 aliased-module-attribute"
    assert "`self.\\x1b[2J\\rX`" in message and "\x1b" not in out and "\r" not in out


@pytest.mark.slow
def test_text_output_escapes_control_characters_from_the_source(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tied.py").write_text(HOSTILE_SETATTR)
    (tmp_path / "x\n::warning::y\x1b[31m.py").write_text(STATE_AXES)
    code, out = run(capsys, ".")
    assert code == 1
    lines = out.rstrip("\n").split("\n")
    assert all(line.isprintable() for line in lines), repr(out)
    own = [line for line in lines if not line.startswith(("    also at ", "[*] "))]
    assert len(own) == 3, "two diagnostics and the summary, one line each (related locations indented below)"
    assert any("`self.\\x1b[2J\\rX`" in line for line in lines)
    assert any(line.startswith("x\\n::warning::y\\x1b[31m.py:2:26: NNX201 ") for line in lines)


def test_github_level_per_kind(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "axes.py").write_text(STATE_AXES)
    (tmp_path / "meta.py").write_text(METADATA)
    (tmp_path / "compat.py").write_text(COMPAT)
    (tmp_path / "broken.py").write_text("from flax import nnx\ndef f(:\n")
    _, out = run(capsys, "--output-format", "github", "--extend-select", "NNX9", ".")
    levels = {properties["title"].split()[0]: level for level, properties, _ in parse_workflow_commands(out)}
    assert levels["NNX201"] == "error"  # raises
    assert levels["NNX601"] == "warning"  # silent
    assert levels["NNX901"] == "notice"  # advisory
    assert [level for code, level in levels.items() if code.startswith("NNX0")] == ["error"]  # could not be analysed


def _notebook(cells: list[tuple[str, str | list[str]]]) -> str:
    """A notebook as Jupyter writes it (one-space indentation, one source line per element)."""
    return json.dumps({
        "cells": [{"cell_type": kind, "metadata": {},
                   "source": source if isinstance(source, str) else source}
                  for kind, source in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }, indent=1)


NOTEBOOK_CELLS = [
    ("markdown", ["# Exploring\n", "nnx.StateAxes in prose stays silent"]),
    ("code", ["from flax import nnx\n", "x = 1\n", "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))"]),
    ("raw", ["not code"]),
    ("code", ["h = nnx.vmap(g, transform_metadata={nnx.PARTITION_NAME: 'l'})\n"]),
    # A cell stored as one string: every code line sits on one line of the JSON text.
    ("code", "y = 2\nk = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"),
]


@pytest.fixture
def notebook(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = _notebook(NOTEBOOK_CELLS)
    (tmp_path / "explore.ipynb").write_text(text)
    return text


@pytest.mark.slow
def test_notebook_findings_sort_by_cell_then_line_and_count_every_cell(notebook, capsys):
    _, out = run(capsys, "explore.ipynb")
    locations = [line.split(": NNX")[0] for line in out.splitlines() if ": NNX" in line]
    # Cells are numbered among all cells, Markdown and raw included (Ruff's convention).
    assert locations == ["explore.ipynb:cell 2:3:26", "explore.ipynb:cell 4:1:17", "explore.ipynb:cell 5:2:26"]
    _, out = run(capsys, "explore.ipynb", "--output-format", "json")
    rows = [(d["cell"], d["location"]["row"], d["location"]["column"], d["code"]) for d in json.loads(out)]
    assert rows == [(2, 3, 26, "NNX201"), (4, 1, 17, "NNX601"), (5, 2, 26, "NNX201")]


def _at(text: str, line: int, column: int, length: int) -> str:
    return text.splitlines()[line - 1][column - 1:column - 1 + length]


def test_github_and_sarif_point_into_the_ipynb_text(notebook, capsys):
    _, out = run(capsys, "explore.ipynb", "--output-format", "github")
    spans = [properties for _, properties, _ in parse_workflow_commands(out)]
    # Each annotation starts exactly where the flagged code is in the JSON text.
    assert [_at(notebook, int(p["line"]), int(p["col"]), 13) for p in spans] == [
        "nnx.StateAxes", "transform_met", "nnx.StateAxes"]
    first = spans[0]
    assert notebook.splitlines()[int(first["line"]) - 1].lstrip().startswith('"f = nnx.vmap(')
    assert _at(notebook, int(first["endLine"]), int(first["endColumn"]) - 1, 1) == ")"
    _, out = run(capsys, "explore.ipynb", "--output-format", "sarif")
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in json.loads(out)["runs"][0]["results"]]
    assert [(r["startLine"], r["startColumn"]) for r in regions] == [
        (int(p["line"]), int(p["col"])) for p in spans]


def test_ipynb_locator_handles_escapes_and_duplicate_keys():
    text = '{"cells": [{"source": "ignored"}, {"cell_type": "code", "source": ["a\\n", "x", "yz"],\n' \
           ' "source": ["\\u00e9\\\\\\ud83d\\ude00\\tq = 1"]}]}'
    locator = notebook_lines.IpynbLocator(text)
    line, column = locator.locate(cell_index=1, line=1, column=5)  # the q, after é \ 😀 and a tab
    assert (line, text.splitlines()[line - 1][column - 1]) == (2, "q")
    assert locator.locate(cell_index=7, line=1, column=1) is None


@pytest.fixture
def migrating_project(tmp_path, monkeypatch):
    """Findings of every stage of the order of work, in two directories."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "train").mkdir()
    (tmp_path / "models" / "axes.py").write_text(STATE_AXES)
    (tmp_path / "models" / "tied.py").write_text(HOSTILE_SETATTR)
    (tmp_path / "train" / "meta.py").write_text(METADATA)
    (tmp_path / "train" / "more_meta.py").write_text(METADATA)
    (tmp_path / "train" / "broken.py").write_text("from flax import nnx\ndef f(:\n")
    # A file name that tries to break out of the table and ping someone.
    (tmp_path / "train" / "x|`y`<b>@team.py").write_text(STATE_AXES)
    return tmp_path


def test_statistics_group_by_file_and_directory(migrating_project, capsys):
    code, out = run(capsys, "--group-by", "directory")
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "4  train   1 raises, 2 silent, 1 linter: NNX002 (1), NNX201 (1), NNX601 (2)"
    assert lines[1] == "2  models  2 raises: NNX101 (1), NNX201 (1)"
    assert lines[2].startswith("Found 6 diagnostics in 6 files")
    _, out = run(capsys, "--statistics", "--group-by", "file", "--output-format", "json")
    rows = {row["file"]: row for row in json.loads(out)}
    assert rows["train/meta.py"] == {"file": "train/meta.py", "count": 1, "raises": 0, "silent": 1, "linter": 0,
                                     "advisory": 0, "codes": {"NNX601": 1}}
    assert len(rows) == 6
    _, out = run(capsys, "--group-by", "directory", "--output-format", "markdown")
    assert out.splitlines() == ["| directory | not analysed | raises | silent | total |", "|---|---|---|---|---|",
                                "| train | 1 | 1 | 2 | 4 |", "| models | 0 | 2 | 0 | 2 |"]
    _, out = run(capsys, "--statistics")  # grouping by rule stays the default
    assert out.splitlines()[0].split() == ["2", "NNX201", "raises", "state-axes-prefix", "(2", "files)"]


def test_markdown_summary(migrating_project, capsys):
    code, out = run(capsys, "--output-format", "markdown")
    assert code == 1
    sections = out.split("\n### ")
    assert sections[0] == "## nnx-lint: 6 findings in 6 files (6 checked)\n"
    by_family = sections[1].splitlines()
    assert by_family[2] == "| family | what | not analysed | raises | silent | total |"
    assert "| NNX2xx | prefix filters (StateAxes, DiffState, StateSharding) | 0 | 2 | 0 | 2 |" in by_family
    assert by_family[-1] == "| **total** |  | **1** | **3** | **2** | **6** |"
    assert "| train | 1 | 1 | 2 | 4 |" in sections[2] and "| models | 0 | 2 | 0 | 2 |" in sections[2]
    order = sections[3].splitlines()
    assert [line.split("**")[1] for line in order if line[:1].isdigit()] == [
        "Files that can't be analysed (NNX0xx)", "Prefix filters (NNX2xx)",
        "Other code that raises in Tree Mode", "Silent changes"]
    findings = sections[4].splitlines()[4:]
    # Without a rule-url-base, a code names the command that prints its page (tests/test_links.py).
    assert [row.split(" | ")[1] for row in findings] == [
        f"nnx-lint rule {code}" for code in ("NNX002", "NNX201", "NNX201", "NNX101", "NNX601", "NNX601")
    ], "the table follows the order of work"
    # Analysed text cannot add a column, a code span, HTML, a mention or a control character.
    assert all(row.count(" | ") == 3 for row in findings)
    hostile = next(row for row in findings if "team" in row)
    assert "x&#124;&#96;y&#96;&#60;b&#62;&#64;team.py" in hostile
    own_markup = hostile.replace("<br>also at ", "")  # the report's own line breaks between related locations
    assert not any(char in own_markup for char in "<>@`") and out.replace("\n", "").isprintable()


def test_markdown_summary_without_findings(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fine.py").write_text(COMPAT)
    assert run(capsys, "--output-format", "markdown") == (0, "## nnx-lint\n\nNo findings (1 file checked).\n")


def test_markdown_summary_with_confirmation_counts(migrating_project, monkeypatch, capsys):
    from nnx_lint.confirmation import oracle as confirmation
    from nnx_lint.confirmation.oracle import Confirmation

    verdicts = ["confirmed", "unavailable", "not-confirmed", "error", "confirmed", "confirmed"]
    monkeypatch.setattr(confirmation, "confirm", lambda diagnostics, oracle, cache_dir: {
        i: Confirmation(verdicts[i], "evidence") for i in range(len(diagnostics))})
    monkeypatch.setattr(confirmation, "check_oracle", lambda oracle: None)
    _, out = run(capsys, "--output-format", "markdown", "--confirm")
    section = out.split("### Confirmation (`--confirm`)\n\n")[1].split("\n\n")[0].splitlines()
    assert section[2:] == ["| confirmed | 3 |", "| not confirmed | 1 |", "| confirmation error | 1 |",
                           "| no reproduction | 1 |"]
    assert out.split("### Findings\n\n")[1].splitlines()[0].endswith("| message | confirmation |")


def test_rules_listing_aligns_columns_and_never_cuts_a_summary(capsys):
    from nnx_lint.engine.registry import all_rules

    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rules = all_rules()
    assert len(lines) == len(rules)
    symbol_column = {line.index(rule.symbol) for line, rule in zip(lines, rules)}
    kind_column = {line.index(f" {rule.kind} ", len(rule.code) + len(rule.symbol)) for line, rule in zip(lines, rules)}
    summary_column = {line.index(rule.summary()) for line, rule in zip(lines, rules)}
    assert len(symbol_column) == len(kind_column) == len(summary_column) == 1, "every column starts at one offset"
    nnx704 = next(line for line in lines if line.startswith("NNX704"))
    assert nnx704.endswith("`nnx.bridge.Module`) passed to an NNX transform or graph API.")


def test_no_rule_page_advises_the_deprecated_value_attribute():
    from pathlib import Path

    pages = sorted((Path(__file__).resolve().parent.parent / "docs" / "rules").glob("NNX*.md"))
    assert pages
    for page in pages:
        use_instead = page.read_text().split("## Use instead", 1)[-1].split("\n## ", 1)[0]
        assert not re.search(r"\.value\b(?!_)", use_instead), f"{page.name} advises `.value` (deprecated in flax)"
    nnx301 = (pages[0].parent / "NNX301.md").read_text()
    assert "`v.value = x`, `v.value += 1`" not in nnx301 and "the deprecated `v.value = x`" in nnx301


def test_one_word_for_a_missing_reproduction_in_tag_and_summary():
    from nnx_lint.confirmation.oracle import Confirmation
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.reporting.reporters import render_text
    from nnx_lint.engine.runner import RunResult

    finding = Diagnostic("NNX201", "state-axes-prefix", "m", "a.py", 1, 1, 1, 2, "raises")
    result = RunResult(diagnostics=[finding, finding], files_checked=1,
                       confirmations={0: Confirmation("unavailable", "why"), 1: Confirmation("confirmed", "e")})
    lines = render_text(result).splitlines()
    assert lines[0].endswith(" [no reproduction]")
    assert lines[-1] == "Confirmation: 1 confirmed, 1 no reproduction."
    assert "unavailable" not in "\n".join(lines)


def test_show_repro_prints_the_program_verbatim_and_terminal_safe():
    from nnx_lint.confirmation.oracle import Confirmation
    from nnx_lint.base.diagnostic import Diagnostic
    from nnx_lint.reporting.reporters import render_text
    from nnx_lint.engine.runner import RunResult

    program = "def run(nnx):\n    return 'x'\n\n\nprint(run(None))\n"
    finding = Diagnostic("NNX101", "aliased-module-attribute", "m", "a\x1b.py", 3, 1, 3, 2, "raises")
    result = RunResult(diagnostics=[finding], files_checked=1,
                       confirmations={0: Confirmation("confirmed", "e", program + "# \x1b[2J\n")})
    out = render_text(result, show_repro=True)
    header = "--- reproduction for NNX101 at a\\x1b.py:3 ---\n"
    block = out.split(header, 1)[1].split("\n--- end of reproduction ---")[0]
    assert block == program + "# \\x1b[2J", "verbatim, no prefix, control characters escaped"
    assert out.replace("\n", "").isprintable()


def test_configuration_errors_cannot_inject_workflow_commands(tmp_path, monkeypatch, capsys):
    """The runner reads stderr too, and the pyproject.toml of a pull request is untrusted."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.nnx-lint]\n"x\\n::stop-commands::tok\\u001b[2J" = 1\n')
    (tmp_path / "a.py").write_text(STATE_AXES)
    assert main(["check", "--no-cache", "-j", "1", "."]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.rstrip("\n").isprintable(), repr(error)
    assert "x\\n::stop-commands::tok\\x1b[2J" in error


@pytest.mark.parametrize("front_end", [
    ["-m", "flake8", "--select", "NNX"],
    ["-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n", "--disable=all", "--enable=nnx"],
])
@pytest.mark.slow
def test_plugins_escape_control_characters_too(tmp_path, front_end):
    import subprocess
    import sys

    (tmp_path / "tied.py").write_text(HOSTILE_SETATTR)
    result = subprocess.run([sys.executable, *front_end, "tied.py"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert "NNX101" in result.stdout, result.stdout + result.stderr
    assert "`self.\\x1b[2J\\rX`" in result.stdout
    assert result.stdout.replace("\n", "").isprintable(), repr(result.stdout)


def test_sarif_uris_are_uri_references(tmp_path, monkeypatch, capsys):
    from urllib.parse import unquote

    monkeypatch.chdir(tmp_path)
    name = "a b%#\n::x.py"
    (tmp_path / name).write_text(STATE_AXES)
    _, out = run(capsys, "--output-format", "sarif", ".")
    (result,) = json.loads(out)["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "a%20b%25%23%0A%3A%3Ax.py" and unquote(uri) == name


@pytest.mark.parametrize("text", ['[1, 2]', '{"cells": 5}', '{"cells": {"a": 1}}', '{"cells": [{"source": 5}]}',
                                  '{"cells": [{"source": [1, "x"]}]}', '{"cells": [[{"source": "x"}]]}'])
def test_ipynb_locator_maps_nothing_in_odd_documents(text):
    assert notebook_lines.IpynbLocator(text).locate(cell_index=0, line=1, column=1) is None
