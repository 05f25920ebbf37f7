"""TOML parsed once per text (``nnx_lint/base/toml_data.py``): the parse is the parser's, and the
parse kept in the user cache is used only for the very text, path and Python it was made from.

Whether a run used a kept parse is read from whether it imported the TOML parser at all, in a
fresh interpreter (``python -I``, as the console script runs: nothing of the checkout's
directory on ``sys.path`` but the installed package).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nnx_lint.base import toml_data
from nnx_lint.base.toml_data import TOML_PARSER, TomlError, parse_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

PYPROJECT = textwrap.dedent("""\
    [project]
    name = "demo"
    requires-python = ">=3.10"
    dependencies = ["flax>=0.12.5", "jax"]

    [tool.nnx-lint]
    select = ["NNX3", "NNX1"]
    per-file-ignores = { "tests/*" = ["NNX9"], "!src/*" = ["NNX7"], "a/*" = ["NNX1"] }
    line-length = 100
    strict = false

    [tool.other]
    ratio = 0.1
    big = 123456789012345678901234567890
    negative-zero = -0.0
    "ключ" = "значение ✓"
    nested = [[1, 2], ["a"], []]

    [[tool.other.tables]]
    name = "first"
    [[tool.other.tables]]
    name = "second"
    """)

#: Parses a file in a fresh interpreter with the memo on, and prints the parse and whether the
#: TOML parser was imported.
PROBE = textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    from nnx_lint.base import toml_data
    directory, origin = Path(sys.argv[1]), Path(sys.argv[2])
    toml_data.use_memo(directory)
    data = toml_data.parse_toml(origin.read_text(encoding="utf-8"), origin)
    print(json.dumps({"data": data, "parser_imported": toml_data.TOML_PARSER in sys.modules}, default=str))
    """)


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch):
    monkeypatch.setattr(toml_data, "_parsed", {})
    monkeypatch.setattr(toml_data, "_memo_directory", None)


def _probe(memo, origin, tmp_path):
    environment = {"XDG_CACHE_HOME": str(tmp_path / "user-cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(memo), str(origin)], capture_output=True,
                          text=True, env=environment, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_the_parse_is_the_parsers_in_order_and_a_fresh_copy_each_time():
    expected = tomllib.loads(PYPROJECT)
    first = parse_toml(PYPROJECT)
    again = parse_toml(PYPROJECT)  # from the process memo
    for parsed in (first, again):
        assert parsed == expected
        assert json.dumps(parsed) == json.dumps(expected)  # the same key order, at every level
        assert math.copysign(1.0, parsed["tool"]["other"]["negative-zero"]) == -1.0
        assert type(parsed["tool"]["other"]["big"]) is int
    again["tool"]["nnx-lint"]["select"].append("NNX2")
    assert parse_toml(PYPROJECT) == expected  # what a caller changes is its own copy


def test_invalid_toml_raises_the_parsers_message():
    with pytest.raises(tomllib.TOMLDecodeError) as parser_error:
        tomllib.loads("a = [1,\n")
    with pytest.raises(TomlError) as ours:
        parse_toml("a = [1,\n")
    assert str(ours.value) == str(parser_error.value)
    with pytest.raises(TomlError, match="nested too deeply"):
        parse_toml("a = " + "[" * 100_000 + "]" * 100_000 + "\n")


def test_a_kept_parse_spares_the_next_process_the_parser(tmp_path):
    origin, memo = tmp_path / "pyproject.toml", tmp_path / "memo"
    origin.write_text(PYPROJECT, encoding="utf-8")
    first, _ = _probe(memo, origin, tmp_path)
    assert first["parser_imported"] and first["data"] == tomllib.loads(PYPROJECT)
    assert len(list(memo.glob("*.json"))) == 1
    second, _ = _probe(memo, origin, tmp_path)
    assert not second["parser_imported"]
    assert second["data"] == first["data"]


def test_an_edit_parses_afresh_and_replaces_the_kept_parse(tmp_path):
    origin, memo = tmp_path / "pyproject.toml", tmp_path / "memo"
    origin.write_text(PYPROJECT, encoding="utf-8")
    _probe(memo, origin, tmp_path)
    edited = PYPROJECT.replace('select = ["NNX3", "NNX1"]', 'select = ["NNX2"]')
    origin.write_text(edited, encoding="utf-8")
    after, _ = _probe(memo, origin, tmp_path)
    assert after["parser_imported"]
    assert after["data"]["tool"]["nnx-lint"]["select"] == ["NNX2"]
    assert len(list(memo.glob("*.json"))) == 1  # one kept parse per file, not per text
    again, _ = _probe(memo, origin, tmp_path)
    assert not again["parser_imported"] and again["data"]["tool"]["nnx-lint"]["select"] == ["NNX2"]


def test_a_kept_parse_of_another_file_is_not_used(tmp_path):
    """The signature covers the payload, not the file's name: a kept parse moved to another
    file's name is refused, since the payload names its own path."""
    memo = tmp_path / "memo"
    one, other = tmp_path / "one", tmp_path / "other"
    for directory in (one, other):
        directory.mkdir()
        (directory / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    _probe(memo, one / "pyproject.toml", tmp_path)
    [kept_one] = memo.glob("*.json")
    _probe(memo, other / "pyproject.toml", tmp_path)
    [kept_other] = set(memo.glob("*.json")) - {kept_one}
    shutil.copyfile(kept_one, kept_other)
    moved, _ = _probe(memo, other / "pyproject.toml", tmp_path)
    assert moved["parser_imported"]


def test_a_forged_kept_parse_is_refused_with_a_warning(tmp_path):
    origin, memo = tmp_path / "pyproject.toml", tmp_path / "memo"
    origin.write_text(PYPROJECT, encoding="utf-8")
    _probe(memo, origin, tmp_path)
    [kept] = memo.glob("*.json")
    kept.write_bytes(kept.read_bytes().replace(b"NNX3", b"NNX4"))
    forged, warnings = _probe(memo, origin, tmp_path)
    assert forged["parser_imported"] and forged["data"]["tool"]["nnx-lint"]["select"] == ["NNX3", "NNX1"]
    assert "signature does not match" in warnings


def test_dates_and_times_are_never_kept(tmp_path):
    text = "released = 1979-05-27T07:32:00Z\nday = 1979-05-27\n"
    toml_data.use_memo(tmp_path / "memo")
    assert parse_toml(text, tmp_path / "dated.toml") == tomllib.loads(text)
    assert not (tmp_path / "memo").exists()
    assert parse_toml(text, tmp_path / "dated.toml") == tomllib.loads(text)  # parsed again, same answer


def test_without_the_memo_nothing_is_written(tmp_path):
    assert parse_toml(PYPROJECT, tmp_path / "pyproject.toml") == tomllib.loads(PYPROJECT)
    assert list(tmp_path.iterdir()) == []


def test_the_parser_module_is_the_one_the_plugins_load_up_front():
    from nnx_lint.engine.eager import STDLIB_IMPORTED_LATE

    assert TOML_PARSER in STDLIB_IMPORTED_LATE


#: The console script installed beside this interpreter (the one a user runs).
CONSOLE_SCRIPT = str(Path(sys.executable).with_name("nnx-lint"))


def test_the_command_line_keeps_parses_in_its_cache_and_none_with_no_cache(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (project / "clean.py").write_text("x = 1\n")
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}
    user_memo = tmp_path / "user-cache" / "nnx-lint" / "toml"

    def check(*options):
        done = subprocess.run([CONSOLE_SCRIPT, "check", "clean.py", *options], cwd=project, env=environment,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    check("--no-cache")
    assert not user_memo.exists()
    check("--cache-dir", str(tmp_path / "elsewhere"))
    assert len(list((tmp_path / "elsewhere" / "toml").glob("*.json"))) == 1 and not user_memo.exists()
    check()
    assert len(list(user_memo.glob("*.json"))) == 1
