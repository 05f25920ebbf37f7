"""Pinned calls fit the project's line length (issue 27, item 8), run as a user runs it:
``nnx-lint check --fix`` in a temporary project configured through each tool a team may
already use, and ``--show-settings`` naming the value and where it came from."""
from __future__ import annotations

import pytest

from test_ruff_conventions import check

pytest.importorskip("libcst")

#: One NNX301 whose pin turns line 11 into ``PINNED`` (72 characters).
SOURCE = '''\
from flax import nnx


def loss_fn(model):
    model.count += 1
    return 0.0


@nnx.jit(graph=True, graph_updates=True)
def step(model, inputs):
    {target} = nnx.grad(loss_fn)(model)
    return {target}
'''
PINNED = "    gradients = nnx.grad(loss_fn, graph=True, graph_updates=True)(model)"
WRAPPED = """\
    gradients = nnx.grad(
        loss_fn,
        graph=True,
        graph_updates=True,
    )(model)
"""
#: Under the limit the tests configure, which the pinned line (72) exceeds.
NARROW = 70

#: Each place a line length is read from: file name -> its text with the limit ``{n}``.
SOURCES = {
    "nnx-lint": ("pyproject.toml", "[tool.nnx-lint]\nline-length = {n}\n", "pyproject.toml [tool.nnx-lint]"),
    "ruff-pyproject": ("pyproject.toml", "[tool.ruff]\nline-length = {n}\n", "pyproject.toml [tool.ruff]"),
    "ruff.toml": ("ruff.toml", "line-length = {n}\n", "ruff.toml"),
    ".ruff.toml": (".ruff.toml", "line-length = {n}\n", ".ruff.toml"),
    "black": ("pyproject.toml", "[tool.black]\nline-length = {n}\n", "pyproject.toml [tool.black]"),
    "pyink": ("pyproject.toml", "[tool.pyink]\nline-length = {n}\n", "pyproject.toml [tool.pyink]"),
    ".flake8": (".flake8", "[flake8]\nmax-line-length = {n}\n", ".flake8 [flake8]"),
    "setup.cfg": ("setup.cfg", "[flake8]\nmax-line-length = {n}\n", "setup.cfg [flake8]"),
    "tox.ini": ("tox.ini", "[flake8]\nmax-line-length = {n}\n", "tox.ini [flake8]"),
    "pylint-pyproject": ("pyproject.toml", "[tool.pylint.format]\nmax-line-length = {n}\n",
                         "pyproject.toml [tool.pylint.format]"),
    ".pylintrc": (".pylintrc", "[FORMAT]\nmax-line-length = {n}\n", ".pylintrc [FORMAT]"),
}


def _project(tmp_path, files: dict[str, str], target: str = "gradients"):
    for name, text in files.items():
        path = tmp_path / name
        path.write_text(path.read_text() + text if path.exists() else text)
    if not (tmp_path / "pyproject.toml").exists():
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(SOURCE.format(target=target))
    return tmp_path


def _fix(project) -> str:
    result = check(project, "model.py", "--fix", "--exit-zero")
    assert result.returncode == 0, result.stderr
    assert "Fixed 1 diagnostic (NNX301: 1)." in result.stderr
    return (project / "model.py").read_text()


def _shown(project) -> str:
    result = check(project, ".", "--show-settings")
    assert result.returncode == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if line.startswith("line-length = "))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.slow
def test_each_source_sets_the_limit_the_pin_is_wrapped_to(tmp_path, source):
    name, text, shown = SOURCES[source]
    project = _project(tmp_path, {name: text.format(n=NARROW)})
    assert _shown(project) == f"line-length = {NARROW} ({shown})"
    fixed = _fix(project)
    assert WRAPPED in fixed, fixed
    assert max(len(line) for line in fixed.splitlines()) <= NARROW


@pytest.mark.slow
def test_without_configuration_the_limit_is_88(tmp_path):
    project = _project(tmp_path, {})
    assert _shown(project) == "line-length = 88 (default)"
    assert PINNED + "\n" in _fix(project)  # 72 fits 88: one line, as before
    long_name = "gradients_of_the_loss_with_respect_to_every_parameter"
    fixed = _fix(_project(tmp_path / "long" if (tmp_path / "long").mkdir() is None else tmp_path, {}, long_name))
    assert f"    {long_name} = nnx.grad(\n        loss_fn,\n" in fixed
    assert max(len(line) for line in fixed.splitlines()) <= 88


PRECEDENCE = ["nnx-lint", ".ruff.toml", "ruff.toml", "ruff-pyproject", "black", "pyink", ".flake8", "setup.cfg",
              "tox.ini", "pylint-pyproject", ".pylintrc"]


def _layered(project, limits: dict[str, int]):
    files: dict[str, str] = {}
    for source, limit in limits.items():
        name, text, _ = SOURCES[source]
        files[name] = files.get(name, "") + text.format(n=limit)
    return _project(project, files)


@pytest.mark.parametrize("higher", PRECEDENCE[:-1])
def test_precedence(tmp_path, higher):
    """Each source wins over every source below it (all present at once)."""
    lower = PRECEDENCE[PRECEDENCE.index(higher) + 1:]
    project = _layered(tmp_path, {source: 100 + i for i, source in enumerate([higher, *lower])})
    assert _shown(project) == f"line-length = 100 ({SOURCES[higher][2]})"


@pytest.mark.slow
def test_the_winning_limit_is_the_one_the_fix_follows(tmp_path):
    """Narrow over wide wraps, wide over narrow does not."""
    for limit_high, limit_low, wraps in ((NARROW, 120, True), (120, NARROW, False)):
        project = tmp_path / f"{limit_high}"
        project.mkdir()
        fixed = _fix(_layered(project, {"nnx-lint": limit_high, "ruff.toml": limit_low}))
        assert (WRAPPED in fixed) is wraps and (PINNED + "\n" in fixed) is not wraps, fixed


@pytest.mark.slow
def test_a_multi_line_call_keeps_its_comments(tmp_path):
    project = _project(tmp_path, {"ruff.toml": f"line-length = {NARROW}\n"})
    (project / "model.py").write_text(SOURCE.format(target="gradients").replace(
        "nnx.grad(loss_fn)(model)", "nnx.grad(  # the loss\n        loss_fn,  # of the model\n    )(model)"))
    fixed = _fix(project)
    assert ("    gradients = nnx.grad(  # the loss\n        loss_fn,  # of the model\n        graph=True,\n"
            "        graph_updates=True,\n    )(model)\n") in fixed, fixed


@pytest.mark.parametrize("value", ["0", "321", "true", '"100"', "88.5"])
def test_an_invalid_line_length_is_one_clean_error(tmp_path, value):
    project = _project(tmp_path, {"pyproject.toml": f"[tool.nnx-lint]\nline-length = {value}\n"})
    result = check(project, "model.py")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "`line-length` must be a whole number from 1 to 320" in result.stderr


#: ``WRAPPED`` at an indent width of 2 (the call's own line keeps the file's indentation).
WRAPPED_BY_2 = """\
    gradients = nnx.grad(
      loss_fn,
      graph=True,
      graph_updates=True,
    )(model)
"""

#: Each place an indent width is read from: file name -> its text with the width ``{n}``.
INDENT_SOURCES = {
    "ruff-pyproject": ("pyproject.toml", "[tool.ruff]\nindent-width = {n}\n", "pyproject.toml [tool.ruff]"),
    "ruff.toml": ("ruff.toml", "indent-width = {n}\n", "ruff.toml"),
    ".ruff.toml": (".ruff.toml", "indent-width = {n}\n", ".ruff.toml"),
    # flax's own configuration: pyink with Google's two-space indentation.
    "pyink": ("pyproject.toml", "[tool.pyink]\npyink-indentation = {n}\n", "pyproject.toml [tool.pyink]"),
}


def _shown_indent(project) -> str:
    result = check(project, ".", "--show-settings")
    assert result.returncode == 0, result.stderr
    return next(line for line in result.stdout.splitlines() if line.startswith("indent-width = "))


@pytest.mark.parametrize("source", INDENT_SOURCES)
@pytest.mark.slow
def test_the_wrapped_pin_is_indented_by_the_configured_indent_width(tmp_path, source):
    name, text, shown = INDENT_SOURCES[source]
    project = _project(tmp_path, {name: text.format(n=2), ".flake8": f"[flake8]\nmax-line-length = {NARROW}\n"})
    assert _shown_indent(project) == f"indent-width = 2 ({shown})"
    fixed = _fix(project)
    assert WRAPPED_BY_2 in fixed, fixed


@pytest.mark.slow
def test_ruff_files_win_over_pyink_for_the_indent_width(tmp_path):
    project = _project(tmp_path, {"pyproject.toml": "[tool.pyink]\npyink-indentation = 2\n",
                                  "ruff.toml": f"indent-width = 4\nline-length = {NARROW}\n"})
    assert _shown_indent(project) == "indent-width = 4 (ruff.toml)"
    assert WRAPPED in _fix(project)


@pytest.mark.slow
def test_without_an_indent_width_the_file_s_own_indentation_is_used(tmp_path):
    """A file indented by two spaces gets its wrapped pin indented by two, one by four by four."""
    project = _project(tmp_path, {"ruff.toml": f"line-length = {NARROW - 2}\n"})
    assert _shown_indent(project) == "indent-width = the file's own (not configured)"
    two = SOURCE.format(target="gradients").replace("\n    ", "\n  ")
    (project / "model.py").write_text(two)
    fixed = _fix(project)
    assert "  gradients = nnx.grad(\n    loss_fn,\n    graph=True,\n    graph_updates=True,\n  )(model)\n" in fixed, fixed
    (project / "model.py").write_text(SOURCE.format(target="gradients"))
    assert WRAPPED in _fix(project)
