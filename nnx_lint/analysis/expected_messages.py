"""Assertions on an error's message, read statically: which text a test expects, and where.

``with self.assertRaisesRegex(ValueError, pattern):``, ``with pytest.raises(ValueError,
match=pattern):`` and the callable form ``self.assertRaisesRegex(ValueError, pattern, f, x)``
pass only if the block raises an error whose message ``re.search`` finds ``pattern`` in. A
rule that knows which messages only graph mode gives (NNX713) needs the pattern's text and
the calls the assertion covers.

The pattern is never compiled: it is analysed text, and a hostile pattern could make the
regular-expression engine backtrack for a very long time. Only patterns that are plain text
(``\\.``-style escapes and the ``.`` wildcard allowed) are read; anything else is left alone.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from astroid import nodes

from nnx_lint.analysis.flow import lookup

#: Methods of ``unittest.TestCase`` (and absl's) that assert a message pattern.
_REGEX_ASSERTIONS = frozenset({"assertRaisesRegex", "assertRaisesRegexp"})
#: ``pytest.raises`` asserts the message through its ``match`` keyword.
_PYTEST_RAISES = "pytest.raises"
#: Characters that make a pattern more than text with ``.`` wildcards.
_METACHARACTERS = frozenset("*+?[](){}|^$")
#: How deep a name is followed to the strings bound to it.
_MAX_DEPTH = 4


@dataclass(frozen=True)
class ExpectedMessage:
    """One assertion that a block raises an error whose message matches a pattern."""

    #: The assertion call (``self.assertRaisesRegex(...)``, ``pytest.raises(...)``).
    assertion: nodes.Call
    #: How the assertion is spelled, for messages (``assertRaisesRegex``, ``pytest.raises``).
    form: str
    #: The expression giving the pattern.
    pattern: nodes.NodeNG
    #: The code the assertion covers: the ``with`` body, or the callable and its arguments.
    covered: tuple[nodes.NodeNG, ...]


def expected_messages(node: nodes.NodeNG, qualified_name) -> Iterator[ExpectedMessage]:
    """The message assertions ``node`` makes: a ``with`` statement's items, or a call in the
    callable form. ``qualified_name`` resolves a name to its dotted import path."""
    if isinstance(node, nodes.With):
        for item, _alias in node.items:
            found = _assertion(item, qualified_name)
            if found is not None:
                form, pattern = found
                yield ExpectedMessage(item, form, pattern, tuple(node.body))
    elif isinstance(node, nodes.Call) and not isinstance(node.parent, nodes.With):
        found = _assertion(node, qualified_name)
        if found is not None and found[0] in _REGEX_ASSERTIONS and len(node.args) >= 3:
            form, pattern = found
            yield ExpectedMessage(node, form, pattern, tuple(node.args[2:]) + tuple(
                keyword.value for keyword in node.keywords or ()))


def _assertion(expression: nodes.NodeNG, qualified_name) -> tuple[str, nodes.NodeNG] | None:
    """``(form, pattern)`` when ``expression`` asserts a message pattern."""
    if not isinstance(expression, nodes.Call):
        return None
    func = expression.func
    if isinstance(func, nodes.Attribute) and func.attrname in _REGEX_ASSERTIONS:
        pattern = expression.args[1] if len(expression.args) >= 2 else _keyword(expression, "expected_regex")
        return (func.attrname, pattern) if pattern is not None else None
    terminal = func.attrname if isinstance(func, nodes.Attribute) else getattr(func, "name", None)
    if terminal == "raises" and qualified_name(func) == _PYTEST_RAISES:  # the name first: resolving costs more
        pattern = _keyword(expression, "match")
        return ("pytest.raises", pattern) if pattern is not None else None
    return None


def _keyword(call: nodes.Call, name: str) -> nodes.NodeNG | None:
    return next((keyword.value for keyword in call.keywords or () if keyword.arg == name), None)


def pattern_strings(expression: nodes.NodeNG, depth: int = 0) -> list[tuple[str, nodes.NodeNG]]:
    """Each string the pattern ``expression`` may be, with the node that gives it: a literal,
    either branch of ``a if c else b``, ``re.escape("...")`` and a local name bound to any of
    these (every binding of it in its scope: ``if c: msg = "a" else: msg = "b"``)."""
    if depth > _MAX_DEPTH:
        return []
    if isinstance(expression, nodes.Const) and isinstance(expression.value, str):
        return [(expression.value, expression)]
    if isinstance(expression, nodes.IfExp):
        return pattern_strings(expression.body, depth + 1) + pattern_strings(expression.orelse, depth + 1)
    if isinstance(expression, nodes.Call) and isinstance(expression.func, nodes.Attribute) \
            and expression.func.attrname == "escape" and len(expression.args) == 1:
        return [(_escaped(text), node) for text, node in pattern_strings(expression.args[0], depth + 1)]
    if isinstance(expression, nodes.Name):
        _scope, bindings = lookup(expression)  # bounded: a name rebound many times is no quadratic walk
        found = []
        for binding in bindings:
            assignment = binding.parent
            if isinstance(binding, nodes.AssignName) and isinstance(assignment, nodes.Assign) \
                    and len(assignment.targets) == 1 and assignment.targets[0] is binding:
                found += pattern_strings(assignment.value, depth + 1)
            else:
                return []  # a parameter, a loop variable, an unpacking: any string
        return found
    return []


def _escaped(text: str) -> str:
    """``re.escape(text)``'s pattern, as :func:`plain_text` reads it back: the text itself."""
    return "".join("\\" + character if character in _METACHARACTERS or character == "." else character
                   for character in text)


def plain_text(pattern: str) -> list[str | None] | None:
    """The pattern as characters to match, ``None`` standing for the ``.`` wildcard; None when
    the pattern uses more of the regular-expression language than escapes and ``.``."""
    characters: list[str | None] = []
    escaped = False
    for character in pattern:
        if escaped:
            if character.isalnum():
                return None  # \d, \s, \b...: a class or an anchor, not text
            characters.append(character)
            escaped = False
        elif character == "\\":
            escaped = True
        elif character == ".":
            characters.append(None)
        elif character in _METACHARACTERS:
            return None
        else:
            characters.append(character)
    return None if escaped else characters


def found_in(pattern: list[str | None], text: str) -> bool:
    """Whether ``re.search`` of the plain-text ``pattern`` (:func:`plain_text`) finds it in ``text``."""
    width = len(pattern)
    return any(all(wanted is None or wanted == text[start + offset] for offset, wanted in enumerate(pattern))
               for start in range(len(text) - width + 1))
