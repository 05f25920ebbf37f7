"""Messages fit an editor's problem panel; the fix advice travels apart, as ``help``.

Every diagnostic a rule produces on its INVALID cases has a message of at most
``MAX_MESSAGE`` characters that says what breaks (and whether Tree Mode raises or
silently changes meaning), and a non-empty help. The help reaches every output: JSON
``help``, SARIF ``help`` (rule) and ``properties.help`` (result), ``--show-fixes`` in
the text format, and the rule page's "How to fix". flake8 and pylint show the message only.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from _support import REPO

from nnx_lint.cli import main
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.reporting.docs import render_rule
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.engine.registry import all_rules, rule_by_code

MAX_MESSAGE = 120

#: ``(code, case id)`` -> why that case's message may exceed ``MAX_MESSAGE``. Empty: none does.
LONG_MESSAGE_ALLOWED: dict[tuple[str, str], str] = {}

#: Rules whose help may be empty because nothing in the code can be changed. Empty: every
#: rule, NNX0xx included, has advice (save as UTF-8, report the crash, exclude generated files...).
EMPTY_HELP_ALLOWED: dict[str, str] = {}

#: A ``raises`` rule whose message says "silently" for one variant: NNX703's keyword arguments to
#: a vmapped function with ``in_axes=None`` are silently mapped over axis 0 instead of raising.
SILENT_VARIANT_OF_RAISES_RULE = {("NNX703", "vmap-grad-scan-kwargs")}

STATE_AXES = "from flax import nnx\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"


def _invalid_case_diagnostics():
    for rule in all_rules():
        for case in rule.INVALID:
            found = [d for d in lint_bytes(case.source.encode("utf-8"), "case.py", [rule],
                                           target_version=case.target_version) if d.code == rule.code]
            yield pytest.param(rule, case, found, id=f"{rule.code}-{case.id}")


INVALID_DIAGNOSTICS = list(_invalid_case_diagnostics())


@pytest.mark.parametrize(("rule", "case", "diagnostics"), INVALID_DIAGNOSTICS)
def test_message_fits_an_editor_and_help_is_apart(rule, case, diagnostics):
    assert diagnostics, "an INVALID case must produce its rule's diagnostic"
    for d in diagnostics:
        if (rule.code, case.id) not in LONG_MESSAGE_ALLOWED:
            assert len(d.message) <= MAX_MESSAGE, f"{len(d.message)} characters: {d.message}"
        if rule.code not in EMPTY_HELP_ALLOWED:
            assert d.help.strip(), f"{rule.code} gives no help for: {d.message}"
        assert d.help not in d.message and d.message not in d.help, "the message and the help say different things"
        assert "{" not in d.help.replace("{...", "") and "{" not in d.message.replace("{...", ""), "unformatted fact"
        assert "`None`" not in d.message, "a fact the message needs is missing"


@pytest.mark.parametrize(("rule", "case", "diagnostics"), INVALID_DIAGNOSTICS)
def test_message_says_what_tree_mode_does(rule, case, diagnostics):
    for d in diagnostics:
        if rule.kind == "silent" or (rule.code, case.id) in SILENT_VARIANT_OF_RAISES_RULE and "raise" not in d.message:
            assert "silently" in d.message, d.message
        elif rule.kind == "raises":
            assert re.search(r"\braises\b|Error\b", d.message), d.message


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_help_template_formats_from_plain_fact_names(rule):
    placeholders = re.findall(r"(?<!\{)\{([^{}]*)\}(?!\})", rule.help)
    assert all(re.fullmatch(r"\w+", name) for name in placeholders), placeholders
    assert rule.generic_help().count("<") >= len(placeholders)
    assert "{" not in rule.generic_help(), "every fact is shown as <name> on the rule page"


def test_report_time_templates_replace_the_class_ones():
    """NNX201 on an ``nnx.StateAxes`` built for later: the unused-filter message and help."""
    rule = rule_by_code("NNX201")
    (d,) = lint_bytes(b"from flax import nnx\naxes = nnx.StateAxes({nnx.Param: 0})\n", "case.py", [rule])
    assert d.message == rule.unused_message and d.help == rule.unused_help


def test_linter_diagnostics_carry_their_rules_help():
    rule = rule_by_code("NNX001")
    (d,) = lint_bytes("# -*- coding: ascii -*-\nfrom flax import nnx\nname = 'café'\n".encode(), "case.py", [rule])
    assert d.help == rule.help and "UTF-8" in d.help and "UTF-8" not in d.message
    braces = rule_by_code("NNX002")
    (d,) = lint_bytes(b"from flax import nnx\nx = {1: (\n", "case.py", [braces])
    assert d.message.startswith("syntax error") and d.help == braces.help


def test_help_survives_the_plain_data_round_trip():
    """The cache and the worker processes carry diagnostics as ``to_dict`` data (JSON)."""
    (d,) = lint_bytes(STATE_AXES.encode(), "case.py", [rule_by_code("NNX201")])
    assert d.help
    again = Diagnostic.from_dict(json.loads(json.dumps(d.to_dict())))
    assert again == d and again.help == d.help
    assert d.with_path("other.py").help == d.help


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "axes.py").write_text(STATE_AXES)
    (tmp_path / "second.py").write_text(STATE_AXES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _check(capsys, *args: str) -> str:
    main(["check", *args])
    return capsys.readouterr().out


def test_json_has_a_help_key(project, capsys):
    items = json.loads(_check(capsys, "--no-cache", "--output-format", "json", "axes.py"))
    (item,) = items
    rule = rule_by_code("NNX201")
    assert item["help"] == rule.help.format(transform="vmap")
    assert item["message"] == rule.message.format(argument="in_axes", transform="vmap")
    # The fix object is Ruff's (edits to apply), separate from the advice text.
    assert item["fix"]["applicability"] == "safe" and item["fix"]["message"] != item["help"]


@pytest.mark.slow
def test_help_comes_back_from_the_cache_and_from_workers(project, capsys):
    serial = json.loads(_check(capsys, "--no-cache", "-j", "1", "--output-format", "json"))
    assert all(item["help"] for item in serial)
    cache = ["--cache-dir", str(project / "cache"), "--output-format", "json"]
    first = json.loads(_check(capsys, *cache, "-j", "2"))
    cached = json.loads(_check(capsys, *cache, "-j", "1"))
    assert [i["help"] for i in first] == [i["help"] for i in cached] == [i["help"] for i in serial]


def test_sarif_rule_help_and_result_help(project, capsys):
    document = json.loads(_check(capsys, "--no-cache", "--output-format", "sarif", "axes.py"))
    (sarif_run,) = document["runs"]
    (rule,) = sarif_run["tool"]["driver"]["rules"]
    # The rule's page, which code scanning shows (issue 45), its "How to fix" included.
    assert rule["help"]["text"].startswith("# NNX201 `state-axes-prefix`")
    assert "## How to fix" in rule["help"]["text"] and "nnx.compat.<transform>" in rule["help"]["markdown"]
    (result,) = sarif_run["results"]
    assert result["properties"]["help"].endswith("keep graph mode with `nnx.compat.vmap`")
    assert result["message"] == {"text": rule_by_code("NNX201").message.format(argument="in_axes", transform="vmap")}


@pytest.mark.slow
def test_show_fixes_prints_the_help_under_each_diagnostic(project, capsys):
    plain = _check(capsys, "--no-cache", "axes.py")
    assert "help:" not in plain
    lines = _check(capsys, "--no-cache", "--show-help", "axes.py").splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("axes.py:2:") and "NNX201" in line)
    assert lines[index + 1] == "    help: " + rule_by_code("NNX201").help.format(transform="vmap")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_page_has_a_how_to_fix_section(rule):
    page = render_rule(rule)
    section = page.split("## How to fix\n\n", 1)[1].split("\n## ", 1)[0]
    assert rule.generic_help().split("`")[0].replace("<", "&lt;").replace(">", "&gt;")[:40] in section
    if rule.generic_help() != rule.help and rule.INVALID:
        assert "For the flagged cases on this page:" in section


def test_rule_page_shows_the_help_each_case_gets():
    section = render_rule(rule_by_code("NNX301")).split("## How to fix", 1)[1].split("\n## ", 1)[0]
    assert "&lt;instead&gt;" in section, "a bare fact must not be read as an HTML tag"
    assert "- `method-counter-under-jit`: Only Variable value updates propagate" in section
    assert "`nnx.Variable(jnp.array(0))`" in section


def _tool(*command: str, cwd) -> str:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300).stdout


@pytest.mark.slow
def test_flake8_and_pylint_show_the_message_only(project):
    rule = rule_by_code("NNX201")
    message = rule.message.format(argument="in_axes", transform="vmap")
    flake8 = _tool(sys.executable, "-m", "flake8", "--select", "NNX", "--format", "%(code)s|%(text)s", "axes.py",
                   cwd=project)
    assert flake8.splitlines() == [f"NNX201|{message}"]
    pylint = json.loads(_tool(sys.executable, "-m", "pylint", "--load-plugins=nnx_lint.pylint", "--persistent=n",
                              "--disable=all", "--enable=state-axes-prefix", "--output-format=json", "axes.py",
                              cwd=project))
    assert [m["message"] for m in pylint] == [f"NNX201 {message}"]


def test_show_fixes_puts_the_help_after_the_verdict_and_before_the_evidence():
    """With ``--confirm``, the verdict tag stays on the diagnostic's line."""
    from nnx_lint.confirmation.oracle import Confirmation
    from nnx_lint.reporting.reporters import render_text
    from nnx_lint.engine.runner import RunResult

    (d,) = lint_bytes(STATE_AXES.encode(), "axes.py", [rule_by_code("NNX201")])
    result = RunResult([d], files_checked=1, confirmations={0: Confirmation("confirmed", "PrefixFilterError: ...")})
    lines = render_text(result, show_help=True).splitlines()
    assert lines[0].endswith(f"{d.message} [confirmed]")
    assert lines[1] == f"    help: {d.help}"
    assert lines[2] == "    evidence: PrefixFilterError: ..."
