"""The documented GitHub Actions workflow: valid YAML, valid nnx-lint command lines, and
the SARIF step really produces what the upload step uploads."""
from __future__ import annotations

import json
import shlex
import shutil

import pytest
from _support import REPO

from nnx_lint.cli import build_parser, main

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[test]')")

WORKFLOW = REPO / "docs" / "github-actions.yml"
_SHELL_OPERATORS = {">", ">>", "|", "||", "&&", ";", "2>", "2>&1"}


def _steps() -> list[dict]:
    document = yaml.safe_load(WORKFLOW.read_text())
    return [step for job in document["jobs"].values() for step in job["steps"]]


def _nnx_lint_commands() -> list[tuple[list[str], list[str]]]:
    """Each ``nnx-lint`` command of a ``run:`` step: its arguments, and the shell words after them."""
    commands = []
    for step in _steps():
        for line in step.get("run", "").splitlines():
            words = shlex.split(line)
            if words[:1] != ["nnx-lint"]:
                continue
            end = next((i for i, w in enumerate(words) if w in _SHELL_OPERATORS), len(words))
            commands.append((words[1:end], words[end:]))
    return commands


def test_the_workflow_is_in_the_guide_verbatim():
    assert WORKFLOW.read_text() in (REPO / "docs" / "github-actions.md").read_text()


def test_every_nnx_lint_command_line_parses():
    commands = _nnx_lint_commands()
    assert len(commands) >= 2
    parser = build_parser()
    for arguments, _shell in commands:
        args = parser.parse_args(arguments)  # exits (SystemExit) on an invalid command line
        assert args.command == "check"


def test_sarif_is_written_then_uploaded_and_the_gate_uses_a_baseline():
    document = yaml.safe_load(WORKFLOW.read_text())
    (job,) = document["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    upload = next(s for s in _steps() if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    sarif_commands = [(a, shell) for a, shell in _nnx_lint_commands() if "sarif" in a]
    (arguments, shell), = sarif_commands
    assert "--exit-zero" in arguments and shell[:2] == [">", upload["with"]["sarif_file"]]
    gate = [a for a, _ in _nnx_lint_commands() if "--baseline" in a]
    assert gate and "--exit-zero" not in gate[0]


def test_the_sarif_step_runs_on_the_example(tmp_path, monkeypatch, capsys):
    shutil.copytree(REPO / "docs" / "example", tmp_path / "example")
    monkeypatch.chdir(tmp_path)
    (arguments, _shell), = [(a, s) for a, s in _nnx_lint_commands() if "sarif" in a]
    assert main(arguments) == 0
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"NNX201", "NNX202"}


@pytest.mark.parametrize("baselined", [True, False])
def test_the_gate_step_passes_with_the_baseline_and_fails_without(tmp_path, monkeypatch, capsys, baselined):
    shutil.copytree(REPO / "docs" / "example", tmp_path / "example")
    monkeypatch.chdir(tmp_path)
    (gate, _shell), = [(a, s) for a, s in _nnx_lint_commands() if "--baseline" in a]
    baseline = gate[gate.index("--baseline") + 1]
    if baselined:
        assert main(["check", "--write-baseline", baseline]) == 0
    else:
        (tmp_path / baseline).write_text('{"version": 1, "findings": []}')
    capsys.readouterr()
    assert main(gate) == (0 if baselined else 1)
    out = capsys.readouterr().out
    assert ("::error" in out) != baselined


def _expand(text: str, variables: dict[str, str]) -> str:
    """GitHub's ``${{ ... }}`` expressions of the workflow, with ``variables`` for their values."""
    import re

    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda match: variables[match.group(1)], text)


def test_nnx_lint_comes_from_the_repository_the_variables_name_and_sarif_links_its_pages(tmp_path, monkeypatch,
                                                                                           capsys):
    """Issue 45: no address of an unpublished package or repository; the install and the rule links
    follow the two repository variables, and the SARIF step is given ``--rule-url-base``."""
    text = WORKFLOW.read_text()
    assert "github.com/nnx-lint/nnx-lint" not in text and "<commit>" not in text
    variables = {"github.server_url": "https://github.com", "vars.NNX_LINT_REPOSITORY": "acme/nnx-lint",
                 "vars.NNX_LINT_REF": "0123abc"}
    (job,) = yaml.safe_load(text)["jobs"].values()
    install = next(step["run"] for step in job["steps"] if step.get("name") == "Install nnx-lint")
    assert shlex.split(_expand(install, variables)) == [
        "pip", "install", "nnx-lint @ git+https://github.com/acme/nnx-lint@0123abc"]
    pages = _expand(job["env"]["RULE_PAGES"], variables)
    assert pages == "https://github.com/acme/nnx-lint/blob/0123abc/docs/rules/"
    assert (REPO / "docs" / "rules" / "NNX201.md").is_file()  # what the link names, in nnx-lint's repository
    (arguments, _shell), = [(a, s) for a, s in _nnx_lint_commands() if "sarif" in a]
    arguments = [pages if word == "$RULE_PAGES" else word for word in arguments]
    assert "--rule-url-base" in arguments
    shutil.copytree(REPO / "docs" / "example", tmp_path / "example")
    monkeypatch.chdir(tmp_path)
    assert main(arguments) == 0
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert {rule["helpUri"] for rule in rules} >= {pages + "NNX201.md", pages + "NNX202.md"}
    assert all(rule["help"]["markdown"].startswith(f"# {rule['id']} ") for rule in rules)
