"""The editor setup snippets of docs/editors.md parse, and the ones that start a server start ours."""
from __future__ import annotations

import json
import re
import sys

import pytest

from _support import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PAGE = REPO / "docs" / "editors.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets(language: str) -> list[str]:
    return [body for found, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")) if found == language]


def test_the_page_has_a_snippet_for_each_editor():
    assert (len(snippets("json")), len(snippets("lua")), len(snippets("toml"))) == (4, 2, 2)


@pytest.mark.parametrize("text", snippets("json"))
def test_json_snippets_parse(text):
    settings = json.loads(text)
    flat = json.dumps(settings)
    if "glspc" in flat or '"lsp"' in flat:
        assert "nnx-lint" in flat and '"server"' in flat


@pytest.mark.parametrize("text", snippets("toml"))
def test_toml_snippets_parse(text):
    document = tomllib.loads(text)
    servers = document.get("language-server") or document.get("language_servers")
    assert "nnx-lint" in servers
    if "language-server" in document:  # Helix: the command itself
        assert (servers["nnx-lint"]["command"], servers["nnx-lint"]["args"]) == ("nnx-lint", ["server"])
        assert "nnx-lint" in document["language"][0]["language-servers"]


@pytest.mark.parametrize("text", snippets("lua"))
def test_lua_snippets_parse(text):
    pytest.importorskip("luaparser")
    from luaparser import ast

    ast.parse(text)  # raises on a syntax error
    assert '{ "nnx-lint", "server" }' in text
    with pytest.raises(Exception):
        ast.parse(text.replace("})", "}", 1))  # the parser does reject broken Lua
