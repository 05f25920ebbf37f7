"""Why findings have no fix, on one summary line (issue 45): libcst is not installed, or the
project's flax is older than the pin fix needs. Without it, a missing ``[*]`` and "No fixes
available." look the same as a rule that has no fix at all.

>>> from types import SimpleNamespace as D
>>> from nnx_lint.fixes.flax_target import ProjectFlax
>>> old = ProjectFlax("0.12.5", "`flax>=0.12.5` in pyproject.toml")
>>> found = [D(facts={"pin": [{"api": "jit"}]}), D(facts={"pin": [{"api": "split"}]}), D(facts={})]
>>> print(blocked_pin_note(found, {}, old, unsafe=False))
No fix for 1 finding: its pin fix needs flax>=0.12.6, and this project's flax is 0.12.5 (`flax>=0.12.5` in pyproject.toml); require flax>=0.12.6, or set `flax-version` under `[tool.nnx-lint]` to the flax the project runs on.
"""
from __future__ import annotations

#: How every such line starts (``-q`` drops it with the other summary lines).
PREFIX = "No fix for "


def _findings(count: int) -> str:
    return f"{count} finding{'s' * (count != 1)}"


def libcst_note(count: int) -> str | None:
    """The line for ``count`` findings reported without libcst (no fix can be computed)."""
    from nnx_lint.base.install_hints import pip_install

    if not count:
        return None
    return f"{PREFIX}{_findings(count)}: libcst is not installed ({pip_install('fix')})."


def blocked_pin_note(diagnostics, fixes: dict, flax, unsafe: bool) -> str | None:
    """The line for the findings that have no fix because the project's flax (``flax``, a
    :class:`~nnx_lint.fixes.flax_target.ProjectFlax`) is older than their pin needs; ``fixes``:
    index -> Fix of the findings that do have one (a rewrite), which are not counted."""
    from nnx_lint.fixes.flax_target import SETTING
    from nnx_lint.flax_table.nnx_api import pin_needs, version_key

    needed: list[str] = []
    for index, diagnostic in enumerate(diagnostics):
        sites = diagnostic.facts.get("pin") or []
        fix = fixes.get(index)
        if not sites or (fix is not None and fix.fixes_finding(unsafe)) or flax.why_no_pin(sites) is None:
            continue
        releases = [release for site in sites if (release := pin_needs(str(site.get("api", ""))))]
        if releases:
            needed.append(max(releases, key=version_key))
    if not needed:
        return None
    since = max(needed, key=version_key)
    count = len(needed)
    return (f"{PREFIX}{_findings(count)}: {'its' if count == 1 else 'their'} pin fix needs flax>={since}, "
            f"and this project's flax is {flax.version} ({flax.source}); require flax>={since}, or set {SETTING} "
            "to the flax the project runs on.")


def why_no_fixes(diagnostics, fixes: dict, settings, unsafe: bool, libcst: bool) -> str | None:
    """The one line that says why findings have no fix, or None when nothing explains it."""
    if not diagnostics:
        return None
    if not libcst:
        return libcst_note(len(diagnostics))
    if not any(d.facts.get("pin") for d in diagnostics):
        return None  # no pin fix to block: the project's flax is not read
    from nnx_lint.fixes.flax_target import project_flax_for

    return blocked_pin_note(diagnostics, fixes, project_flax_for(settings), unsafe)
