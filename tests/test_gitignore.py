"""gitignore(5) semantics of :mod:`nnx_lint.engine.discovery.gitignore`, file by file and through a walk."""
from __future__ import annotations

import os
import time

import pytest

from nnx_lint.engine.discovery.gitignore import Gitignore, _screen, parse, parse_line


def ignored(text: str, path: str, is_dir: bool = False) -> bool:
    """Whether one .gitignore's ``text`` ignores ``path`` (relative to its directory)."""
    state = False
    for pattern in parse(text):
        if pattern.matches(path, is_dir):
            state = not pattern.negated
    return state


SEMANTICS = [
        ("build", "build", True, True),
        ("build", "src/build", True, True),  # no slash: any depth
        ("build", "src/build.py", False, False),
        ("/build", "build", True, True),  # a leading slash anchors
        ("/build", "src/build", True, False),
        ("src/gen", "src/gen", True, True),  # a middle slash anchors too
        ("src/gen", "a/src/gen", True, False),
        ("out/", "out", True, True),  # a trailing slash: directories only
        ("out/", "out", False, False),
        ("*.py", "a/b/c.py", False, True),
        ("a/*.py", "a/b/c.py", False, False),  # `*` never matches `/`
        ("a/?.py", "a/c.py", False, True),
        ("a/?.py", "a/cc.py", False, False),
        ("gen_[0-9].py", "gen_7.py", False, True),
        ("gen_[!0-9].py", "gen_7.py", False, False),
        ("**/cache", "x/y/cache", True, True),
        ("**/cache", "cache", True, True),
        ("a/**/b", "a/b", True, True),  # `/**/`: zero or more directories
        ("a/**/b", "a/x/y/b", True, True),
        ("docs/**", "docs", True, False),  # `/**`: what is inside, not the directory
        ("docs/**", "docs/x/y.py", False, True),
        ("*.py\n!keep.py", "keep.py", False, False),  # the last match decides
        ("!keep.py\n*.py", "keep.py", False, True),
        ("\\#hash.py", "#hash.py", False, True),  # escapes
        ("\\!bang.py", "!bang.py", False, True),
        ("# a comment\n\n", "# a comment", False, False),
        ("trail.py   ", "trail.py", False, True),  # trailing spaces dropped
        ("[unclosed", "[unclosed", False, True),
]


@pytest.mark.parametrize(("text", "path", "is_dir", "expected"), SEMANTICS)
def test_gitignore_pattern_semantics(text, path, is_dir, expected):
    assert ignored(text, path, is_dir) is expected


@pytest.mark.parametrize(("text", "path", "is_dir", "expected"), SEMANTICS)
def test_the_screened_matcher_agrees(text, path, is_dir, expected):
    """``Gitignore.ignores`` (which skips a layer its regular expression screens out) gives the
    pattern-by-pattern verdict."""
    root = os.path.abspath("gitignore-root")
    assert Gitignore(((root, parse(text)),)).ignores(os.path.join(root, path), is_dir) is expected


def test_the_screen_lets_through_every_path_a_pattern_matches():
    """The screen may let a path through that no pattern matches, never the other way round."""
    texts = sorted({text for text, *_ in SEMANTICS} | {"docs*/**/_auto", "a/[bc]/d", "x?y/**"})
    paths = sorted({path for _, path, *_ in SEMANTICS} | {"docs1/x/_auto", "a/b/d", "xzy/q", "a/c/d/e"})
    for text in texts:
        patterns = parse(text)
        screen = _screen(patterns)
        assert screen is not None or not patterns, text
        for path in paths:
            for is_dir in (False, True):
                if any(pattern.matches(path, is_dir) for pattern in patterns):
                    assert screen.fullmatch(path), (text, path)


def test_a_hostile_pattern_costs_linear_time():
    pattern = parse_line("*a" * 40 + "*b")
    started = time.perf_counter()
    assert not pattern.matches("a" * 250, is_dir=False)
    assert time.perf_counter() - started < 1.0
    assert _screen((pattern,)) is None  # its shape is never handed to the regular expression engine


def test_nested_files_layer_and_negate(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!keep.py\n")
    top = Gitignore.above(tmp_path, tmp_path).descend(str(tmp_path))
    sub = top.descend(str(tmp_path / "sub"))
    assert top.ignores(str(tmp_path / "a.py"), is_dir=False)
    assert sub.ignores(str(tmp_path / "sub" / "other.py"), is_dir=False)
    assert not sub.ignores(str(tmp_path / "sub" / "keep.py"), is_dir=False), "a deeper file re-includes"
    # Anchored patterns are relative to their own file's directory.
    (tmp_path / "sub" / ".gitignore").write_text("/local.txt\n")
    sub = top.descend(str(tmp_path / "sub"))
    assert sub.ignores(str(tmp_path / "sub" / "local.txt"), is_dir=False)
    assert not sub.ignores(str(tmp_path / "sub" / "deeper" / "local.txt"), is_dir=False)


def test_the_files_above_the_walk_and_info_exclude_apply(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch/\n")
    (tmp_path / ".gitignore").write_text("/pkg/gen/\n")
    (tmp_path / "pkg").mkdir()
    above = Gitignore.above(tmp_path / "pkg", tmp_path)
    assert above.ignores(str(tmp_path / "pkg" / "gen"), is_dir=True)
    assert above.ignores(str(tmp_path / "pkg" / "scratch"), is_dir=True)
    assert not above.ignores(str(tmp_path / "pkg" / "model"), is_dir=True)


def test_an_oversized_or_binary_gitignore_is_skipped(tmp_path):
    (tmp_path / ".gitignore").write_bytes(b"\xff\xfe*.py\n")
    assert not Gitignore().descend(str(tmp_path)).ignores(str(tmp_path / "a.py"), is_dir=False)
