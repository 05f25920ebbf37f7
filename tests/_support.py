"""Helpers shared by the linter tests (not the runtime tests)."""
from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
from pathlib import Path

from nnx_lint.base.diagnostic import shown
from nnx_lint.analysis import parsing
from nnx_lint.analysis.context import FileContext
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.analysis.project import Project, module_name_for
from nnx_lint.engine.registry import all_rules, family_package
from nnx_lint.analysis.rule import Rule, expected_markers

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

#: A tied class and a traced function with a baselined NNX101 and NNX301 (issue 27, item 3).
TIED = '''\
from flax import nnx


class Tied(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = nnx.Linear(2, 2, rngs=rngs)
        self.b.kernel = self.a.kernel
        self.count = 0


@nnx.jit
def step(model, x):
    model.count += 1
    return x
'''
#: The issue's unrelated edit: a use of the class somewhere else in the file.
NEW_USE = "\n\nm = Tied(nnx.Rngs(1))\nstep(m, 1)\n"
NEW_FINDING = "\n\nf = nnx.vmap(step, in_axes=(nnx.StateAxes({...: 0}), None))\n"


def family_of(rule: type[Rule]) -> str:
    """The family a rule belongs to: its checkers package name (``prefix_filters``)."""
    return family_package(rule).__name__.rpartition(".")[2]


def family_rules(family: str) -> list[type[Rule]]:
    """The family's rules, plus NNX003 so that a rule crashing on a fixture is visible."""
    return [rule for rule in all_rules() if family_of(rule) == family or rule.code == "NNX003"]


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.py") if p.name.startswith("NNX"))


def fixture_family(path: Path) -> str:
    return path.relative_to(FIXTURES).parts[0]


def fixture_expectations(path: Path) -> set[tuple[int, str]]:
    return expected_markers(path.read_bytes().decode("utf-8", errors="replace"))


_RUNTIME_PACKAGES = {"flax", "jax", "numpy", "optax"}
#: What once tied fixtures to files beside the repository: the specification's reproductions and their
#: helper module (written as a pattern so that a search of the repository for them finds none).
_OUTSIDE_THE_REPOSITORY = re.compile(r"\.\./shared|shared[/]spec|\b_harnes[s]\b|/work/")


def not_self_contained(path: Path) -> str | None:
    """Why the fixture at ``path`` is not self-contained (None: it is). A fixture runs with only flax
    installed (`python <fixture> tree`): it imports the standard library, flax/jax/numpy/optax or its
    own package, and names nothing outside the repository."""
    import sys

    source = path.read_bytes().decode("utf-8", "replace")
    if (outside := _OUTSIDE_THE_REPOSITORY.search(source)) is not None:
        return f"names {outside.group(0)}"
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError):
        return None  # the NNX0xx fixtures that are not Python, or nest deeper than `ast` can
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    foreign = imported - _RUNTIME_PACKAGES - set(sys.stdlib_module_names)
    return f"imports {sorted(foreign)}" if foreign else None


def lint_fixture(path: Path, rules=None):
    """Lint a fixture file the way the CLI does by default (project roots included; unproven
    findings of audit mode left out, as ``shown`` leaves them out)."""
    rules = rules if rules is not None else family_rules(fixture_family(path))
    module_name, root = module_name_for(path)
    project = Project([FIXTURES / fixture_family(path)])
    project.start_file(str(path), root)
    return shown(lint_bytes(path.read_bytes(), str(path), rules, project=project, module_name=module_name,
                            target_version=fixture_target_version(path)), strict=False)


def fixture_target_version(path: Path) -> tuple[int, int] | None:
    """The target version a fixture declares in its first lines (``# fixture: target-version py311``)."""
    from nnx_lint.base.syntax.target import parse_target_version

    found = re.search(r"target-version (py3\d+)", path.read_text("utf-8", "replace")[:200])
    return parse_target_version(found.group(1)) if found else None


def outside_string_literals(program: str, text: str, tree: ast.Module | None = None) -> list[int]:
    """Offsets where ``text`` occurs in ``program`` not wholly inside one string constant
    (an ``ast.Constant`` string that is not part of an f-string): where it would be code.
    ``tree``: ``program`` already parsed, so that it is parsed once (a program that does not
    parse raises ``SyntaxError``, as ``ast.parse`` does)."""
    tree = tree or ast.parse(program)
    if text not in program:
        return []
    offset = _offsets(program)
    spans = [(offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset))
             for node in _string_constants(tree)]
    found, start = [], program.find(text)
    while start != -1:
        if not any(a <= start and start + len(text) <= b for a, b in spans):
            found.append(start)
        start = program.find(text, start + 1)
    return found


def _string_constants(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of ``tree`` outside f-strings: one walk that never enters an
    f-string (the suite runs this on some 1,500 programs, and ``ast.walk`` twice over each
    was a third of the hostile-text tests' time)."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                found.append(node)
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
    return found


def _offsets(program: str):
    """``(line, UTF-8 byte column)`` of ``program`` (as ast gives them) -> its offset in the text."""
    lines = program.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column_bytes: int) -> int:
        return starts[line - 1] + len(lines[line - 1].encode()[:column_bytes].decode())

    return offset


def calls_to_lint(source: str, name: str = "module.py") -> int:
    """Python function calls made while linting ``source`` with every rule: a deterministic
    cost measure, for tests that hold an analysis to linear work."""
    import sys

    from nnx_lint.engine.walk import lint_source

    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        if event == "call":
            calls += 1

    rules = all_rules()
    sys.setprofile(count)
    try:
        lint_source(source, name, rules)
    finally:
        sys.setprofile(None)
    return calls


def partial_facts(rule: type[Rule], **given):
    """``rule``'s typed facts from only some facts (a test's hand-made finding): every other
    required fact is None, as a reader of the stored dict once read a missing key."""
    required = {f.name for f in dataclasses.fields(rule.facts_type)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    missing = {key: None for key, name in rule.facts_type.keys_and_fields() if name in required and key not in given}
    return rule.facts_from({**missing, **given})


def file_context(tmp_path: Path, source: str, files: dict[str, str] | None = None) -> FileContext:
    """A file context for ``source`` as ``main.py`` in ``tmp_path`` (``files``: other project files
    by relative path), the way a check run builds one."""
    for relative, text in (files or {}).items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    text = textwrap.dedent(source)
    path = tmp_path / "main.py"
    path.write_text(text)
    project = Project([tmp_path])
    project.start_file(str(path))
    module = parsing.build(text, str(path), "main", project.is_project_module)
    project.register("main", module)
    return FileContext(module, str(path), project)


def resolve_dotted(name: str):
    """The object a dotted library name denotes in the installed packages (a trailing dot, as in
    the prefix ``"flax.nnx."``, names the package): the longest importable module prefix, then
    ``getattr`` down the rest. Skips an optax name when optax is not installed; raises
    ``AttributeError`` / ``LookupError`` when the name is gone."""
    import importlib
    import importlib.util

    import pytest

    if name.startswith("optax.") and importlib.util.find_spec("optax") is None:
        pytest.skip("optax is not installed (it comes with the runtime and test extras)")
    parts = name.rstrip(".").split(".")
    for split in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            value = getattr(value, attribute)  # AttributeError: the library no longer has this name
        return value
    raise LookupError(f"{name}: no importable prefix")
