"""The flax a project's fixed code must run on, so that a pin only adds keywords that flax takes.

A pin adds ``graph=True, graph_updates=True`` to a transform and ``graph=True`` to a graph API,
and flax added those keywords between 0.12.4 and 0.12.7, API by API (the table is
:data:`nnx_lint.flax_table.nnx_api.PIN_KEYWORD_SINCE`). A pin the project's flax does not take would make
the "safe" fix a ``TypeError`` at import, so :class:`ProjectFlax` answers which release counts,
first source that answers wins:

1. ``flax-version`` under ``[tool.nnx-lint]``: the project says so itself.
2. The requirements the project declares: the *lowest* lower bound on flax among PEP 621
   ``[project] dependencies`` and ``optional-dependencies``, ``[dependency-groups]``, Poetry's
   dependency tables, the requirement files Hatch's ``requirements_txt`` hook lists, and
   ``requirements*.txt`` at the root or in ``requirements/``. A project that admits flax 0.12.5
   may run there, so a fix must too. A requirement without a lower bound (``flax``,
   ``flax<0.13``) or a direct reference (``flax @ git+...``) says nothing, and the next source decides.
3. Lock files (``uv.lock``, ``poetry.lock``, ``pdm.lock``, ``Pipfile.lock``): the lowest locked flax.
4. The flax installed next to nnx-lint, read from its distribution metadata (flax is never
   imported) on ``sys.path`` without the project's own directories.
5. Otherwise the version is unknown and every pin of the flax table is offered; the fix's
   message says which release it needs.

Everything is read as data (TOML with ``tomllib``, JSON, text lines), bounded, and only from
regular files inside the project root: nothing in the analysed repository is run. Quoted
versions are rebuilt from the parsed numbers, so no text of the repository reaches a message.
"""
from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from nnx_lint.base.toml_data import TomlError, parse_toml
from nnx_lint.flax_table.nnx_api import NAME_SINCE, pin_missing, pin_needs, version_key

# Type checkers take TYPE_CHECKING as true; a run never imports typing for annotations (start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: Where the project's own setting lives (named in messages).
SETTING = "`flax-version` under `[tool.nnx-lint]`"
#: The largest project file read (a uv.lock of a large project is a few MiB).
_MAX_BYTES = 16 * 2**20


@dataclass(frozen=True)
class ProjectFlax:
    """The oldest flax the project's code must run on (None: unknown), and where that came from.

    >>> target = ProjectFlax("0.12.5", "`flax==0.12.5` in pyproject.toml")
    >>> target.why_no_pin([{"api": "split"}]) is None
    True
    >>> print(target.why_no_pin([{"api": "jit"}]))
    `nnx.jit` takes `graph_updates=` only from flax 0.12.6 on, and this project's flax is 0.12.5 (`flax==0.12.5` in pyproject.toml): require flax>=0.12.6 to get this fix
    """

    version: str | None
    source: str = "unknown"

    def why_no_pin(self, sites: list[dict[str, Any]]) -> str | None:
        """Why the pin at these sites would not run on this flax (None: every site can take it)."""
        if self.version is None:
            return None
        for site in sites:
            api = str(site.get("api", ""))
            missing = pin_missing(api, self.version)
            if missing:
                keywords = " and ".join(f"`{keyword}=`" for keyword, _since in missing)
                since = max((since for _keyword, since in missing), key=version_key)
                return (f"`nnx.{api}` takes {keywords} only from flax {since} on, and this project's flax is "
                        f"{self.version} ({self.source}): require flax>={pin_needs(api) or since} to get this fix")
        return None

    def why_no_rewrite(self, name: str) -> str | None:
        """Why a rewrite that writes ``nnx.<name>`` (its ``Rewrite.writes``; empty: none) would not
        run on this flax (None: it would, or the version is unknown)."""
        since = NAME_SINCE.get(name)
        if self.version is None or since is None or version_key(self.version) >= version_key(since):
            return None
        return (f"`nnx.{name}` exists only from flax {since} on, and this project's flax is {self.version} "
                f"({self.source}): require flax>={since} to get this fix")

    def needs_note(self, sites: list[dict[str, Any]]) -> str:
        """When the version is unknown: which flax the pin needs (else empty), for the fix message."""
        if self.version is not None:
            return ""
        releases = [release for site in sites if (release := pin_needs(str(site.get("api", ""))))]
        if not releases:
            return ""
        return (f" (needs flax>={max(releases, key=version_key)}; this project's flax is unknown: declare it, "
                f"or set {SETTING})")


#: No source names the project's flax: every pin of the flax table is offered, its message naming
#: the release it needs (refusing them all would leave a script without a pyproject no fix at all).
UNKNOWN = ProjectFlax(None)


def join_sentences(first: str, second: str) -> str:
    """``second`` after ``first`` as its own sentence: a help that ends without a full stop (a
    code span, a parenthesis) gets one, so that the two do not run together.

    >>> join_sentences("Keep the state in a Variable (`nnx.Variable`)", "No pin fix: why.")
    'Keep the state in a Variable (`nnx.Variable`). No pin fix: why.'
    >>> join_sentences("Pass it once.", "No pin fix: why.")
    'Pass it once. No pin fix: why.'
    >>> join_sentences("", "No pin fix: why.")
    'No pin fix: why.'
    """
    first = first.rstrip()
    if not first:
        return second
    return f"{first}{'' if first.endswith(('.', '!', '?')) else '.'} {second}"


def explain_blocked_pins(diagnostics: list, settings) -> list:
    """``diagnostics`` with the help of each one whose pin the project's flax cannot take
    extended by why (``--show-fixes``, JSON and SARIF ``help``): the fix is not offered there.
    The project files are read only when some diagnostic has a pin."""
    from dataclasses import replace

    # The stored ``pin`` fact, read from the stored dict: typed facts would import the rules
    # (and astroid) into the parent of a text run, whose path holds the linted checkout.
    pins = [d.facts.get("pin") or [] for d in diagnostics]
    if not any(pins):
        return diagnostics
    flax = project_flax_for(settings)
    explained = []
    for diagnostic, sites in zip(diagnostics, pins):
        blocked = flax.why_no_pin(sites)
        if blocked is not None:
            note = f"No pin fix: {blocked}."
            diagnostic = replace(diagnostic, help=join_sentences(diagnostic.help, note))
        explained.append(diagnostic)
    return explained


def project_flax(root: Path, configured: str | None = None, *, installed: bool = True) -> ProjectFlax:
    """The flax the project at ``root`` runs on, by the precedence in this module's docstring."""
    if configured:
        return ProjectFlax(configured, SETTING)
    for found in (declared_flax(root), locked_flax(root), installed_flax(root) if installed else None):
        if found is not None:
            return found
    return UNKNOWN


_MEMO: dict[tuple[str, str | None], ProjectFlax] = {}


def project_flax_for(settings) -> ProjectFlax:
    """:func:`project_flax` for a run's settings, read once per process and project root."""
    key = (str(settings.root), getattr(settings, "flax_version", None))
    if key not in _MEMO:
        _MEMO[key] = project_flax(Path(settings.root), key[1])
    return _MEMO[key]


# -- declared requirements -------------------------------------------------------------------


def declared_flax(root: Path) -> ProjectFlax | None:
    """The lowest lower bound on flax the project declares (None: no declared bound)."""
    bounds: list[tuple[str, str]] = []  # (version, where)
    pyproject = _toml(root / "pyproject.toml") or {}
    for requirement, where, poetry in _pyproject_requirements(pyproject):
        bound = requirement_lower_bound(requirement, poetry)
        if bound:
            bounds.append((bound[1], f"`flax{bound[0]}{bound[1]}` in pyproject.toml {where}"))
    for path in _requirement_files(root, pyproject):
        for line in _requirement_lines(path):
            bound = requirement_lower_bound(line)
            if bound:
                bounds.append((bound[1], f"`flax{bound[0]}{bound[1]}` in {_shown(path.relative_to(root).as_posix())}"))
    return _lowest(bounds)


def requirement_lower_bound(requirement: str, poetry: bool = False) -> tuple[str, str] | None:
    """``(operator, version)`` of the lower bound a flax requirement sets (None: not flax, or no
    lower bound). ``poetry`` reads Poetry's constraint syntax (``^0.12.5``, a bare version).

    >>> requirement_lower_bound("flax[all]>=0.12.5,<0.13; python_version>'3.10'")
    ('>=', '0.12.5')
    >>> requirement_lower_bound("flax==0.12.*"), requirement_lower_bound("flax @ git+https://x/flax.git")
    (('==', '0.12'), None)
    >>> requirement_lower_bound("flaxformer>=1"), requirement_lower_bound("^0.12.5 || ^0.11", poetry=True)
    (None, ('^', '0.11'))
    """
    if not poetry:
        match = re.match(_NAME, requirement)
        if match is None or _normalized(match.group(1)) != "flax":
            return None
        requirement = match.group(2)
    spec = requirement.split(";", 1)[0].strip().strip("()").strip()
    if not spec or spec.startswith("@"):
        return None
    lowest: tuple[str, str] | None = None
    for alternative in spec.split("||"):  # Poetry: any one of them may be what is installed
        bound = _intersection_bound(alternative, poetry)
        if bound is None:
            return None
        if lowest is None or version_key(bound[1]) < version_key(lowest[1]):
            lowest = bound
    return lowest


_NAME = r"(?s)\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*(.*)"
_CLAUSE = r"\s*(===|==|~=|>=|<=|!=|>|<|\^|~|=)?\s*([0-9vV][^\s,;]*)\s*$"
_OPERATOR_SPACE = r"(===|==|~=|>=|<=|!=|\^|~|>|<|=)\s+"
_LOWER = frozenset({"===", "==", "~=", ">=", ">", "^", "~", "=", ""})


def _intersection_bound(spec: str, poetry: bool) -> tuple[str, str] | None:
    """The highest lower bound among comma-separated clauses (all must hold)."""
    best: tuple[str, str] | None = None
    # Poetry separates clauses by commas or spaces (`>= 0.12 < 0.13`), PEP 508 by commas.
    clauses = re.split(r"[,\s]+", re.sub(_OPERATOR_SPACE, r"\1", spec)) if poetry else spec.split(",")
    for clause in clauses:
        if not clause.strip() or clause.strip() == "*":
            continue
        match = re.match(_CLAUSE, clause)
        # `==0.12.*` admits 0.12.0; `>0.12.5` is read as `>=0.12.5` (no release list to step over).
        version = match.group(2).removesuffix(".*") if match else ""
        if version_key(version) is None:
            return None  # not a version we can read: claim nothing
        operator = match.group(1) or ""
        if operator not in _LOWER or (operator == "" and not poetry):
            continue
        if best is None or version_key(version) > version_key(best[1]):
            best = (operator or "==", _canonical(version))
    return best


def _pyproject_requirements(data: dict) -> list[tuple[str, str, bool]]:
    """Every flax requirement of the pyproject: ``(text, where, poetry syntax)``."""
    found: list[tuple[str, str, bool]] = []
    project = _table(data, "project")
    found += [(r, "[project] dependencies", False) for r in _strings(project.get("dependencies"))]
    for extra, requirements in _table(project, "optional-dependencies").items():
        found += [(r, f"[project.optional-dependencies] {_shown(extra)}", False) for r in _strings(requirements)]
    for group, requirements in _table(data, "dependency-groups").items():
        found += [(r, f"[dependency-groups] {_shown(group)}", False) for r in _strings(requirements)]
    poetry = _table(_table(data, "tool"), "poetry")
    tables = [("dependencies", _table(poetry, "dependencies")), ("dev-dependencies", _table(poetry, "dev-dependencies"))]
    tables += [(f"group.{_shown(name)}.dependencies", _table(group, "dependencies"))
               for name, group in _table(poetry, "group").items()]
    for name, table in tables:
        for package, constraint in table.items():
            if _normalized(package) != "flax":
                continue
            for one in constraint if isinstance(constraint, list) else [constraint]:
                version = one.get("version") if isinstance(one, dict) else one
                if isinstance(version, str):
                    found.append((version, f"[tool.poetry.{name}]", True))
    return found


def _requirement_files(root: Path, pyproject: dict) -> list[Path]:
    """``requirements*.txt`` at the root and in ``requirements/``, and the files Hatch's
    ``requirements_txt`` hook lists (only regular files inside the root)."""
    candidates = sorted(root.glob("requirements*.txt")) + sorted(root.glob("requirements/*.txt"))
    hook = _table(_table(_table(_table(_table(pyproject, "tool"), "hatch"), "metadata"), "hooks"), "requirements_txt")
    listed = _strings(hook.get("files"))
    for files in _table(hook, "optional-dependencies").values():
        listed += _strings(files)
    candidates += [root / name for name in listed]
    inside = []
    real_root = os.path.realpath(root)
    for path in dict.fromkeys(candidates):
        real = os.path.realpath(path)
        if os.path.commonpath([real, real_root]) == real_root and not path.is_symlink() and path.is_file():
            inside.append(path)
    return inside


def _requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a pip requirements file: comments, options and includes dropped,
    continuations joined."""
    text = _read(path)
    if text is None:
        return []
    lines = []
    for line in text.replace("\\\n", "").splitlines():
        line = re.split(r"(^|\s)#", line, maxsplit=1)[0].strip()
        line = re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]  # per-requirement options (--hash=...)
        if line and not line.startswith("-"):
            lines.append(line)
    return lines


# -- lock files and the installed flax ---------------------------------------------------------


def locked_flax(root: Path) -> ProjectFlax | None:
    """The lowest flax version the project's lock files pin (None: no lock pins flax)."""
    found: list[tuple[str, str]] = []
    for name in ("uv.lock", "poetry.lock", "pdm.lock"):
        data = _toml(root / name)
        packages = data.get("package") if data else None
        for package in packages if isinstance(packages, list) else []:
            if isinstance(package, dict) and _normalized(package.get("name", "")) == "flax":
                version = package.get("version")
                if isinstance(version, str) and version_key(version):
                    found.append((_canonical(version), f"locked in {name}"))
    text = _read(root / "Pipfile.lock")
    try:
        pipfile = json.loads(text) if text else {}
    except ValueError:
        pipfile = {}
    for section in ("default", "develop"):
        entry = _table(_table(pipfile, section), "flax")
        version = str(entry.get("version", "")).lstrip("=")
        if version_key(version):
            found.append((_canonical(version), "locked in Pipfile.lock"))
    return _lowest(found)


def installed_flax(root: Path) -> ProjectFlax | None:
    """The flax installed next to nnx-lint, from its metadata (flax is not imported). The
    project's own directories are left out of the search, so a ``flax-*.dist-info`` committed
    to the analysed repository cannot pose as the installed flax."""
    real_root = os.path.realpath(root)
    for entry in sys.path:
        real = os.path.realpath(entry or os.curdir)
        if entry and os.path.commonpath([real, real_root]) != real_root and real != os.path.realpath(os.curdir):
            version = _distribution_version(entry, "flax")
            if version is not None:
                return ProjectFlax(_canonical(version), "the installed flax") if version_key(version) else None
    return None


#: ``flax-0.12.8.dist-info`` / ``flax-0.12.8-py3.11.egg-info``: a distribution's metadata
#: directory, named as installers write it (the first one on ``sys.path`` is the one Python imports).
_METADATA_DIRECTORY = r"(?P<name>[^-]+)-[^-]+(?:-[^-]+)?\.(?:dist-info|egg-info)"


def _distribution_version(entry: str, name: str) -> str | None:
    """The ``Version:`` of distribution ``name`` installed in the ``sys.path`` entry ``entry``,
    None when it is not there. What ``importlib.metadata.distributions(name=...)`` finds, read
    directly: importing ``importlib.metadata`` cost a warm run about a tenth of its time."""
    try:
        listing = os.listdir(entry)
    except OSError:
        return None
    for directory in sorted(listing):
        found = re.fullmatch(_METADATA_DIRECTORY, directory)
        if found is None or found["name"].replace(".", "_").lower() != name:
            continue
        metadata = "METADATA" if directory.endswith(".dist-info") else "PKG-INFO"
        try:
            with open(os.path.join(entry, directory, metadata), encoding="utf-8", errors="replace") as handle:
                for line in handle.read(64 * 1024).splitlines():
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
                    if not line.strip():
                        break  # the headers are over
        except OSError:
            continue
    return None


# -- helpers ----------------------------------------------------------------------------------


def _lowest(found: list[tuple[str, str]]) -> ProjectFlax | None:
    if not found:
        return None
    version, where = min(found, key=lambda item: version_key(item[0]))
    return ProjectFlax(version, where)


def _canonical(version: str) -> str:
    """A version :func:`version_key` accepts, as shown: the local label dropped, so only digits,
    dots and release-phase letters of the analysed repository reach a message."""
    return version.strip().split("+", 1)[0]


def _normalized(name: Any) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def _shown(text: Any) -> str:
    """A name from the analysed repository (an extra, a group, a file) as it may appear in a message."""
    text = str(text)
    return text if re.fullmatch(r"[A-Za-z0-9._/-]{1,100}", text) else "(a name not shown)"


def _read(path: Path) -> str | None:
    """The text of a regular file inside the project (at most :data:`_MAX_BYTES`); None otherwise."""
    from nnx_lint.base.bounds import ParseFailure, read_bounded

    if path.is_symlink():
        return None
    try:
        data = read_bounded(path, _MAX_BYTES)
    except ParseFailure:
        return None
    if len(data) > _MAX_BYTES:
        return None
    return data.decode("utf-8", errors="replace")


def _toml(path: Path) -> dict | None:
    text = _read(path) if path.exists() else None
    if text is None:
        return None
    try:
        return parse_toml(text, path)
    except TomlError:
        return None


def _table(data: Any, key: str) -> dict:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
