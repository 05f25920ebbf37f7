"""Matching an aliasing error to a finding by the paths both name.

flax raises on a shared object in Tree Mode with the paths where it met the object twice::

    Duplicate Param( # 4 (16 B) ...
    found at paths:

      - .args[0].a.kernel
      - .args[0].b.kernel

(``jax.tree_util.keystr`` paths; graph traversals join the keys with ``/``: ``a/kernel``). The
raise happens inside the transform, under the test's call, far from the ``__init__`` that tied the
weights, so no traceback frame lies near the finding. But the finding knows the same paths: each
rule's facts type declares which facts hold them (``Facts.paths``: NNX101's ``first_path`` /
``second_path`` are ``a.kernel`` / ``b.kernel``). A finding explains the error when each of its
paths lies, as a run of whole keys, inside a different one of the error's paths (``a.kernel``
inside ``.args[0].a.kernel``): the object may be nested anywhere inside the transform's arguments.

>>> error_paths("Duplicate Param\\nfound at paths:\\n\\n  - .args[0].a.kernel\\n  - .args[0].b.kernel\\n\\nnnx.jit ...")
[('args', '0', 'a', 'kernel'), ('args', '0', 'b', 'kernel')]
>>> keys("layers[1].rngs"), keys("0/kernel"), keys("dataclasses.replace(c)")
(('layers', '1', 'rngs'), ('0', 'kernel'), None)
>>> explains([("a", "kernel"), ("b", "kernel")], error_paths("found at paths:\\n  - .args[0].a.kernel\\n  - .args[0].b.kernel"))
True
>>> explains([("a", "kernel"), ("c", "kernel")], error_paths("found at paths:\\n  - .args[0].a.kernel\\n  - .args[0].b.kernel"))
False
"""
from __future__ import annotations

import re
from nnx_lint.base.facts import ABSENT, Facts

#: The header flax writes before the paths of a duplicate (or a cycle): "found at paths:",
#: "Found duplicate at paths:".
_HEADER = re.compile(r"at paths:[ \t]*$", re.IGNORECASE | re.MULTILINE)
#: One listed path: "  - .args[0].a.kernel" (keystr) or "  a/kernel" (graph traversals).
_LISTED = re.compile(r"^\s*(?:-\s+)?(\S+)\s*$")
#: One key of a ``keystr`` path or of a finding's path: ``.name``/``name``, ``[0]``, ``['key']``.
_KEY = re.compile(r"""\.?([A-Za-z_]\w*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]""")


def keys(path: str) -> tuple[str, ...] | None:
    """The keys of ``path`` (``a.kernel``, ``.args[0]``, ``layers[1]``, ``a/0/kernel``), or None when it
    is not a path (an expression a fact holds instead: ``dataclasses.replace(c)``). A leading ``self``
    is dropped: a finding names ``self.a.kernel`` where flax names the argument."""
    text = path.strip()
    if not text:
        return None
    if "/" in text and not any(mark in text for mark in "[.'\""):
        found = tuple(text.split("/"))
        return found if all(found) else None
    found = []
    position = 0
    while position < len(text):
        match = _KEY.match(text, position)
        if match is None:
            return None
        found.append(next(group for group in match.groups() if group is not None))
        position = match.end()
    if found and found[0] == "self":
        found = found[1:]
    return tuple(found) or None


def error_paths(message: str) -> list[tuple[str, ...]]:
    """The paths an aliasing error lists after its "at paths:" header, as keys (none when it lists none)."""
    return [path for _text, path in listed_paths(message)]


def listed_paths(message: str) -> list[tuple[str, tuple[str, ...]]]:
    """(text as the error writes it, keys) of each path an aliasing error lists, once each."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for header in _HEADER.finditer(message):
        for line in message[header.end():].splitlines():
            if not line.strip() or line.strip().strip("-") == "":
                continue  # blank lines and the "---" between groups of duplicates
            listed = _LISTED.match(line)
            path = keys(listed.group(1)) if listed is not None else None
            if path is None:
                break
            if all(path != seen for _text, seen in found):
                found.append((listed.group(1), path))
    return found


def finding_paths(facts: Facts) -> list[tuple[str, ...]]:
    """The paths a finding names: each group of its facts type's declared ``paths`` concatenated,
    as keys (a fact that holds no path, an expression, say, leaves its group out)."""
    found = []
    field_of = dict(facts.keys_and_fields())  # ``paths`` names facts by their stored keys
    for group in facts.paths:
        path: list[str] = []
        for name in group:
            value = getattr(facts, field_of[name])
            if value is ABSENT or value in (None, ""):
                continue
            # A position as a number is the transform's positional argument: flax's ``.args[0]``.
            parsed = ("args", str(value)) if isinstance(value, int) and not isinstance(value, bool) else keys(str(value))
            if parsed is None:
                path = []
                break
            path.extend(parsed)
        if path:
            found.append(tuple(path))
    return found


def _inside(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    """``part`` is a run of whole keys of ``whole``."""
    return any(whole[start:start + len(part)] == part for start in range(len(whole) - len(part) + 1))


def explains(finding: list[tuple[str, ...]], error: list[tuple[str, ...]]) -> bool:
    """Each of the finding's paths lies inside a different path of the error (as many of them as the
    error lists paths: a rule that names one path needs one)."""
    if not finding or not error:
        return False
    needed = min(len(finding), len(error))

    def assign(index: int, used: frozenset[int], matched: int) -> bool:
        if matched >= needed:
            return True
        if index == len(finding):
            return False
        return any(assign(index + 1, used | {slot}, matched + 1)
                   for slot, path in enumerate(error) if slot not in used and _inside(finding[index], path)) \
            or (len(finding) > needed and assign(index + 1, used, matched))
    return assign(0, frozenset(), 0)


def display(path: tuple[str, ...]) -> str:
    """``path`` as a dotted text for the report (``a.kernel``, ``layers.0``)."""
    return ".".join(path)
