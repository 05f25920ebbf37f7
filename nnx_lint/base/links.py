"""Where a rule's documentation page is, for the ``url`` of the JSON output, SARIF's
``helpUri``, Markdown links and the language server.

nnx-lint has no published web site. A team that publishes the pages sets ``rule-url-base``
under ``[tool.nnx-lint]`` (or ``--rule-url-base``): a prefix to which ``CODE.md`` is appended,
or a template holding ``{code}``. Without it, the reports that leave this machine (JSON's
``url``, SARIF's ``helpUri``) carry no link, never a path of this machine, and SARIF carries
the page itself; only the editor (the language server, on the same machine) links the page
shipped inside the installed package (``nnx_lint/reporting/pages/rules/NNX201.md``, generated
by ``python -m nnx_lint.docs`` with ``docs/rules/``) as a ``file://`` URI.

>>> rule_url("NNX201", "https://example.org/rules/")
'https://example.org/rules/NNX201.md'
>>> rule_url("NNX201", "https://example.org/rules/{code}.html")
'https://example.org/rules/NNX201.html'
>>> rule_url("NNX201").startswith("file://") and rule_url("NNX201").endswith("/pages/rules/NNX201.md")
True
"""
from __future__ import annotations

from pathlib import Path

#: The generated documentation shipped in the package (package data): ``rules/<CODE>.md``,
#: ``rules/README.md``, and ``catalogue.md``, which the rule pages link to as ``../catalogue.md``.
PAGES_DIR = Path(__file__).resolve().parent.parent / "reporting" / "pages"


def shipped_page(code: str) -> Path:
    """The installed page of one rule."""
    return PAGES_DIR / "rules" / f"{code}.md"


def rule_url(code: str, base: str | None = None) -> str:
    """The address of ``code``'s page: under ``base`` when one is configured, else the
    ``file://`` URI of the page shipped in the package."""
    from urllib.parse import quote

    if not base:
        return shipped_page(code).as_uri()
    url = base.replace("{code}", code) if "{code}" in base else f"{base.rstrip('/')}/{code}.md"
    # The base may come from the analysed repository's pyproject.toml: percent-encode what
    # could end a Markdown link or a terminal line (spaces, brackets, quotes, control characters).
    return quote(url, safe=":/?#@!$&*+,;=%~")


def rule_reference(code: str, base: str | None = None) -> str:
    """What a reader outside this machine (a pull-request comment, a terminal) can follow:
    the configured address, or the command that prints the page."""
    return rule_url(code, base) if base else f"nnx-lint rule {code}"
