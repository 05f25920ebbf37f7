"""The project being linted: its other modules, read on demand, never imported.

Cross-file analyses (re-exported ``nnx``, a Module class defined in another file) ask
this service for a module by dotted name. It looks for the module's source file under
the project's roots only, so a name that lives in site-packages (flax, jax, ...) is
never read. Every file read for another file's analysis is recorded as a dependency,
so the result cache can tell when that analysis went stale.
"""
from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from pathlib import Path

from astroid import nodes

from nnx_lint.base import bounds
from nnx_lint.analysis import parsing
from nnx_lint.analysis.package_roots import (  # noqa: F401
    find_module_file, is_searchable, module_name_for, module_search_key)

#: How a Project reads a project file: ``read(path)`` returns its bytes (at most the size
#: limit + 1) or raises :class:`nnx_lint.base.bounds.ParseFailure`.
Reader = Callable[[Path], bytes]


def read_from_disk(path: Path) -> bytes:
    """The file's bytes as the CLI reads them (bounded; never a FIFO or a device)."""
    return bounds.read_bounded(path, bounds.LIMITS.source_bytes)


class Project:
    """Finds and parses the project's own modules; records what each analysis read.

    Module names are looked up first under the root of the file being analysed (its
    top-level package's parent directory, see :func:`module_name_for`), then under the
    run's roots, so two example folders that both have a ``train.py`` never mix.
    Parsed modules are cached by path for the whole run.
    """

    def __init__(self, roots: list[Path] | None = None, reader: Reader | None = None) -> None:
        #: Reads project files: from disk, or (the language server) the editor's unsaved buffers first.
        self.read: Reader = reader or read_from_disk
        self.roots: list[Path] = []
        for root in roots or []:
            self.add_root(root)
        self._file_root: Path | None = None
        #: (module name, file root) -> (the file found, its module-search dependency (key, value)).
        self._files: dict[tuple[str, Path | None], tuple[Path | None, tuple[str, str] | None]] = {}
        self._modules: dict[Path, nodes.Module | None] = {}  # by resolved path
        self._digests: dict[Path, str] = {}
        #: path -> (module name, file root, digest of the text) each tree was built with.
        self._built_as: dict[Path, tuple[str, Path | None, bytes]] = {}
        self._mentions: dict[Path, tuple[bool, str]] = {}  # path -> (names nnx, sha256 of the text)
        #: path -> (units, digest) of each project file read to be built: its size is charged
        #: to every file whose analysis uses it (:meth:`bounds.AnalysisBudget.admit_import`).
        self._sizes: dict[Path, tuple[int, str]] = {}
        self._resolving: set[tuple[str, str]] = set()
        self._caller_indexes: dict = {}  # directories -> nnx_lint.analysis.callers.CallerIndex
        self._current_file: Path | None = None
        self._own: tuple[str, nodes.Module] | None = None
        #: path -> sha256 of every other project file the current file's analysis read.
        self.dependencies: dict[str, str] = {}
        #: Changes after a file whose analysis was refused a module for its budget: what was
        #: worked out then, and memoised across files (other modules' name resolvers), may
        #: lack that module, which the next file's budget may allow.
        self.answers_epoch = 0
        self._refused = False

    def start_file(self, path: str, file_root: Path | None = None) -> None:
        """Begin the analysis of another file: dependencies are recorded afresh.

        ``file_root`` is searched first for the file's imports (default: derived from ``path``).
        """
        if self._refused:
            self.answers_epoch += 1
            self._refused = False
        self._current_file = Path(path).resolve()
        self._file_root = (file_root or module_name_for(Path(path))[1]).resolve()
        self._own = None
        self.dependencies = {}

    def end_file(self) -> None:
        """The current file's analysis is over: its tree is no longer kept by name (it goes,
        unless it is also a module that other files import)."""
        self._own = None

    @property
    def current_file(self) -> str | None:
        """The file being analysed, resolved (None before :meth:`start_file`)."""
        return str(self._current_file) if self._current_file is not None else None

    def add_root(self, root: Path) -> None:
        root = root.resolve()
        if root not in self.roots:
            self.roots.append(root)

    def register(self, module_name: str, module: nodes.Module) -> None:
        """Make the file being linted known by name, for the rest of its own analysis.

        It is not kept for other files' analyses: they read it from disk, so that the
        read is recorded as a dependency.
        """
        self._own = (module_name, module)

    def absolute_module(self, module: nodes.Module, relative: str | None, level: int) -> str | None:
        """Resolve ``from ..x import y`` inside ``module`` to an absolute module name."""
        package = module.name.split(".")
        if not module.package:
            package = package[:-1]
        if level - 1 > len(package) or (level and not package):
            return None  # beyond the top, or a top-level module: Python raises ImportError there
        base = package[: len(package) - (level - 1)]
        if relative:
            base = base + relative.split(".")
        return ".".join(base) or None

    def find_file(self, module_name: str) -> Path | None:
        """The source file of a project module, or None (memoised per file root)."""
        key = (module_name, self._file_root)
        answer = self._files.get(key)
        if answer is None:
            found = self._search(module_name)
            # Found or not, the answer is a dependency: a module that appears later (restored
            # on another branch) makes this analysis stale, as does one that goes. The key and
            # value are worked out once: this is asked tens of thousands of times per run.
            dependency = ((module_search_key(self._file_root, module_name), str(found) if found else "")
                          if is_searchable(module_name) else None)
            answer = self._files[key] = (found, dependency)
        found, dependency = answer
        if dependency is not None:
            self.dependencies[dependency[0]] = dependency[1]
        return found

    def _search(self, module_name: str, first_root: Path | None = None) -> Path | None:
        first_root = first_root or self._file_root
        roots = ([first_root] if first_root else []) + [r for r in self.roots if r != first_root]
        return find_module_file(module_name, roots)

    def find_file_from(self, module_name: str, first_root: Path) -> Path | None:
        """The file ``import module_name`` finds for a module whose package root is ``first_root``."""
        found = self._search(module_name, first_root.resolve())
        if is_searchable(module_name):
            self.dependencies[module_search_key(first_root.resolve(), module_name)] = str(found) if found else ""
        return found

    def caller_index(self):
        """The reverse index of callers (:class:`nnx_lint.analysis.callers.CallerIndex`) over the run's
        roots and the current file's package root, built once per set of directories."""
        from nnx_lint.analysis.callers import CallerIndex, top_directories

        directories = top_directories([*self.roots, *([self._file_root] if self._file_root else [])])
        if directories not in self._caller_indexes:
            self._caller_indexes[directories] = CallerIndex(directories, self.read)
        return self._caller_indexes[directories]

    def caller_dependency_value(self, key: str) -> str:
        """The current value of a caller dependency (:func:`nnx_lint.analysis.callers.dependency_key`),
        answered from this project's warm caller indexes."""
        from nnx_lint.analysis.callers import dependency_value

        return dependency_value(key, self._caller_indexes, reader=self.read)

    def forget(self, path: Path, created_or_deleted: bool = False) -> None:
        """``path`` changed (an edit, a save, a new or deleted file): what this project knows
        of it is dropped, so the next analysis that needs it reads it again. Other files' trees
        stay: each was built from its own text alone.

        A long-lived Project (the language server's) calls this; a CLI run never needs to.
        """
        path = Path(path).resolve()
        for table in (self._modules, self._digests, self._built_as, self._mentions, self._sizes):
            table.pop(path, None)
        if created_or_deleted:
            self._files.clear()  # which file a module name finds may have changed
        for index in self._caller_indexes.values():
            index.forget(str(path), created_or_deleted)

    def is_project_module(self, module_name: str) -> bool:
        if self._own is not None and self._own[0] == module_name:
            return True
        return self.find_file(module_name) is not None

    def load(self, module_name: str) -> nodes.Module | None:
        """The astroid tree of a project module, or None if it is not the project's."""
        if self._own is not None and self._own[0] == module_name:
            return self._own[1]
        path = self.find_file(module_name)
        if path is None or path == self._current_file:
            return None
        return self.load_file(path, module_name)

    def load_file(self, path: Path, module_name: str) -> nodes.Module | None:
        """The astroid tree of the project file ``path`` (named ``module_name``), recorded
        as a dependency of the current analysis; None when it cannot be parsed, or when the
        file's analysis budget has no room for it (:meth:`bounds.AnalysisBudget.admit_import`)."""
        budget = bounds.current_budget()
        if path not in self._modules:
            source = None
            if path not in self._sizes:  # a module refused for another file is not read again to be refused
                source = self._source_of(path)
                if source is None:
                    self._modules[path] = None
                    return None
            if budget is not None and not self._fits(budget, path, module_name, *self._sizes[path]):
                return None  # not remembered: another file's analysis may have room for it
            source = source or self._source_of(path)
            if source is None:
                self._modules[path] = None
                return None
            data, text = source
            self._modules[path] = None  # guards against import cycles
            try:
                with budget.building_import() if budget is not None else contextlib.nullcontext():
                    self._modules[path] = parsing.build(text, str(path), module_name, self.is_project_module)
            except parsing.ParseFailure:
                return None
            self._digests[path] = self._sizes[path][1]
            self._built_as[path] = (module_name, self._file_root, _text_digest(text))
        module = self._modules[path]
        if module is None:
            return None
        if budget is not None and not budget.admit_import(str(path), module_name, self._sizes[path][0]):
            self.dependencies[str(path)] = self._digests[path]  # its size decided: a change may fit it
            self._refused = True
            return None
        self.dependencies[str(path)] = self._digests[path]
        return module

    def _source_of(self, path: Path) -> tuple[bytes, str] | None:
        """The bytes and text of a project file to build, its size in units
        (:func:`bounds.source_units`) and digest noted in ``_sizes``; None when it cannot be
        read or is over the bounds of any analysed file."""
        try:
            data = self.read(path)
            text = parsing.decode(data)
            bounds.check_source(text)  # another file's module gets the same bounds as the file
        except parsing.ParseFailure:
            return None
        self._sizes[path] = (bounds.source_units(text), hashlib.sha256(data).hexdigest())
        return data, text

    def _fits(self, budget: bounds.AnalysisBudget, path: Path, module_name: str, units: int, digest: str) -> bool:
        """Whether the module at ``path``, not built yet, may be built for the current file."""
        bounds.checkpoint(f"reading the imported module `{module_name}`")
        if budget.may_build_imports(module_name) and budget.admit_import(str(path), module_name, units):
            return True
        self.dependencies[str(path)] = digest  # its size or the time decided: a change may fit it
        self._refused = True
        return False

    def tree_of_current_file(self, text: str, module_name: str) -> nodes.Module | None:
        """The tree of the file being analysed that an earlier file's analysis built (it
        imported this file), when it is the tree a build would give now: the same text, module
        name and file root, and no ``from ... import *`` (whose expansion asks which modules
        are the project's, an answer that depended on the file analysed then). None otherwise.

        A project's files import each other: this spares the second build of each imported
        file (21 of EasyDeL's 200 linted files). The tree's ``file`` is the resolved path, not
        the displayed one; diagnostics name the file as displayed all the same.
        """
        path = self._current_file
        module = self._modules.get(path) if path is not None else None
        if module is None or self._built_as.get(path) != (module_name, self._file_root, _text_digest(text)):
            return None
        from nnx_lint.base.node_index import nodes_of_class

        if any(imported.names[0][0] == "*" for imported in nodes_of_class(module, nodes.ImportFrom)):
            return None
        return module

    def resolve_attribute(self, module_name: str, attribute: str) -> str | None:
        """The qualified name that ``module_name.attribute`` denotes, following re-exports.

        None when ``module_name`` is not a project module or the attribute is unknown.
        """
        key = (module_name, attribute)
        if key in self._resolving:
            return None
        path = self.find_file(module_name)
        if path is None or not self._mentions_nnx(path):
            # Without `nnx` in its text a module cannot re-export a flax.nnx name (the
            # pre-filter's argument), and for its own classes and functions the caller's
            # fallback `module.attribute` is the same answer: no need to parse it here.
            return None
        module = self.load(module_name)
        if module is None:
            return None
        if self.find_file(f"{module_name}.{attribute}") is not None:
            return f"{module_name}.{attribute}"
        assignments = module.locals.get(attribute)
        if not assignments:
            return None
        from nnx_lint.analysis.names import NameResolver

        self._resolving.add(key)
        try:
            assignment = assignments[-1]
            if isinstance(assignment, (nodes.ClassDef, nodes.FunctionDef)):
                return f"{module_name}.{attribute}"
            return NameResolver(module, self).resolve_assignment(assignment, attribute)
        finally:
            self._resolving.discard(key)

    def _mentions_nnx(self, path: Path) -> bool:
        """Whether the text of the project file ``path`` names ``nnx``; the text is a
        dependency of the current analysis (a re-export added later changes the answer)."""
        if path not in self._mentions:
            from nnx_lint.analysis.prefilter import mentions_nnx

            try:
                data = self.read(path)
                self._mentions[path] = (mentions_nnx(data), hashlib.sha256(data).hexdigest())
            except bounds.ParseFailure:
                self._mentions[path] = (False, "")
        mentions, digest = self._mentions[path]
        self.dependencies.setdefault(str(path), digest)
        return mentions

    def definition(self, qualified_name: str, depth: int = 0) -> nodes.NodeNG | None:
        """The ClassDef/FunctionDef a project qualified name denotes, if it is the project's;
        a name a package re-exports (``from .sowed import pop_sowed`` in ``__init__.py``) is
        followed to its definition, a few re-exports deep."""
        module_name, _, attribute = qualified_name.rpartition(".")
        module = self.load(module_name) if module_name else None
        if module is None:
            return None
        found = module.locals.get(attribute)
        if found and isinstance(found[-1], (nodes.ClassDef, nodes.FunctionDef)):
            return found[-1]
        if found and isinstance(found[-1], nodes.ImportFrom) and depth < 3:
            imported = found[-1]
            original = next((name for name, alias in imported.names if (alias or name) == attribute), None)
            if original is not None and original != "*":
                source = module.relative_to_absolute_name(imported.modname, imported.level)
                return self.definition(f"{source}.{original}", depth + 1)
        return None


def _text_digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


_SHARED: dict[tuple[str, ...], Project] = {}


def shared_project(roots: list[Path]) -> Project:
    """One Project per set of roots and process, so modules are read once per worker.

    Valid for one run: :func:`forget_shared_projects` drops them (files may change between runs).
    """
    key = tuple(sorted(str(r.resolve()) for r in roots))
    if key not in _SHARED:
        _SHARED[key] = Project(list(roots))
    return _SHARED[key]


def forget_shared_projects() -> None:
    """Drop every shared Project: the next run reads project modules afresh."""
    _SHARED.clear()
