"""Joining Tree Mode breaks with nnx-lint's static findings.

For a failure, the *project frames* are the traceback frames whose file lies under the
project path (and not in an installed package: ``site-packages``/``dist-packages``). The
*deepest* project frame is the last one: where the project's code handed control to flax.

A diagnostic explains a failure when, for some project frame (deepest first), it is

- ``at`` the frame: the frame's line lies within the diagnostic's lines;
- ``near`` it: same file, at most ``NEAR_LINES`` lines away (a transform is often built a
  line or two before the line that calls it);
- in the ``same function``: inside the innermost function (decorators included) that
  contains the frame's line. Found with the standard library's ``ast`` on the file's text:
  the project's code is parsed, never imported or executed.

The first frame with any match wins, and within it the closest kind of match. When no project
frame matches, the frames in installed dependencies are tried the same way, with the findings of
those files (:mod:`nnx_lint.gate.dependencies`, added with :meth:`Attributor.add`).

First of all, an aliasing error that lists the paths where flax met one object twice ("found at
paths: .args[0].a.kernel, .args[0].b.kernel") is explained by a finding whose own paths lie inside
those (:mod:`nnx_lint.gate.alias_paths`): flax raises inside the transform, under the test's call,
far from the ``__init__`` that tied the weights, and a frame-based match there would be a guess.

Last, a failure whose message names the path of the value that failed (JAX: "... was passed to the
function at path grad_accumulator._param_dtypes['bias']") is explained by a finding on a statement
that stores one of the path's names (``self._param_dtypes = nnx.data(...)``): JAX raises where it
reads the transform's arguments, far from the ``__init__`` that stored the value.
"""
from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nnx_lint.analysis.package_roots import imported_file
from nnx_lint.base.diagnostic import UNPROVEN, Diagnostic
from nnx_lint.gate import alias_paths
from nnx_lint.gate.case_join import CaseJoin
from nnx_lint.gate.classify import GateOutcome, Verdict
from nnx_lint.gate.dependencies import INSTALLED, dependency_frames, installed_location
from nnx_lint.gate.results import Failure, Frame

#: How far (in lines) a diagnostic may be from a failing frame and still be "near" it.
NEAR_LINES = 3
#: How a diagnostic matches a frame, strongest first: on its line, on one of its related
#: locations (the call of the transformed function, where the grad is applied, ...), within
#: ``NEAR_LINES``, in the same function.
MATCH_KINDS = ("alias-paths", "at", "related", "near", "same-function", "path")
#: JAX's message for an argument it cannot read as an array names where the value sits.
_LEAF_PATH = re.compile(r"passed to the function at path (\S+?)\.?(?:\s|$)")
#: The names in such a path: attributes (``.name``), string keys (``['name']``) and the first name.
_PATH_NAMES = re.compile(r"\.([A-Za-z_]\w*)|\['([A-Za-z_]\w*)'\]|^([A-Za-z_]\w*)")


@dataclass
class Match:
    """A diagnostic that explains a failure, and how."""

    diagnostic: Diagnostic
    frame: Frame
    how: str
    deepest: bool
    #: The installed package the diagnostic and the frame lie in, for a cause in a dependency.
    dependency: str | None = None
    #: For a ``path`` match: (the name the finding's statement stores, the failing value's path).
    stored: tuple[str, str] | None = None
    #: For an ``alias-paths`` match: (the finding's paths, the paths the error lists).
    paths: tuple[list[str], list[str]] | None = None

    def describe(self, root: Path) -> str:
        where = f"{display_path(self.diagnostic.path, root)}:{self.diagnostic.line}"
        if self.paths is not None:
            own, listed = self.paths
            return (f"{self.diagnostic.code} at {where} (its paths {', '.join(f'`{p}`' for p in own)} "
                    f"are inside the paths the error names: {', '.join(listed)})")
        if self.stored is not None:
            name, path = self.stored
            return f"{self.diagnostic.code} at {where} (stores `{name}`, named by the failing value's path {path})"
        frame = f"{display_path(self.frame.file, root)}:{self.frame.line} in {self.frame.function}"
        relation = {"at": "at", "related": "with a related line at", "near": "near",
                    "same-function": "in the same function as"}[self.how]
        if self.dependency is not None:
            which = f"a frame in the installed dependency {self.dependency}"
        else:
            which = "the failing frame" if self.deepest else "a frame of the call chain"
        return f"{self.diagnostic.code} at {where} ({relation} {which}, {frame})"


@dataclass
class Attribution:
    """Why one test breaks in Tree Mode, as far as the gate can tell."""

    verdict: Verdict
    failure: Failure | None
    deepest: Frame | None
    matches: list[Match] = field(default_factory=list)

    @property
    def explained(self) -> bool:
        """A proven finding explains the break."""
        return any(m.diagnostic.proof != UNPROVEN for m in self.matches)

    @property
    def unproven(self) -> bool:
        """Only unproven findings (audit mode) match the break: the analysis saw the place but
        could not resolve the value it hangs on. Counted apart from explained and unexplained."""
        return bool(self.matches) and not self.explained

    def summary(self, root: Path) -> str:
        if not self.matches:
            return "unexplained"
        if self.unproven:
            return "unproven: " + self.matches[0].describe(root)
        return "explained by " + next(m for m in self.matches if m.diagnostic.proof != UNPROVEN).describe(root)


@dataclass
class PassingFinding:
    """A static finding inside a test function that passed in both modes."""

    diagnostic: Diagnostic
    nodeids: list[str]


def _relative(path: str, root: Path) -> str:
    try:
        return os.path.relpath(os.path.abspath(path), root)
    except ValueError:
        return path


def display_path(path: str, root: Path) -> str:
    """``path`` as the report shows it: relative to the project, or for a file of an installed
    package, from its top-level package (``qwix/_src/model.py``)."""
    location = installed_location(os.path.abspath(path))
    if location is not None and installed_location(str(root / "x")) is None:
        return _relative(path, location[0])
    return _relative(path, root)


def _inside(path: str, root: Path) -> bool:
    absolute = os.path.abspath(path)
    root_text = str(root)
    if absolute != root_text and not absolute.startswith(root_text.rstrip(os.sep) + os.sep):
        return False
    return not any(part in INSTALLED for part in Path(absolute).relative_to(root).parts)


def project_frames(failure: Failure | None, root: Path) -> list[Frame]:
    """The failure's frames inside the project, outermost first."""
    if failure is None:
        return []
    return [frame for frame in failure.frames if _inside(frame.file, root)]


class _FunctionSpans:
    """What the gate reads of a file with the standard library's ``ast`` (parsed once per file, never
    imported): the line spans of its functions, its assignments and the project files it imports."""

    def __init__(self) -> None:
        self._spans: dict[str, list[tuple[int, int, str, str]]] = {}
        self._trees: dict[str, ast.Module | None] = {}
        self._stores: dict[str, list[tuple[int, int, frozenset[str]]]] = {}
        self._imports: dict[str, set[str]] = {}

    def tree(self, file: str) -> ast.Module | None:
        if file not in self._trees:
            try:
                self._trees[file] = ast.parse(Path(file).read_bytes())
            except (OSError, SyntaxError, ValueError):
                self._trees[file] = None
        return self._trees[file]

    def spans(self, file: str) -> list[tuple[int, int, str, str]]:
        """(first line incl. decorators, last line, qualified class prefix, name) per function."""
        if file not in self._spans:
            spans: list[tuple[int, int, str, str]] = []
            tree = self.tree(file)
            if tree is not None:
                self._collect(tree, "", spans)
            self._spans[file] = spans
        return self._spans[file]

    def _collect(self, node: ast.AST, owner: str, spans: list) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                spans.append((first, child.end_lineno or child.lineno, owner, child.name))
                self._collect(child, owner, spans)
            elif isinstance(child, ast.ClassDef):
                self._collect(child, f"{owner}{child.name}.", spans)
            else:
                self._collect(child, owner, spans)

    def stored_names(self, file: str, line: int) -> set[str]:
        """The names an assignment statement spanning ``line`` stores (``self.x = ...`` gives ``x``)."""
        return {name for first, last, names in self._assignments(file) if first <= line <= last for name in names}

    def _assignments(self, file: str) -> list[tuple[int, int, frozenset[str]]]:
        """(first line, last line, names stored) of each assignment statement of ``file``, read once."""
        if file not in self._stores:
            found = []
            tree = self.tree(file)
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = frozenset(
                        part.attr if isinstance(part, ast.Attribute) else part.id
                        for target in targets for part in ast.walk(target)
                        if isinstance(part, ast.Attribute) or (isinstance(part, ast.Name)
                                                               and isinstance(part.ctx, ast.Store)))
                    found.append((node.lineno, node.end_lineno or node.lineno, names))
            self._stores[file] = found
        return self._stores[file]

    def imported_files(self, file: str, root: Path) -> set[str]:
        """The files under ``root`` that ``file`` imports (``import a.b``, ``from a import b``, also ``b``
        as a module), read once per file."""
        if file not in self._imports:
            tree = self.tree(file)
            modules = set()
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.Import):
                    modules.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module)
                    modules.update(f"{node.module}.{alias.name}" for alias in node.names)
            found = set()
            for module in modules:
                # The file Python imports for the name (a package before a module of the same name).
                located = imported_file(module, [root])
                if located is not None:
                    found.add(str(located))
            self._imports[file] = found
        return self._imports[file]

    def enclosing(self, file: str, line: int) -> tuple[int, int] | None:
        """The innermost function span containing ``line``."""
        best = None
        for first, last, _owner, _name in self.spans(file):
            if first <= line <= last and (best is None or last - first < best[1] - best[0]):
                best = (first, last)
        return best

    def named(self, file: str, qualified: str) -> tuple[int, int] | None:
        """The span of the function ``Class.name`` (or ``name``) in ``file``."""
        for first, last, owner, name in self.spans(file):
            if f"{owner}{name}" == qualified:
                return first, last
        return None

    def helpers(self, file: str, qualified: str) -> list[tuple[int, int]]:
        """Spans of the same file's code that the function ``qualified`` uses, transitively.

        A static stand-in for coverage, limited to one file: the module-level functions and
        classes it names, and, for a method, the methods of its class it reaches through
        ``self.``/``cls.`` plus the class' per-test set-up (``setUp``, ``setup_method``).
        """
        tree = self.tree(file)
        start = self.named(file, qualified)
        if tree is None or start is None:
            return []
        owner = qualified.rpartition(".")[0]
        top_level = {node.name: _node_span(node) for node in tree.body
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        methods = {name: (first, last) for first, last, prefix, name in self.spans(file)
                   if owner and prefix == owner + "."}
        pending = [start] + [methods[name] for name in _SET_UP if name in methods]
        seen = {start}
        found: list[tuple[int, int]] = []
        while pending:
            span = pending.pop()
            if span != start:
                found.append(span)
            for name, via_self in _names_used(tree, span):
                target = methods.get(name) if via_self else top_level.get(name)
                if target is not None and target not in seen:
                    seen.add(target)
                    pending.append(target)
        return sorted(set(found) - {start})


#: Methods a test framework runs before each test method of the class.
_SET_UP = ("setUp", "setup_method")


def _generated_from(qualified: str):
    """``qualified``, then the names a test framework may have generated it from (see ``test_function``)."""
    yield qualified
    owner, dot, name = qualified.rpartition(".")
    if name.rstrip("0123456789") != name:
        yield owner + dot + name.rstrip("0123456789")
    while name.count("_") > 1:
        name = name.rpartition("_")[0]
        yield owner + dot + name


def _node_span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
    return min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno or node.lineno


def _names_used(tree: ast.Module, span: tuple[int, int]) -> set[tuple[str, bool]]:
    """(name, reached through ``self.``/``cls.``) for the names loaded within ``span``."""
    used: set[tuple[str, bool]] = set()
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None or not span[0] <= line <= span[1]:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used.add((node.id, False))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            used.add((node.attr, True))
    return used


def _distance(diagnostic: Diagnostic, line: int) -> int:
    end = max(diagnostic.end_line or diagnostic.line, diagnostic.line)
    if diagnostic.line <= line <= end:
        return 0
    return diagnostic.line - line if line < diagnostic.line else line - end


class Attributor:
    """Matches failures against the static diagnostics of one project."""

    def __init__(self, diagnostics: list[Diagnostic], root: Path, cwd: Path | None = None):
        self.root = root.resolve()
        self.base = cwd or Path.cwd()
        self.by_file: dict[str, list[Diagnostic]] = {}
        #: Per file, the diagnostics with a related location there, and that location's lines.
        self.related_by_file: dict[str, list[tuple[Diagnostic, int, int]]] = {}
        self.functions = _FunctionSpans()
        self.cases = CaseJoin(self.base)
        self.add(diagnostics)

    def add(self, diagnostics: list[Diagnostic]) -> None:
        """Match these diagnostics too (a dependency's, linted after the runs)."""
        for diagnostic in diagnostics:
            self.by_file.setdefault(str((self.base / diagnostic.path).resolve()), []).append(diagnostic)
            for related in diagnostic.related:
                if related.cell is None:  # a notebook cell's lines are not the file's
                    self.related_by_file.setdefault(str((self.base / related.path).resolve()), []).append(
                        (diagnostic, related.line, max(related.end_line, related.line)))

    def _matches_at(self, frame: Frame, deepest: bool) -> list[Match]:
        file = str(Path(frame.file).resolve())
        candidates = self.by_file.get(file, [])
        matches: list[Match] = [Match(diagnostic, frame, "related", deepest)
                                for diagnostic, first, last in self.related_by_file.get(file, ())
                                if first <= frame.line <= last]
        if not candidates:
            return matches
        function = self.functions.enclosing(file, frame.line) if frame.function != "<module>" else None
        for diagnostic in candidates:
            distance = _distance(diagnostic, frame.line)
            if distance == 0:
                matches.append(Match(diagnostic, frame, "at", deepest))
            elif distance <= NEAR_LINES:
                matches.append(Match(diagnostic, frame, "near", deepest))
            elif function is not None and function[0] <= diagnostic.line <= function[1]:
                matches.append(Match(diagnostic, frame, "same-function", deepest))
        matches.sort(key=lambda m: (MATCH_KINDS.index(m.how), _distance(m.diagnostic, frame.line), m.diagnostic.code))
        return matches

    def attribute(self, verdict: Verdict) -> Attribution:
        """Why ``verdict``'s test breaks: the project's frames first (deepest first), then, when none
        matches, the frames in installed dependencies (whose findings :meth:`add` brought in)."""
        failure = verdict.failure
        frames = project_frames(failure, self.root)
        attribution = Attribution(verdict, failure, frames[-1] if frames else None)
        if failure is not None:
            attribution.matches = self._alias_path_matches(failure, attribution.deepest)
            if attribution.matches:
                return attribution
        for index, frame in enumerate(reversed(frames)):
            matches = self._matches_at(frame, deepest=index == 0)
            if matches:
                attribution.matches = matches
                return attribution
        for frame in reversed(dependency_frames(failure)):
            matches = self._matches_at(frame, deepest=False)
            if matches:
                package = installed_location(frame.file)[1]
                attribution.matches = [dataclasses.replace(match, dependency=package) for match in matches]
                return attribution
        if failure is not None and failure.frames:
            attribution.matches = self._path_matches(failure, attribution.deepest or failure.frames[-1])
        return attribution

    def _alias_path_matches(self, failure: Failure, deepest: Frame | None) -> list[Match]:
        """Findings whose paths lie inside the paths an aliasing error lists (module docstring)."""
        texts_and_paths = alias_paths.listed_paths(failure.message)
        if not texts_and_paths or not failure.frames:
            return []
        from nnx_lint.engine.registry import rule_by_code

        frame = deepest or failure.frames[-1]
        shown = [text for text, _path in texts_and_paths]
        listed = [path for _text, path in texts_and_paths]
        matches = []
        for file, diagnostics in self.by_file.items():
            for diagnostic in diagnostics:
                rule = rule_by_code(diagnostic.code)
                if rule is None or rule.facts_type is None or not rule.facts_type.paths:
                    continue
                try:
                    facts = rule.facts_from(diagnostic.facts)  # the stored dict, typed at this boundary
                except TypeError:  # stored by another version of the rule: it names no path we can read
                    continue
                own = alias_paths.finding_paths(facts)
                if alias_paths.explains(own, listed):
                    paths = ([alias_paths.display(path) for path in own], shown)
                    matches.append((file, Match(diagnostic, frame, "alias-paths", deepest=False, paths=paths)))
        return self._closest_first(failure, matches)

    def _closest_first(self, failure: Failure, matches: list[tuple[str, Match]]) -> list[Match]:
        """``matches`` (file, match) ordered: first the files of the failing frames, then the project
        modules these files import, then the others (a copy of a class in an experimental module)."""
        frame_files = [str(Path(f.file).resolve()) for f in project_frames(failure, self.root)]
        imported = {module for file in frame_files for module in self.functions.imported_files(file, self.root)}

        def closeness(file: str) -> int:
            return 0 if file in frame_files else 1 if file in imported else 2
        matches.sort(key=lambda item: (closeness(item[0]), item[1].diagnostic.path, item[1].diagnostic.line))
        return [match for _file, match in matches]

    def _path_matches(self, failure: Failure, frame: Frame) -> list[Match]:
        """Findings on a statement that stores a name of the failing value's path (module docstring)."""
        found = _LEAF_PATH.search(failure.message)
        if found is None:
            return []
        path = found.group(1)
        names = {next(part for part in groups if part) for groups in _PATH_NAMES.findall(path)}
        matches = []
        for file, diagnostics in self.by_file.items():
            for diagnostic in diagnostics:
                stored = self.functions.stored_names(file, diagnostic.line) & names
                if stored:
                    matches.append((file, Match(diagnostic, frame, "path", deepest=False, stored=(min(stored), path))))
        return self._closest_first(failure, matches)

    def findings_in_passing_tests(self, outcome: GateOutcome, rootdir: Path) -> list[PassingFinding]:
        """Diagnostics inside the body of a test function that passed in both full runs.

        Cheap because the node id names the function; anything wider (code those tests
        called) would need coverage data, which the gate does not collect.
        """
        graph, tree = outcome.runs.get("graph"), outcome.runs.get("tree")
        if graph is None or tree is None:
            return []
        found: dict[int, PassingFinding] = {}
        for nodeid, result in tree.results.tests.items():
            in_graph = graph.results.tests.get(nodeid)
            if result.outcome != "passed" or in_graph is None or in_graph.outcome != "passed":
                continue
            for diagnostic in self.diagnostics_in_test(nodeid, rootdir):
                found.setdefault(id(diagnostic), PassingFinding(diagnostic, [])).nodeids.append(nodeid)
        return sorted(found.values(), key=lambda item: item.diagnostic.sort_key())

    def test_function(self, nodeid: str, rootdir: Path) -> tuple[str, str] | None:
        """(absolute file, qualified name as defined) of the test function a node id names."""
        path, _, rest = nodeid.partition("::")
        if not rest:
            return None
        file = str((rootdir / path).resolve())
        qualified = ".".join(part.partition("[")[0] for part in rest.split("::") if part != "()")
        # absltest's parameterized tests are methods made from ``test_x``: ``test_x0``, ``test_x1``...
        # (``parameters``, ``product``) or ``test_x_name`` (``named_parameters``).
        for candidate in _generated_from(qualified):
            if self.functions.named(file, candidate) is not None:
                return file, candidate
        return None

    def diagnostics_in_test(self, nodeid: str, rootdir: Path, *, helpers: bool = False) -> list[Diagnostic]:
        """The diagnostics inside the body (decorators included) of the test function ``nodeid`` names
        that hold in its case, when it is one case of a parameterised test (:mod:`nnx_lint.gate.case_join`).

        With ``helpers``, also those inside the same file's code the test uses (see
        ``_FunctionSpans.helpers``). Node ids are relative to ``rootdir``; one without a
        function (a module's collection error) has none.
        """
        function = self.test_function(nodeid, rootdir)
        if function is None:
            return []
        file, qualified = function
        diagnostics = self.by_file.get(file)
        if not diagnostics:
            return []
        spans = [self.functions.named(file, qualified)]
        if helpers:
            spans += self.functions.helpers(file, qualified)
        method = nodeid.split("::")[-1]  # `test_x0` (absl) or `test_x[id]` (pytest)
        holds = self.cases.holds_in(file, qualified, method)  # None: not one case of a parameterised test
        return [diagnostic for diagnostic in diagnostics
                if any(first <= diagnostic.line <= last for first, last in spans)
                and (holds is None or holds(diagnostic))]


def lint_project(path: Path, select: list[str] | None,
                 progress: Callable[[int, int, bool], None] | None = None) -> list[Diagnostic]:
    """nnx-lint's own diagnostics for ``path``, in-process and without the cache.

    The cache is off so that nothing is written into the user's tree. ``--select`` replaces the
    configuration's selection, exactly as for ``nnx-lint check``. ``progress``: as
    :func:`nnx_lint.engine.runner.run`'s.
    """
    from nnx_lint.engine.config import load_settings

    return _lint([path], load_settings(path, None), select, progress)


def lint_dependency_files(files: list[str], select: list[str] | None) -> list[Diagnostic]:
    """nnx-lint's diagnostics for the files of installed dependencies on a traceback
    (:mod:`nnx_lint.gate.dependencies`), with the default settings (a dependency's own configuration
    is not the project's to apply) and ``select`` when given; linter diagnostics (a file that does
    not parse) are left out.

    Each installed-packages directory is linted as the root of its files, so that a dependency's
    imports of its own modules resolve (``qwix._src.providers`` under ``site-packages``).
    """
    from nnx_lint.engine.config import Settings

    by_directory: dict[Path, list[Path]] = {}
    for file in files:
        location = installed_location(file)
        if location is not None and Path(file).is_file():
            by_directory.setdefault(location[0], []).append(Path(file))
    diagnostics: list[Diagnostic] = []
    for directory, paths in sorted(by_directory.items()):
        settings = Settings(root=directory, source_roots=[directory.resolve()])
        diagnostics += _lint(sorted(set(paths)), settings, select)
    return [d for d in diagnostics if d.kind != "linter"]


def _lint(paths: list[Path], settings, select: list[str] | None,
          progress: Callable[[int, int, bool], None] | None = None) -> list[Diagnostic]:
    """``paths`` linted in-process with ``settings``, without the cache; ``select`` replaces the
    settings' selection (a typo raises ``UnknownSelector``)."""
    from nnx_lint.engine.registry import select_rules
    from nnx_lint.engine.runner import run

    if select is not None:
        settings.select = select
        settings.extend_select = []
        select_rules(settings.select, settings.ignore, settings.extend_select)
    # Unproven findings too: a break only they match is counted apart ("unproven"), not as unexplained.
    settings.strict = True
    return list(run(paths, settings, cache_dir=None, progress=progress).diagnostics)


def attribution_to_dict(attribution: Attribution, root: Path) -> dict[str, Any]:
    """The JSON form of one attribution."""
    failure = attribution.failure
    return {
        "deepest_frame": None if attribution.deepest is None else {
            **attribution.deepest.to_dict(), "file": _relative(attribution.deepest.file, root)},
        "exception": None if failure is None else {
            "type": failure.type, "message": failure.message, "category": failure.category, "phase": failure.phase},
        "explained": attribution.explained,
        "summary": attribution.summary(root),
        "matches": [{"code": m.diagnostic.code, "path": display_path(m.diagnostic.path, root),
                     "line": m.diagnostic.line, "how": m.how, "deepest_frame": m.deepest, "kind": m.diagnostic.kind,
                     "dependency": m.dependency, "stored": None if m.stored is None else m.stored[0],
                     "paths": None if m.paths is None else m.paths[0],
                     "frame": {**m.frame.to_dict(), "file": display_path(m.frame.file, root)}}
                    for m in attribution.matches],
    }
