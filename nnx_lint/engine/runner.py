"""Running the engine over files and directories: discovery, cache, parallel workers."""
from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nnx_lint.base import bounds
from nnx_lint.engine.cache import Entry, ResultCache, code_fingerprint
from nnx_lint.engine.config import Settings
from nnx_lint.base.diagnostic import Diagnostic, shown
from nnx_lint.engine.discovery.tracked import TrackedFiles, skipped_by_default
from nnx_lint.engine.file_config import is_path_excluded, rules_for_selectors
from nnx_lint.engine.file_config import selectors_for as _selectors
from nnx_lint.engine.stamps import FileStamps


@dataclass
class RunResult:
    """What a run found, plus counts for the summary line."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_checked: int = 0
    files_analysed: int = 0
    files_from_cache: int = 0
    #: Index in ``diagnostics`` -> verdict, filled by ``--confirm``.
    confirmations: dict = field(default_factory=dict)
    #: Index in ``diagnostics`` -> :class:`nnx_lint.fixes.model.Fix`, for the JSON output.
    fixes: dict = field(default_factory=dict)
    #: The sha256 of each file the run read (or knew unchanged), by absolute path: the fix
    #: cache keys on it instead of reading and hashing the file again.
    digests: dict[str, str] = field(default_factory=dict)
    #: Why findings have no fix (libcst missing, the project's flax too old for a pin), one summary
    #: line of the text formats (:mod:`nnx_lint.fixes.missing`); None when nothing explains it.
    fix_note: str | None = None


def discover(paths: Iterable[Path], settings: Settings) -> Iterator[Path]:
    """Python files and notebooks under ``paths``, skipping VCS dirs, virtualenvs, excludes
    and (``respect-gitignore``) what ``.gitignore`` files ignore (:mod:`nnx_lint.engine.discovery`),
    unless git tracks it: as in git, the patterns (and the default excludes) apply to untracked
    files only.

    A file named explicitly is linted even if its extension is not ``.py`` (and reported if
    it is not a regular file), and even if it is excluded, unless ``settings.force_exclude``
    is set. This runs on every file of every run, cached or not, so it avoids per-file
    system calls.
    """
    seen: set[str] = set()
    tracked = TrackedFiles()  # asked only about what the patterns would drop
    for path in paths:
        if settings.force_exclude and is_path_excluded(settings, path):
            continue  # `--force-exclude`: excludes apply to paths named explicitly too
        if not path.is_dir():
            key = os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                yield path
            continue
        # respect-gitignore: the .gitignore patterns in force in each directory (read as data),
        # and whether the directory is itself ignored (entered only for what git tracks in it).
        from nnx_lint.engine.discovery.gitignore import Gitignore, walk_top

        ignores = {os.path.abspath(path): (Gitignore.above(path, walk_top(path, settings.root)), False)} \
            if settings.respect_gitignore else None
        for directory, subdirectories, files in os.walk(path):
            current = Path(directory)
            gitignore, inside_ignored = None, False
            if ignores is not None:
                gitignore, inside_ignored = ignores.pop(os.path.abspath(directory))
                gitignore = gitignore.descend(directory)
            ignored = {}  # entry -> whether the patterns (or an ignored directory above) ignore it

            def dropped(entry: str, is_dir: bool) -> bool:
                # git: a pattern, or an ignored directory above (which no `!` re-includes from),
                # hides an untracked path; a tracked one never.
                if gitignore is None:
                    return False
                ignored[entry] = inside_ignored or gitignore.ignores(entry, is_dir)
                return ignored[entry] and not tracked.holds_tracked(entry, is_dir)

            subdirectories[:] = sorted(
                d for d in subdirectories
                if not settings.is_excluded(current / d, is_dir=True, defaults=False)
                and not skipped_by_default(os.path.join(directory, d), tracked)
                and not dropped(os.path.join(directory, d), is_dir=True)
            )
            if ignores is not None:
                for d in subdirectories:
                    entry = os.path.join(directory, d)
                    ignores[os.path.abspath(entry)] = (gitignore, ignored[entry])
            for name in sorted(files):
                if name.endswith((".py", ".pyi", ".ipynb")):
                    file = current / name
                    key = os.path.abspath(file)
                    if key not in seen and not dropped(key, is_dir=False) and not settings.is_excluded(file):
                        seen.add(key)
                        yield file


def analyse_file(path: str, display: str, selectors: tuple, roots: list[str],
                 target_version: tuple[int, int] | None = None) -> tuple[list[dict], dict[str, str]]:
    """Lint one file (in this process or a worker): diagnostics as dicts, and dependencies."""
    from nnx_lint.engine.walk import _internal_error, _linter_diagnostic, lint_bytes
    from nnx_lint.analysis.project import module_name_for, shared_project

    rules = rules_for_selectors(selectors)
    enabled = {rule.code for rule in rules}
    try:
        data = bounds.read_bounded(path)
    except bounds.ParseFailure as failure:
        found = [_linter_diagnostic(failure.code, failure.message, display)]
        return [d.to_dict() for d in found if d.code in enabled], {}
    try:
        project = shared_project([Path(r) for r in roots])
        module_name, package_root = module_name_for(Path(path))
        project.start_file(path, package_root)
        # Unproven findings are cached too; the run shows them only in audit mode (run()).
        diagnostics = lint_bytes(data, display, rules, project=project, module_name=module_name,
                                 target_version=target_version, strict=True)
        project.end_file()
    except Exception:  # one file's failure is reported for that file; the run goes on
        return [d.to_dict() for d in [_internal_error(display)] if d.code in enabled], {}
    return [d.to_dict() for d in diagnostics], project.dependencies


def _analyse_batch(batch: list[tuple], in_worker: bool = True) -> Iterator[tuple]:
    from nnx_lint.engine.collection import fewer_collections, settle_file

    with fewer_collections(keep_frozen=in_worker):
        for job in batch:
            outcome = analyse_file(*job)
            settle_file()
            yield outcome


def run(paths: list[Path], settings: Settings, *, jobs: int = 0, cache_dir: Path | None = None,
        on_file: Callable[[str, str, list[Diagnostic]], None] | None = None,
        progress: Callable[[int, int, bool], None] | None = None) -> RunResult:
    """Lint ``paths`` with ``settings``; ``jobs=0`` means one worker per CPU.

    ``on_file(absolute path, sha256, diagnostics)`` is told each file's findings, as the run
    reports them, as soon as they are known: with ``-j 1`` before the next file is linted, with
    lint workers from the threads that drive them (one call at a time). The command line's fix
    marks ask for their fixes meanwhile (:mod:`nnx_lint.fixes.marks`).

    ``progress(done, total, invalidated)`` is told the files analysed so far of those the cache
    could not answer, first with ``done`` 0 and then as each is done (from the same threads as
    ``on_file``); ``invalidated``: some unchanged file's cache entry was made under another key
    (another nnx-lint, selection, set of roots or target version), so it is analysed again."""
    project_module = sys.modules.get("nnx_lint.analysis.project")  # not imported at all on a warm run
    if project_module is not None:
        project_module.forget_shared_projects()
    # The analysis' modules are imported as a file needs them, so that a run the cache answers
    # whole imports none of them (nor astroid, nor the rules: tests/test_startup.py): the text
    # pre-filter for a file not stamped, the module searches and caller indexes for an entry
    # that depends on them.
    from nnx_lint.analysis.callers import KEY_PREFIX as CALLERS_KEY_PREFIX
    from nnx_lint.analysis.package_roots import MODULE_SEARCH_KEY

    result = RunResult()
    cache = ResultCache.open(cache_dir)
    fingerprint = code_fingerprint() if cache.path else ""
    stamps = FileStamps(cache_dir if cache.path else None, fingerprint)
    digests: dict[str, str] = {}
    listing = None  # the module searches recorded as dependencies read each directory once (DirectoryListing)
    caller_indexes: dict = {}  # for the dependencies that stand for "the callers of a function"
    caller_answers = None  # their values from earlier runs (nnx_lint.analysis.callers.CallerAnswers), on first use

    def digest_of(file: str) -> str:
        if file.startswith(MODULE_SEARCH_KEY):
            if file not in digests:
                from nnx_lint.analysis.package_roots import DirectoryListing, module_search_result

                nonlocal listing
                listing = listing if listing is not None else DirectoryListing()
                digests[file] = module_search_result(file, roots, listing)
            return digests[file]
        if file.startswith(CALLERS_KEY_PREFIX):
            from nnx_lint.analysis.callers import CallerAnswers, dependency_value

            nonlocal caller_answers
            if caller_answers is None:
                caller_answers = CallerAnswers(cache_dir)
            return dependency_value(file, caller_indexes, caller_answers)
        if file not in digests:
            known = stamps.known(file)
            if known is not None:
                digests[file] = known[0]
            else:
                try:
                    digests[file] = hashlib.sha256(bounds.read_bounded(file)).hexdigest()
                except bounds.ParseFailure:
                    digests[file] = ""
        return digests[file]

    roots = [str(root) for root in settings.analysis_roots()]
    pending: list[tuple] = []
    keys: list[tuple[str, str, str]] = []
    invalidated = False
    for file in discover(paths, settings):
        result.files_checked += 1
        display = _display_path(file)
        key = os.path.abspath(file)
        known = stamps.known(key)  # unchanged since it was last read: neither read nor hashed again
        if known is not None:
            digest, mentions = known
            readable = True
        else:
            try:
                data = bounds.read_bounded(file)  # at most the size limit + 1 byte; never a FIFO
            except bounds.ParseFailure:
                data = None  # analyse_file reports why
            readable = data is not None
            # "mentions" stands for "analyse it": it could name nnx, or it does not decode or parse
            # (NNX001, NNX002 whatever it names); the stamp keeps the verdict for the next run.
            if readable:
                from nnx_lint.analysis.prefilter import must_analyse
            mentions = readable and must_analyse(data, notebook=file.suffix == ".ipynb")
            digest = hashlib.sha256(data).hexdigest() if readable else ""
            if readable:
                stamps.record(key, digest, mentions)
        if readable and not mentions:
            continue  # the pre-filter: no astroid work for files no rule can match
        selectors = _selectors(settings, file)
        digests[key] = digest
        # The roots decide which project modules an import finds, so they key the entry too;
        # the target version decides which syntax is reported.
        run_fingerprint = f"{fingerprint}:{selectors!r}:{roots!r}:{settings.target_version!r}"
        cached = cache.lookup(key, digest, run_fingerprint, digest_of) if readable else None
        if cached is not None:
            result.files_from_cache += 1
            # Stored as displayed then: re-displayed now (related paths in other files follow).
            found = [Diagnostic.from_dict(d).with_path(display) for d in cached]
            result.diagnostics.extend(found)
            if on_file is not None:
                on_file(key, digest, shown(found, settings.strict))
            continue
        pending.append((str(file), display, selectors, roots, settings.target_version))
        keys.append((key, digest, run_fingerprint))
        invalidated = invalidated or (readable and cache.made_under_another_key(key, digest, run_fingerprint))

    handed_over: dict[int, list[Diagnostic]] = {}  # each file's findings, told to on_file once
    if progress is not None:
        progress(0, len(pending), invalidated)

    def hand_over(index: int, outcome: tuple) -> None:
        # With lint workers, from the threads that drive them as each file is done.
        key, digest, _run_fingerprint = keys[index]
        found = handed_over[index] = [Diagnostic.from_dict(d) for d in outcome[0]]
        if on_file is not None:
            on_file(key, digest, shown(found, settings.strict))
        if progress is not None:
            progress(result.files_analysed + len(handed_over), len(pending), invalidated)

    told = on_file is not None or progress is not None
    # The outcomes drive the loop, so that _execute runs to its end (and leaves its collection settings).
    for index, outcome in enumerate(_execute(pending, jobs, hand_over if told else None)):
        if index not in handed_over:
            hand_over(index, outcome)
        diagnostics, dependencies = outcome
        key, digest, run_fingerprint = keys[index]
        result.files_analysed += 1
        result.diagnostics.extend(handed_over.pop(index))
        if digest:
            cache.store(key, Entry(digest, run_fingerprint, dependencies, diagnostics))
            for dependency, value in dependencies.items():
                if dependency.startswith(CALLERS_KEY_PREFIX) and cache.path is not None:
                    # The analysis computed it: the next run checks it against the files' stat only.
                    from nnx_lint.analysis.callers import CallerAnswers, remember_computed

                    if caller_answers is None:
                        caller_answers = CallerAnswers(cache_dir)
                    remember_computed(caller_answers, dependency, value)
    cache.save()
    stamps.save()
    result.digests = {path: digest for path, digest in digests.items() if digest and os.path.isabs(path)}
    if caller_answers is not None:
        caller_answers.save()
    # Unproven findings are cached like the others and shown only in audit mode (--strict).
    result.diagnostics = sorted(shown(result.diagnostics, settings.strict), key=Diagnostic.sort_key)
    return result


def _execute(pending: list[tuple], jobs: int,
             on_answer: Callable[[int, tuple], None] | None = None) -> Iterator[tuple]:
    """Each pending file's ``(diagnostics, dependencies)``, in order; in this process (one
    job, or a few files), each as soon as it is linted. With lint workers, all at the end,
    and each also to ``on_answer(index, outcome)`` as soon as its worker answers (from the
    threads that drive the workers, one call at a time)."""
    if not pending:
        return  # the cache answered every file: nothing to analyse, no collection settings to change
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(pending) < 4:
        yield from _analyse_batch(pending, in_worker=False)
        return
    from nnx_lint.engine.workers.pool import run_in_workers

    requests = [{"path": path, "display": display, "selectors": selectors, "roots": roots,
                 "target_version": list(target) if target else None}
                for path, display, selectors, roots, target in pending]
    answers = run_in_workers(requests, jobs, "lint", pending[0][3], _killed_once, _killed_twice, on_answer)
    yield from ((diagnostics, dependencies) for diagnostics, dependencies in answers)


def prepare() -> None:
    """In a lint worker: import the whole analysis stack up front, so the worker's module
    check covers it before the first file (see :mod:`nnx_lint.engine.workers.serve`)."""
    import nnx_lint.engine.walk  # noqa: F401
    import nnx_lint.analysis.project  # noqa: F401
    from nnx_lint.engine.registry import all_rules

    all_rules()


def answer(request: dict) -> tuple[list[dict], dict[str, str]]:
    """In a lint worker: one file's :func:`analyse_file` outcome (selectors arrive as JSON lists)."""
    selectors = _selectors_from_json(request["selectors"])
    target = request.get("target_version")
    target_version = (int(target[0]), int(target[1])) if isinstance(target, list) and len(target) == 2 else None
    return list(_analyse_batch([(request["path"], request["display"], selectors, request["roots"], target_version)]))[0]


def _selectors_from_json(data: list) -> tuple:
    """Selectors as :func:`nnx_lint.engine.file_config.selectors_for` makes them (hashable again)."""
    select, ignore, extend = data
    return (tuple(select) if select is not None else None, tuple(ignore), tuple(extend))


def _killed_once(request: dict, how: str) -> None:
    from nnx_lint.base.escaping import printable

    # Out of memory is the usual cause; saying so on stderr keeps it visible in a CI log.
    print(f"nnx-lint: warning: the worker process analysing {printable(request['display'])} {how}; "
          "the file is retried alone in a fresh worker", file=sys.stderr)


def _killed_twice(request: dict, how: str) -> tuple[list[dict], dict[str, str]]:
    """The outcome of a file whose worker died on it, and died again when it was retried alone."""
    from nnx_lint.engine.walk import _linter_diagnostic

    enabled = {rule.code for rule in rules_for_selectors(_selectors_from_json(request["selectors"]))}
    found = _linter_diagnostic(
        "NNX004", f"the worker process analysing this file {how}, and so did a fresh one analysing it alone: "
        "it was not analysed (out of memory, or a crash)", request["display"])
    return [d.to_dict() for d in [found] if d.code in enabled], {}


def _display_path(path: Path) -> str:
    try:
        return os.path.relpath(path) if path.is_absolute() else os.path.normpath(str(path))
    except ValueError:
        return str(path)
