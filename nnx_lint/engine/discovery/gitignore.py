"""``.gitignore`` files, read as data, for ``respect-gitignore`` (on by default, as in Ruff).

The patterns are parsed here, as data, with git's rules (gitignore(5)); git is asked only
which files it tracks, which no pattern hides (:mod:`nnx_lint.engine.discovery.tracked`):

- blank lines and ``#`` comments are skipped; trailing spaces are dropped unless escaped;
  a backslash escapes the next character (``\\#``, ``\\!``, ``\\*``);
- ``!`` negates: the last matching pattern decides, and the patterns of a deeper
  ``.gitignore`` come after those of the directories above it;
- a trailing ``/`` matches directories only;
- a ``/`` at the start or in the middle anchors the pattern to the ``.gitignore``'s
  directory; without one it matches at any depth;
- ``*``, ``?`` and ``[...]`` never match ``/``; ``**/`` matches any number of directories,
  a trailing ``/**`` everything inside (not the directory itself);
- a file whose directory is ignored cannot be re-included: the walk never enters it.

Matching is by segment with a set-of-states simulation, so a hostile pattern such as
``*a*a*a*a*b`` costs time linear in the path, never exponential. A regular expression only
screens a directory's patterns (:func:`_screen`): one C-speed test tells most paths that no
pattern of the layer matches; it is built only from patterns whose shape keeps backtracking
polynomial (at most one ``*`` per segment and one ``**``), and a match is confirmed by the
simulation.
A ``.gitignore`` over 1 MiB, unreadable or not UTF-8 is skipped. ``.git/info/exclude`` at
the top of the walk is read too; the user's global excludes file is not (it would make the
result depend on the machine).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

#: Files larger than this are not read (a .gitignore is a few KiB).
MAX_GITIGNORE_BYTES = 2**20

_STAR, _ANY = "*", "?"


@dataclass(frozen=True)
class _Segment:
    """One ``/``-free piece of a pattern: literal characters, ``?``, ``*`` and ``[...]`` classes."""

    tokens: tuple  # (kind, value): ("literal", char), ("any", None), ("star", None), ("class", matcher)

    def __post_init__(self) -> None:
        # Fast paths for the common shapes (`build`, `*.pyc`); walks test every file against them.
        kinds = [kind for kind, _ in self.tokens]
        literal = "".join(value for kind, value in self.tokens if kind == "literal")
        object.__setattr__(self, "_literal", literal if all(k == "literal" for k in kinds) else None)
        suffix = kinds[:1] == ["star"] and all(k == "literal" for k in kinds[1:])
        object.__setattr__(self, "_suffix", literal if suffix else None)

    def matches(self, name: str) -> bool:
        """Whether the whole of ``name`` matches (set-of-positions simulation: O(len * tokens))."""
        if self._literal is not None:
            return name == self._literal
        if self._suffix is not None:
            return name.endswith(self._suffix)
        states = self._closure({0})
        for char in name:
            following = set()
            for index in states:
                if index == len(self.tokens):
                    continue
                kind, value = self.tokens[index]
                if kind == "star":
                    following.add(index)
                elif kind == "any" or (kind == "literal" and value == char) or (kind == "class" and value(char)):
                    following.add(index + 1)
            states = self._closure(following)
            if not states:
                return False
        return len(self.tokens) in states

    def _closure(self, states: set[int]) -> set[int]:
        # A star may match nothing: its state also stands at the next token.
        result = set(states)
        for index in sorted(states):
            while index < len(self.tokens) and self.tokens[index][0] == "star":
                index += 1
                result.add(index)
        return result


def _class_matcher(body: str):
    negated = body[:1] in ("!", "^")
    body = body[1:] if negated else body
    ranges: list[tuple[str, str]] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body):
            index += 1
            char = body[index]
        if index + 2 < len(body) and body[index + 1] == "-":
            ranges.append((char, body[index + 2]))
            index += 3
        else:
            ranges.append((char, char))
            index += 1

    def matches(char: str) -> bool:
        return char != "/" and any(low <= char <= high for low, high in ranges) != negated

    return matches


def _segment(text: str) -> _Segment:
    tokens: list[tuple] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            tokens.append(("literal", text[index + 1]))
            index += 2
        elif char == "*":
            if not tokens or tokens[-1][0] != "star":  # `a**b` is `a*b`; runs cost nothing extra
                tokens.append(("star", None))
            index += 1
        elif char == "?":
            tokens.append(("any", None))
            index += 1
        elif char == "[" and text.find("]", index + 2) != -1:
            close = text.find("]", index + 2)  # `[]a]`: a `]` first in the class is a member
            tokens.append(("class", _class_matcher(text[index + 1:close])))
            index = close + 1
        else:
            tokens.append(("literal", char))
            index += 1
    return _Segment(tuple(tokens))


@dataclass(frozen=True)
class Pattern:
    """One line of a ``.gitignore``: its segments (``None`` for ``**``), and its flags."""

    segments: tuple
    negated: bool
    directory_only: bool
    #: A trailing ``/**``: matches what lies inside the directory, not the directory.
    inside_only: bool

    def matches(self, relative: str, is_dir: bool) -> bool:
        """Whether the ``/``-separated path ``relative`` (to the .gitignore's directory) matches."""
        if self.directory_only and not is_dir:
            return False
        parts = relative.split("/")
        segments = self.segments
        if self.inside_only:
            return _match_inside(segments[:-1], parts)  # `abc/**`: what is inside `abc`, not `abc`
        return _match_parts(segments, parts)


def _match_inside(segments: tuple, parts: list[str]) -> bool:
    """``segments`` followed by one or more parts: some proper prefix of ``parts`` matches."""
    return any(_match_parts(segments, parts[:end]) for end in range(1, len(parts)))


def _match_parts(segments: tuple, parts: list[str]) -> bool:
    """Segments (``None``: ``**``, any number of parts) against path parts, by dynamic programming."""
    if len(segments) == 2 and segments[0] is None and segments[1] is not None:
        return bool(parts) and segments[1].matches(parts[-1])  # `name`: the last part only
    reachable = {0}  # how many parts the segments so far can have consumed
    for segment in segments:
        if segment is None:
            reachable = set(range(min(reachable), len(parts) + 1)) if reachable else set()
        else:
            reachable = {n + 1 for n in reachable if n < len(parts) and segment.matches(parts[n])}
        if not reachable:
            return False
    return len(parts) in reachable


def parse_line(line: str) -> Pattern | None:
    """The pattern of one ``.gitignore`` line, or None for a blank line or a comment.

    >>> parse_line("build/").matches("src/build", is_dir=True)
    True
    >>> parse_line("/build").matches("src/build", is_dir=True)
    False
    >>> parse_line("docs/**").matches("docs", is_dir=True)
    False
    """
    line = line.rstrip("\r\n")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]  # trailing spaces are dropped unless escaped
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    directory_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    parts = line.split("/")
    inside_only = len(parts) > 1 and parts[-1] == "**"
    segments = tuple(None if part == "**" else _segment(part) for part in parts)
    if not anchored:
        segments = (None, *segments)  # matches at any depth below the .gitignore
    return Pattern(segments, negated, directory_only, inside_only)


def parse(text: str) -> tuple[Pattern, ...]:
    """Every pattern of a ``.gitignore`` file's text, in order."""
    return tuple(p for p in map(parse_line, text.splitlines()) if p is not None)


def _read_patterns(file: str) -> tuple[Pattern, ...]:
    """The patterns of ``file``; none if it is missing, not a regular file, too large or not UTF-8."""
    from nnx_lint.base.bounds import ParseFailure, read_bounded

    if not os.path.isfile(file):
        return ()
    try:
        data = read_bounded(file, MAX_GITIGNORE_BYTES)
    except ParseFailure:
        return ()
    if len(data) > MAX_GITIGNORE_BYTES:
        return ()
    try:
        return parse(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        return ()


@dataclass(frozen=True)
class Gitignore:
    """The ``.gitignore`` patterns in force in one directory: ``(directory, patterns)`` layers,
    outermost first. :meth:`descend` adds a subdirectory's file."""

    layers: tuple[tuple[str, tuple[Pattern, ...]], ...] = ()

    def __post_init__(self) -> None:
        # One screen per layer, made with the matcher (asked for every path of the walk).
        object.__setattr__(self, "_screens", tuple(_screen(patterns) for _directory, patterns in self.layers))

    @classmethod
    def above(cls, start: Path, top: Path) -> Gitignore:
        """The patterns in force where a walk enters directory ``start`` (before its own
        ``.gitignore``, which :meth:`descend` adds): those of every directory from ``top`` (the
        repository's top, or the project root) down to ``start``'s parent, and
        ``.git/info/exclude`` at ``top``."""
        start_text, top_text = os.path.abspath(start), os.path.abspath(top)
        directories = [start_text]
        while directories[-1] != top_text and os.path.dirname(directories[-1]) != directories[-1]:
            directories.append(os.path.dirname(directories[-1]))
        if directories[-1] != top_text:
            directories = [start_text]  # `start` is not below `top`: only its own file
        matcher = cls()
        exclude = _read_patterns(os.path.join(directories[-1], ".git", "info", "exclude"))
        if exclude:
            matcher = cls(((directories[-1], exclude),))
        for directory in reversed(directories[1:]):
            matcher = matcher.descend(directory)
        return matcher

    def descend(self, directory: str) -> Gitignore:
        """The patterns in force in ``directory``, a subdirectory of this one's."""
        patterns = _read_patterns(os.path.join(directory, ".gitignore"))
        if not patterns:
            return self
        return Gitignore((*self.layers, (os.path.abspath(directory), patterns)))

    def ignores(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (in a directory this matcher was built for) is ignored."""
        absolute = os.path.abspath(path)
        ignored = False
        for (directory, patterns), screen in zip(self.layers, self._screens):
            prefix = directory.rstrip(os.sep) + os.sep
            if not absolute.startswith(prefix):
                continue
            relative = absolute[len(prefix):].replace(os.sep, "/")
            if screen is not None and screen.fullmatch(relative) is None:
                continue  # no pattern of this layer matches: it leaves the verdict as it is
            for pattern in patterns:
                if pattern.negated == ignored and pattern.matches(relative, is_dir):
                    ignored = not pattern.negated
        return ignored


def _screen(patterns: tuple[Pattern, ...]) -> re.Pattern | None:
    """One regular expression that every path some pattern of ``patterns`` matches also
    matches (it may match more: ``[...]`` is any character, directories are not told apart),
    or None when a pattern's shape could make it backtrack badly (then every pattern is
    simulated, as before)."""
    alternatives = []
    for pattern in patterns:
        segments = pattern.segments[:-1] if pattern.inside_only else pattern.segments
        stars = [sum(kind == "star" for kind, _ in segment.tokens) for segment in segments if segment is not None]
        if sum(segment is None for segment in segments) > 1 or any(count > 1 for count in stars):
            return None
        alternatives.append(_regex_of(segments) + ("/.+" if pattern.inside_only else ""))
    return re.compile("|".join(f"(?:{alternative})" for alternative in alternatives)) if alternatives else None


def _regex_of(segments: tuple) -> str:
    """The regular expression of a pattern's segments (``None``: ``**``, any number of parts)."""
    text, after_any = "", True
    for index, segment in enumerate(segments):
        separator = "" if index == 0 or after_any else "/"
        if segment is None:
            last = index == len(segments) - 1
            text += (".*" if index == 0 else "(?:/.*)?") if last else separator + "(?:[^/]+/)*"
            after_any = True
            continue
        text += separator + "".join(_TOKEN_REGEX[kind] if kind != "literal" else re.escape(value)
                                    for kind, value in segment.tokens)
        after_any = False
    return text


#: What each non-literal token matches in :func:`_regex_of` (a class as any character: a superset).
_TOKEN_REGEX = {"star": "[^/]*", "any": "[^/]", "class": "[^/]"}


def walk_top(start: Path, project_root: Path) -> Path:
    """Where the ``.gitignore`` files in force at ``start`` begin: the nearest directory at or
    above ``start`` holding ``.git`` (a repository's top), else the project root when
    ``start`` lies below it, else ``start`` itself."""
    start = Path(os.path.abspath(start))
    for directory in (start, *start.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    root = Path(os.path.abspath(project_root))
    return root if start == root or root in start.parents else start
