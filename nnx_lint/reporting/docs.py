"""Rule documentation pages, generated from the rule classes (never edited by hand).

``docs/rules/<CODE>.md`` holds each page and ``docs/rules/README.md`` the index; the same
pages, with ``docs/catalogue.md`` they link to, are shipped in the package
(:data:`nnx_lint.base.links.PAGES_DIR`), where the default rule URLs point. Both copies
come from this one generator, and a test fails when either differs from what
:func:`render_rule` produces now. Regenerate with ``python -m nnx_lint.docs``, which also rewrites the
rule counts of ``README.md`` and the rules of the catalogue's pattern table
(:mod:`nnx_lint.reporting.doc_tables`) and the flax version table of ``docs/migration.md``.
"""
from __future__ import annotations

import sys
from pathlib import Path

from nnx_lint.base.catalogue import PATTERNS, anchor
from nnx_lint.analysis.rule import Rule

DOCS_DIR = Path(__file__).resolve().parent.parent.parent / "docs" / "rules"
#: The hand-written catalogue the rule pages link to (``../catalogue.md``); shipped alongside them.
CATALOGUE = DOCS_DIR.parent / "catalogue.md"
_LONG_LINE = 100

_KIND_TEXT = {
    "raises": "**Tree Mode raises** on this code.",
    "silent": "**Tree Mode runs this code but silently computes something else.**",
    "linter": "Reported by nnx-lint itself: the file could not be analysed.",
    "advisory": "Advisory, **off by default**: not a break.",
}


def pattern_link(pattern_id: str) -> str:
    """A Markdown link from a rule page to one pattern of ``docs/catalogue.md``.

    >>> pattern_link("A1")
    '[A1: Tied Variable into a transform](../catalogue.md#a1)'
    """
    return f"[{pattern_id}: {PATTERNS[pattern_id]}](../catalogue.md#{anchor(pattern_id)})"


def _code_block(source: str) -> str:
    lines = [line if len(line) <= _LONG_LINE else line[:_LONG_LINE] + " ...  # (truncated)" for line in source.rstrip().splitlines()]
    return "```python\n" + "\n".join(lines) + "\n```"


def _turn_on(rule: type[Rule]) -> str:
    # The NNX9xx family is all advisories; an off-by-default rule elsewhere is named alone.
    return f"--select {rule.code[:4]}" if rule.code.startswith("NNX9") else f"--extend-select {rule.code}"


def render_rule(rule: type[Rule]) -> str:
    """The Markdown page of one rule."""
    sections = rule.docs_sections()
    summary = rule.summary()
    out = [f"# {rule.code} `{rule.symbol}`", "", summary, ""]
    facts = [
        f"- Kind: `{rule.kind}` — {_KIND_TEXT[rule.kind]}",
        f"- Enabled by default: {'yes' if rule.default_enabled else 'no (select it with `' + _turn_on(rule) + '`)'}",
    ]
    if rule.catalogue:
        facts.append(f"- Patterns ([catalogue](../catalogue.md)): {', '.join(map(pattern_link, rule.catalogue))}")
    out += facts + [""]
    out += ["## What it does", "", sections.get("What it does", ""), ""]
    out += ["## Why is this bad?", "", sections.get("Why is this bad?", ""), ""]
    if rule.INVALID:
        first = rule.INVALID[0]
        out += ["## Example", "", _code_block(first.source), ""]
        if first.tree_mode:
            out += [f"In Tree Mode this {first.tree_mode.describe()}.", ""]
    else:
        reason = getattr(rule, "no_invalid_case_reason", "")
        out += ["## Example", "", f"No example program exists: {reason}.", ""]
    if rule.VALID:
        out += ["## Use instead", "", _code_block(rule.VALID[0].source), ""]
    out += _how_to_fix(rule)
    more_invalid = rule.INVALID[1:]
    more_valid = rule.VALID[1:]
    if more_invalid or more_valid:
        out += ["## More cases", ""]
        for case in more_invalid:
            out += [f"Flagged (`{case.id}`{_with_target(case)}):", "", _code_block(case.source), ""]
        for case in more_valid:
            out += [f"Not flagged (`{case.id}`{_with_target(case)}):", "", _code_block(case.source), ""]
    out += ["## Confirmation", ""]
    if rule.has_reproduction():
        out += [
            "`nnx-lint check --confirm` backs each finding of this rule with a minimal reproduction built "
            "from the diagnostic's facts and run under Tree Mode (`tree_runtime`, or flax with "
            "`--confirm-with flax`); `--show-repro` prints the program.",
            "",
        ]
    else:
        reason = rule.no_reproduction_reason or "no reproduction builder exists for this rule yet"
        out += [f"No reproduction: {reason}.", ""]
    out += _fix_section(rule)
    out += [
        "## Suppressing",
        "",
        f"`# noqa: {rule.code}` on the line (CLI, flake8), `# pylint: disable={rule.symbol}` (pylint), "
        f"or `ignore = [\"{rule.code}\"]` under `[tool.nnx-lint]`.",
        "",
        "## References",
        "",
        sections.get("References", ""),
        "",
    ]
    return "\n".join(out)


def markdown_text(text: str) -> str:
    """``text`` for Markdown: a ``<fact>`` outside a code span would be read as an HTML tag.

    >>> markdown_text("keep `<transform>` or <instead>")
    'keep `<transform>` or &lt;instead&gt;'
    """
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # even parts are outside code spans
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _with_target(case) -> str:
    """``, with `--target-version py311``` for a case linted with a target version."""
    if case.target_version is None:
        return ""
    return f", with `--target-version py{case.target_version[0]}{case.target_version[1]}`"


def _how_to_fix(rule: type[Rule]) -> list[str]:
    """The "How to fix" section: the rule's help template, then the help each flagged case gets.

    Facts in the template are shown as ``<name>``; when there are any, the help the INVALID
    cases really get (``--show-fixes``, JSON ``help``) follows, once per distinct text.
    """
    generic = rule.generic_help()
    if not generic:
        return ["## How to fix", "", "Nothing in the code can be changed to fix this.", ""]
    out = ["## How to fix", "", markdown_text(generic), ""]
    if generic == rule.help:
        return out
    from nnx_lint.engine.walk import lint_bytes

    concrete: dict[str, str] = {}
    for case in rule.INVALID:
        for found in lint_bytes(case.source.encode("utf-8"), "example.py", [rule], target_version=case.target_version):
            if found.code == rule.code and found.help:
                concrete.setdefault(found.help, case.id)
    if concrete:
        out += ["`<name>` stands for a fact of the diagnostic. For the flagged cases on this page:", ""]
        out += [f"- `{case_id}`: {markdown_text(text)}" for text, case_id in concrete.items()] + [""]
    return out


def _fix_section(rule: type[Rule]) -> list[str]:
    """The page's ``Fix`` section: each fix the rule offers and its applicability, or why none."""
    from nnx_lint.fixes.catalog import CLASS_LEVEL_NOTE, class_level, fix_kinds

    out = ["## Fix", ""]
    if not rule.fixes:
        return out + [f"No fix: {rule.no_fix_reason}.", ""]
    for name, applicability, text in fix_kinds(rule):
        out.append(f"- `{name}` ({applicability}): {text}.")
    out.append("")
    if class_level(rule):
        out += [CLASS_LEVEL_NOTE, ""]
    out += _flax_versions_of(rule)
    out += ["`nnx-lint check --fix` applies safe fixes, `--unsafe-fixes` adds unsafe ones, `--diff` shows them; "
            "a fix that cannot be made at a finding (no known call to pin) is not offered there.", ""]
    return out


def _flax_versions_of(rule: type[Rule]) -> list[str]:
    """The flax release each of the rule's fixes needs: the pins its cases get, and rewrites."""
    from nnx_lint.fixes.model import PIN
    from nnx_lint.flax_table.nnx_api import NAME_SINCE, pin_needs
    from nnx_lint.engine.registry import facts_of, pin_sites

    out = []
    if PIN in rule.fixes:
        from nnx_lint.engine.walk import lint_bytes

        apis: dict[str, str | None] = {}
        for case in rule.INVALID:
            if case.files:
                continue
            for found in lint_bytes(case.source.encode("utf-8"), "example.py", [rule],
                                    target_version=case.target_version):
                for site in pin_sites(facts_of(found)):
                    apis.setdefault(site["api"], pin_needs(site["api"]))
        needs = ", ".join(f"`nnx.{api}` (flax>={release})" if release else f"`nnx.{api}` (no pin: graph mode with "
                          "graph updates is rejected there)" for api, release in sorted(apis.items()))
        out.append(f"Flax version: the pin's keywords are newer than some flax releases (`graph_updates=` on most "
                   f"transforms from 0.12.6, `graph=` on most graph APIs from 0.12.5: [the table]({_VERSIONS_LINK})). "
                   + (f"This page's cases are pinned at {needs}. " if needs else "")
                   + "`--fix` offers a pin only where the project's flax takes it; elsewhere the fix is not offered "
                   "and the diagnostic's help says why.")
    for rewrite in rule.rewrites():
        if rewrite.writes:
            name = rewrite.writes
            out.append(f"`{rewrite.name}` writes `nnx.{name}`, which exists from flax {NAME_SINCE[name]} on: it is "
                       "not offered to a project on an older flax.")
    return [line for text in out for line in (text, "")]


_VERSIONS_LINK = "../migration.md#7-fixes-and-your-flax-version"
#: The generated table of ``docs/migration.md`` lies between these lines.
_TABLE_START = "<!-- flax versions: generated by `python -m nnx_lint.docs`, do not edit -->"
_TABLE_END = "<!-- end of the generated flax versions -->"
MIGRATION = DOCS_DIR.parent / "migration.md"


def flax_versions_table() -> str:
    """The Markdown table of the oldest flax release each fix needs, from the flax table.

    >>> print(flax_versions_table().splitlines()[2].rsplit("|", 2)[-2].strip())
    0.12.6
    """
    from nnx_lint.engine.registry import all_rules
    from nnx_lint.flax_table.nnx_api import (GRAPH_APIS, NAME_SINCE, NOT_PINNABLE, TRANSFORMS, pin_flags, pin_needs,
                                              version_key)

    rows: dict[tuple[str, str], list[str]] = {}
    for api in sorted(TRANSFORMS | GRAPH_APIS):
        flags, release = pin_flags(api), pin_needs(api)
        if flags and release:
            rows.setdefault((", ".join(f"{flag}=True" for flag in flags), release), []).append(api)
    out = ["| fix | on `nnx.` ... | oldest flax |", "|---|---|---|"]
    for (flags, release), apis in sorted(rows.items(), key=lambda row: (-len(row[0][0]), version_key(row[0][1]))):
        out.append(f"| pin: `{flags}` | {', '.join(f'`{api}`' for api in apis)} | {release} |")
    out.append(f"| no pin (graph mode with graph updates is rejected there) | "
               f"{', '.join(f'`{api}`' for api in sorted(NOT_PINNABLE))} | — |")
    for rewrite in sorted({r for rule in all_rules() for r in rule.rewrites() if r.writes}, key=lambda r: r.name):
        out.append(f"| `{rewrite.name}` rewrite | writes `{rewrite.writes}` | {NAME_SINCE[rewrite.writes]} |")
    return "\n".join(out)


def migration_text(current: str) -> str:
    """``docs/migration.md`` with its generated flax version table rewritten."""
    start, end = current.index(_TABLE_START) + len(_TABLE_START), current.index(_TABLE_END)
    return current[:start] + "\n\n" + flax_versions_table() + "\n\n" + current[end:]


def render_index(rules: tuple[type[Rule], ...]) -> str:
    out = ["# nnx-lint rules", "", "Generated by `python -m nnx_lint.docs`; do not edit. Each rule's page links to the "
           "Tree Mode patterns it flags in [the catalogue](../catalogue.md).", "",
           "| code | symbol | kind | default | summary |", "|---|---|---|---|---|"]
    for rule in rules:
        summary = rule.summary().replace("|", "\\|")
        out.append(
            f"| [{rule.code}]({rule.code}.md) | `{rule.symbol}` | {rule.kind} | "
            f"{'on' if rule.default_enabled else 'off'} | {summary} |"
        )
    return "\n".join(out) + "\n"


def expected_pages() -> dict[str, str]:
    """File name -> content for every generated page."""
    from nnx_lint.engine.registry import all_rules

    rules = all_rules()
    pages = {f"{rule.code}.md": render_rule(rule) for rule in rules}
    pages["README.md"] = render_index(rules)
    return pages


def shipped_pages() -> dict[Path, str]:
    """Path under the package's pages directory -> content: the rule pages and the catalogue,
    laid out as in ``docs/`` so the pages' relative links resolve in the installed copy too."""
    pages = {Path("rules") / name: content for name, content in expected_pages().items()}
    pages[Path("catalogue.md")] = CATALOGUE.read_text(encoding="utf-8")
    return pages


def write_pages(directory: Path = DOCS_DIR) -> list[Path]:
    """Write ``docs/rules/`` (or ``directory``); returns the files that changed."""
    return _write({Path(name): content for name, content in expected_pages().items()}, directory)


def write_shipped_pages(directory: Path | None = None) -> list[Path]:
    """Write the copy shipped in the package; returns the files that changed."""
    from nnx_lint.base.links import PAGES_DIR

    return _write(shipped_pages(), directory or PAGES_DIR)


def _write(pages: dict[Path, str], directory: Path) -> list[Path]:
    written = []
    for name, content in pages.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    from nnx_lint.engine.registry import all_rules
    from nnx_lint.reporting.doc_tables import write_tables

    # The tables first: the catalogue is shipped with the pages.
    changed = write_tables(all_rules()) + write_pages() + write_shipped_pages()
    if MIGRATION.read_text(encoding="utf-8") != migration_text(MIGRATION.read_text(encoding="utf-8")):
        MIGRATION.write_text(migration_text(MIGRATION.read_text(encoding="utf-8")), encoding="utf-8")
        changed.append(MIGRATION)
    print(f"{len(changed)} page(s) written to {DOCS_DIR} and the package's pages", file=sys.stderr)
