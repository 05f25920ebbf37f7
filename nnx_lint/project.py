"""The project being linted: its other modules, read on demand, never imported.

Cross-file analyses (re-exported ``nnx``, a Module class defined in another file) ask
this service for a module by dotted name. It looks for the module's source file under
the project's roots only, so a name that lives in site-packages (flax, jax, ...) is
never read. Every file read for another file's analysis is recorded as a dependency,
so the result cache can tell when that analysis went stale.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from astroid import nodes

from nnx_lint import parsing


def module_name_for(path: Path) -> tuple[str, Path]:
    """The dotted module name of ``path`` and the root directory it is relative to.

    Walks up through packages (directories with ``__init__.py``).
    """
    path = path.resolve()
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.stem, directory


class Project:
    """Finds and parses the project's own modules; records what each analysis read."""

    def __init__(self, roots: list[Path] | None = None) -> None:
        self.roots: list[Path] = []
        for root in roots or []:
            self.add_root(root)
        self._modules: dict[str, nodes.Module | None] = {}
        self._sources: dict[str, tuple[str, str]] = {}
        self._files: dict[tuple[str, int], Path | None] = {}  # module name -> (path, sha256)
        self._resolving: set[tuple[str, str]] = set()
        self._current_file: str | None = None
        self._own: tuple[str, nodes.Module] | None = None
        #: path -> sha256 of every other project file the current file's analysis read.
        self.dependencies: dict[str, str] = {}

    def start_file(self, path: str) -> None:
        """Begin the analysis of another file: dependencies are recorded afresh."""
        self._current_file = str(Path(path).resolve())
        self._own = None
        self.dependencies = {}

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
        if level - 1 > len(package):
            return None
        base = package[: len(package) - (level - 1)]
        if relative:
            base = base + relative.split(".")
        return ".".join(base) or None

    def find_file(self, module_name: str) -> Path | None:
        """The source file of a project module under the roots, or None (memoised)."""
        key = (module_name, len(self.roots))
        if key not in self._files:
            self._files[key] = self._search(module_name)
        return self._files[key]

    def _search(self, module_name: str) -> Path | None:
        if not module_name or not all(part.isidentifier() for part in module_name.split(".")):
            return None
        relative = Path(*module_name.split("."))
        for root in self.roots:
            for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None

    def is_project_module(self, module_name: str) -> bool:
        if self._own is not None and self._own[0] == module_name:
            return True
        return self._modules.get(module_name) is not None or self.find_file(module_name) is not None

    def load(self, module_name: str) -> nodes.Module | None:
        """The astroid tree of a project module, or None if it is not the project's."""
        if self._own is not None and self._own[0] == module_name:
            return self._own[1]
        if module_name in self._modules:
            self._record(module_name)
            return self._modules[module_name]
        self._modules[module_name] = None  # guards against import cycles
        path = self.find_file(module_name)
        if path is None:
            return None
        try:
            data = path.read_bytes()
            text = parsing.decode(data)
            module = parsing.build(text, str(path), module_name, self.is_project_module)
        except (OSError, parsing.ParseFailure):
            return None
        self._sources[module_name] = (str(path.resolve()), hashlib.sha256(data).hexdigest())
        self._modules[module_name] = module
        self._record(module_name)
        return module

    def _record(self, module_name: str) -> None:
        source = self._sources.get(module_name)
        if source is not None and source[0] != self._current_file:
            self.dependencies[source[0]] = source[1]

    def resolve_attribute(self, module_name: str, attribute: str) -> str | None:
        """The qualified name that ``module_name.attribute`` denotes, following re-exports.

        None when ``module_name`` is not a project module or the attribute is unknown.
        """
        key = (module_name, attribute)
        if key in self._resolving:
            return None
        module = self.load(module_name)
        if module is None:
            return None
        if self.find_file(f"{module_name}.{attribute}") is not None:
            return f"{module_name}.{attribute}"
        assignments = module.locals.get(attribute)
        if not assignments:
            return None
        from nnx_lint.names import NameResolver

        self._resolving.add(key)
        try:
            assignment = assignments[-1]
            if isinstance(assignment, (nodes.ClassDef, nodes.FunctionDef)):
                return f"{module_name}.{attribute}"
            return NameResolver(module, self).resolve_assignment(assignment, attribute)
        finally:
            self._resolving.discard(key)

    def definition(self, qualified_name: str) -> nodes.NodeNG | None:
        """The ClassDef/FunctionDef a project qualified name denotes, if it is the project's."""
        module_name, _, attribute = qualified_name.rpartition(".")
        module = self.load(module_name) if module_name else None
        if module is None:
            return None
        found = module.locals.get(attribute)
        if found and isinstance(found[-1], (nodes.ClassDef, nodes.FunctionDef)):
            return found[-1]
        return None


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
