"""The language server's warm state: open buffers, projects, and each open file's findings.

Nothing here speaks the protocol (:mod:`nnx_lint.frontends.server.protocol` does), so the state is
tested without a client. A file is analysed exactly as ``nnx-lint check FILE`` analyses it:
the configuration of its nearest ``pyproject.toml`` (:func:`nnx_lint.engine.file_config.settings_for_file`,
re-read when the file's modification time changes), its rules with ``per-file-ignores``,
``exclude``, ``# noqa`` and an optional baseline, through :func:`nnx_lint.engine.walk.lint_bytes`.

What stays warm between requests is what a CLI run builds once and throws away: one
:class:`~nnx_lint.analysis.project.Project` per set of analysis roots, with the trees of the project
modules it has read and its reverse index of callers, and the rule selections. The project
reads an open file's unsaved buffer instead of the disk, so a file that imports it sees the
edit. Each open file's result records its dependencies (the other files its analysis read,
and the caller questions it asked, as :mod:`nnx_lint.engine.cache` records them); an edit makes the
project forget the edited file and re-analyses the open files that depend on it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.frontends.baseline import BaselineError, Entry, apply_baseline, read_baseline
from nnx_lint.analysis.callers import KEY_PREFIX as CALLERS_KEY_PREFIX
from nnx_lint.engine.config import ConfigError, Settings
from nnx_lint.base.diagnostic import Diagnostic
from nnx_lint.engine.file_config import is_path_excluded, rules_for, settings_for_file
from nnx_lint.analysis.project import Project, module_name_for, read_from_disk

#: The file names whose change can change every open file's findings.
CONFIG_NAMES = ("pyproject.toml",)


def canonical(path: str | Path) -> Path:
    """The key of a file in the state: absolute, symlinks resolved (as a Project names files)."""
    return Path(os.path.realpath(path))


@dataclass
class FileResult:
    """One analysis of one open file."""

    #: The findings, as ``nnx-lint check`` reports them (paths absolute).
    diagnostics: list[Diagnostic]
    #: The text that was analysed (the buffer at the time).
    text: str
    #: What the findings depend on: other files' resolved paths and caller questions -> digests.
    dependencies: dict[str, str] = field(default_factory=dict)
    #: Why the file could not be analysed with its configuration (an invalid pyproject.toml).
    config_error: str | None = None
    #: Why the baseline was not applied (unreadable or malformed), if one is configured.
    baseline_error: str | None = None
    #: The analysis roots of the project that analysed it (its caller questions are asked there).
    roots: tuple[str, ...] = ()


class Workspace:
    """The open files, the warm projects, and every open file's latest result.

    Not thread-safe: the server runs every call on one worker thread, in order.
    """

    def __init__(self, baseline: str | None = None) -> None:
        #: ``--baseline FILE``: relative to each file's project root, like the CLI's (which is
        #: relative to the working directory, usually that root).
        self.baseline = baseline
        self.buffers: dict[Path, str] = {}
        self.results: dict[Path, FileResult] = {}
        self._projects: dict[tuple[str, ...], Project] = {}
        self._baselines: dict[Path, tuple[int, list[Entry]]] = {}

    # -- reading ------------------------------------------------------------------------
    def read(self, path: Path) -> bytes:
        """A file's bytes: its open buffer if there is one, else the disk (bounded)."""
        text = self.buffers.get(canonical(path))
        if text is not None:
            return text.encode("utf-8", "surrogatepass")
        return read_from_disk(path)

    def project_for(self, settings: Settings) -> Project:
        """The warm project of ``settings``' analysis roots (built on first use)."""
        key = _roots_key(settings)
        if key not in self._projects:
            self._projects[key] = Project([Path(root) for root in key], reader=self.read)
        return self._projects[key]

    # -- changes ------------------------------------------------------------------------
    def open(self, path: str | Path, text: str) -> set[Path]:
        """A file was opened (or its buffer changed): the open files to analyse again."""
        key = canonical(path)
        before = self.buffers.get(key)
        self.buffers[key] = text
        if before is None:
            try:
                before = read_from_disk(key).decode("utf-8")
            except Exception:  # unreadable or not UTF-8: treat the buffer as a change
                before = None
        if before == text:
            return {key}  # what other files read of it is the same text: only it needs analysing
        return self.changed(key) | {key}

    def close(self, path: str | Path) -> set[Path]:
        """A file was closed: its result goes, and files that read its buffer read the disk."""
        key = canonical(path)
        self.buffers.pop(key, None)
        self.results.pop(key, None)
        return self.changed(key)

    def changed(self, path: str | Path, created_or_deleted: bool = False) -> set[Path]:
        """``path`` changed (a buffer edit, a save, a file created or deleted on disk): the
        projects forget it; returns the open files whose findings may change."""
        key = canonical(path)
        if key.name in CONFIG_NAMES or (self.baseline and key.name == Path(self.baseline).name):
            self._projects.clear()  # the roots (`src`) may differ now: every project is rebuilt
            self._baselines.clear()
            return set(self.buffers)
        for project in self._projects.values():
            project.forget(key, created_or_deleted)
        affected = {key} if key in self.buffers else set()
        for other, result in self.results.items():
            if other in self.buffers and self._depends_on(result, str(key)):
                affected.add(other)
        return affected

    def _depends_on(self, result: FileResult, path: str) -> bool:
        if path in result.dependencies:
            return True
        questions = [(k, v) for k, v in result.dependencies.items() if k.startswith(CALLERS_KEY_PREFIX)]
        if not questions:
            return False
        project = self._projects.get(result.roots)
        if project is None:
            return True  # its project was dropped (a configuration change): analyse it again
        # A caller question's answer (which files may call a function) changes when a caller
        # is edited in or out: ask it again, as a warm `check` does.
        return any(project.caller_dependency_value(k) != v for k, v in questions)

    # -- analysis -----------------------------------------------------------------------
    def analyse(self, path: str | Path) -> FileResult:
        """Analyse one open file from its buffer; the result is kept as its latest."""
        from nnx_lint.engine.collection import fewer_collections, settle_file

        key = canonical(path)
        text = self.buffers[key]
        with fewer_collections():
            result = self._analyse(key, text)
            settle_file()  # astroid's node caches let go of the old trees (a long-lived process)
        self.results[key] = result
        return result

    def _analyse(self, key: Path, text: str) -> FileResult:
        from nnx_lint.engine.walk import lint_bytes

        try:
            settings = settings_for_file(key)
            rules = rules_for(settings, key)
        except ConfigError as exc:
            return FileResult([], text, config_error=str(exc))
        if is_path_excluded(settings, key) or key.suffix == ".ipynb":
            # Excludes apply, as in pre-commit and the plugins. A notebook's buffer is its JSON,
            # where cell positions mean nothing to the editor: notebooks are left to the CLI.
            return FileResult([], text)
        project = self.project_for(settings)
        module_name, package_root = module_name_for(key)
        project.start_file(str(key), package_root)
        data = text.encode("utf-8", "surrogatepass")
        try:
            diagnostics = lint_bytes(data, str(key), rules, project=project, module_name=module_name,
                                     strict=settings.strict)
        finally:
            dependencies = dict(project.dependencies)
            project.end_file()
        result = FileResult(diagnostics, text, dependencies, roots=_roots_key(settings))
        if self.baseline:
            self._apply_baseline(result, settings, data)
        return result

    def _apply_baseline(self, result: FileResult, settings: Settings, data: bytes) -> None:
        baseline = Path(self.baseline)
        if not baseline.is_absolute():
            baseline = settings.root / baseline
        try:
            modified = baseline.stat().st_mtime_ns
        except OSError:
            result.baseline_error = f"cannot read baseline {baseline}"
            return
        cached = self._baselines.get(baseline)
        if cached is None or cached[0] != modified:
            try:
                cached = self._baselines[baseline] = (modified, read_baseline(baseline))
            except BaselineError as exc:
                result.baseline_error = str(exc)
                return
        # The fingerprints hash the buffer's lines, as `check - --stdin-filename` does.
        outcome = apply_baseline(result.diagnostics, cached[1], settings.root, None, lambda _path: data)
        result.diagnostics = outcome.new

    def fix_settings(self, path: str | Path):
        """What the fixes of the open file ``path`` follow, as ``check --fix`` does for it: the
        project's flax (pins it cannot take are not offered), line length and indent width.
        None when its configuration cannot be read (then no fix is offered)."""
        from nnx_lint.fixes.flax_target import project_flax_for
        from nnx_lint.fixes.line_length import settings_indent_width, settings_line_length

        key = canonical(path)
        try:
            settings = settings_for_file(key)
            codes = tuple(rule.code for rule in rules_for(settings, key))
        except ConfigError:
            return None
        return FixSettings(project_flax_for(settings), settings_line_length(settings).value,
                           settings_indent_width(settings).value, codes, _roots_key(settings))

    def is_current(self, path: str | Path) -> bool:
        """Whether the latest result of ``path`` was computed from its current buffer."""
        key = canonical(path)
        result = self.results.get(key)
        return result is not None and result.text == self.buffers.get(key)


@dataclass(frozen=True)
class FixSettings:
    """The project settings a file's fixes follow (:meth:`Workspace.fix_settings`)."""

    flax: object
    line_length: int
    indent_width: int | None
    #: The file's rules (what "fix all" lints each pass with) and its project's analysis roots.
    codes: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()

    @property
    def flax_json(self) -> dict:
        """:attr:`flax` as plain data, as it crosses to the fix worker."""
        from dataclasses import asdict

        return asdict(self.flax)


def _roots_key(settings: Settings) -> tuple[str, ...]:
    return tuple(str(root) for root in settings.analysis_roots())
