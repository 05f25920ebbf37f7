"""Fixes: every rule offers one or says why not; fixes never break code; fixes proven by running."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("libcst")

import libcst as cst  # noqa: E402

from nnx_lint.cli import main
from nnx_lint.engine.walk import lint_source
from nnx_lint.fixes.apply import fix_for, fix_notebook, fix_text, parses
from nnx_lint.base.fix_kinds import Rewrite, RewriteSite
from nnx_lint.fixes.catalog import class_level
from nnx_lint.fixes.model import DISPLAY_ONLY, PIN, SAFE, apply_edits
from nnx_lint.fixes.rewrites import rewrite_fix
from nnx_lint.fixes.source import SourceIndex
from nnx_lint.engine.registry import all_rules, rule_by_code

FIXABLE = [rule for rule in all_rules() if rule.fixes]
CASES = [(rule, case) for rule in FIXABLE for case in rule.INVALID if not case.files]


def test_every_rule_has_a_fix_or_says_why_not() -> None:
    """A rule's ``fixes`` are the pin and rewrites declared beside it, each named once among all rules."""
    owners: dict[str, str] = {}
    for rule in all_rules():
        assert bool(rule.fixes) != bool(rule.no_fix_reason), rule.code
        for kind in rule.fixes:
            assert kind == PIN or isinstance(kind, Rewrite), (rule.code, kind)
        names = [kind if kind == PIN else kind.name for kind in rule.fixes]
        assert len(names) == len(set(names)), rule.code
        for rewrite in rule.rewrites():
            # Beside its rule: in the rule's module or its family package, never in the core.
            assert rewrite.build.__module__.startswith(rule.__module__.rpartition(".")[0] + "."), rewrite.name
            assert owners.setdefault(rewrite.name, rule.code) == rule.code, (rewrite.name, rule.code)
    assert owners, "no rule offers a rewrite: the rewrite tests below test nothing"


def test_a_rewrite_is_found_with_its_rule_and_makes_what_it_declares() -> None:
    """A rewrite named in a rule's ``fixes`` is run by ``fix_for`` with no registry (discovery finds it),
    and makes a fix of its declared applicability, or a display-only TODO."""
    made = Counter()
    for rule in FIXABLE:
        for rewrite in rule.rewrites():
            for case in rule.INVALID:
                if case.files:
                    continue
                index = SourceIndex(case.source)
                for diagnostic in _lint(rule)(case.source):
                    fix = rewrite_fix(rewrite, index, diagnostic)
                    if fix is not None:
                        assert fix.applicability in (rewrite.applicability, DISPLAY_ONLY), (rule.code, fix)
                        made[rewrite.name] += fix.applicability == rewrite.applicability
    assert set(made) == {r.name for rule in FIXABLE for r in rule.rewrites()}
    assert all(made.values()), made


def test_the_site_a_builder_gets_has_what_the_protocol_promises() -> None:
    """Rules type their builders with ``RewriteSite`` (no libcst); the machinery's ``Site`` must offer all of it."""
    from nnx_lint.fixes.rewrites import Site

    promised = {name for name in vars(RewriteSite) if not name.startswith("_")} | set(RewriteSite.__annotations__)
    assert {"cst", "index", "diagnostic", "facts", "pin", "unsafe", "todo"} <= promised
    rule = rule_by_code("NNX702")
    source = rule.INVALID[0].source
    site = Site(SourceIndex(source), _lint(rule)(source)[0])
    assert [name for name in promised if not hasattr(site, name)] == []
    assert site.cst is cst and site.facts.api and isinstance(site.node_at_diagnostic(), cst.Call)


def test_a_rewrite_that_makes_an_undeclared_fix_is_refused() -> None:
    rule = rule_by_code("NNX105")
    [pin, declared] = rule.fixes
    lying = Rewrite("lying-rewrite", DISPLAY_ONLY, "says display-only, makes an unsafe fix",
                    lambda site: site.unsafe("an edit", site.index.edit(0, 0, "# edited\n")))
    case = rule.INVALID[0].source
    diagnostic = _lint(rule)(case)[0]
    with pytest.raises(ValueError, match="declared display-only"):
        rewrite_fix(lying, SourceIndex(case), diagnostic)
    assert rewrite_fix(declared, SourceIndex(case), diagnostic).applicability == DISPLAY_ONLY


def test_class_level_rules_report_every_use() -> None:
    """A rule is class-level when its facts declare ``pin_every_use``; its diagnostics then carry it."""
    class_level_rules = [rule for rule in all_rules() if class_level(rule)]
    assert {"NNX101", "NNX102", "NNX105"} <= {rule.code for rule in class_level_rules}
    for rule in class_level_rules:
        diagnostics = [d for case in rule.INVALID if not case.files for d in _lint(rule)(case.source)]
        assert diagnostics and all("pin_every_use" in d.facts for d in diagnostics), rule.code


def _lint(rule):
    return lambda text: [d for d in lint_source(text, "case.py", [rule]) if d.code == rule.code]


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("rule,case", CASES, ids=[f"{r.code}-{c.id}" for r, c in CASES])
def test_fix_never_breaks_code(rule, case, unsafe) -> None:
    """Parses, idempotent, edits touch only their span, re-lint shows no diagnostic it fixed."""
    lint = _lint(rule)
    text = case.source
    before = lint(text)
    index = SourceIndex(text)
    applicable = 0
    for diagnostic in before:
        fix = fix_for(diagnostic, index, unsafe)
        if fix is None or not fix.applies(unsafe):
            continue
        applicable += 1
        fixed = apply_edits(text, list(fix.edits))
        assert parses(fixed), fix
        # The text before the first edit and after the last one is byte-identical.
        first, last = min(fix.edits), max(fix.edits, key=lambda e: e.end)
        start = index.offsets[first.line - 1] + first.column - 1
        end = index.offsets[last.end_line - 1] + last.end_column - 1
        assert fixed[:start] == text[:start] and fixed.endswith(text[end:])
        if len(fix.edits) == 1:
            assert fixed[start:len(fixed) - (len(text) - end)] == first.content
    outcome = fix_text(text, lint, unsafe)
    assert parses(outcome.text)
    assert fix_text(outcome.text, lint, unsafe).text == outcome.text  # a second --fix changes nothing
    after = lint(outcome.text)
    unfixable = [d for d in before if (f := fix_for(d, index, unsafe)) is None or not f.applies(unsafe)]
    assert len(after) == len(unfixable), (outcome.text, after)
    if applicable:
        assert outcome.fixed[rule.code] >= 1


def test_pin_fixes_are_what_nnx901_reports() -> None:
    rule = rule_by_code("NNX201")
    lint = _lint(rule)
    fixed = fix_text(rule.INVALID[0].source, lint).text
    advisories = lint_source(fixed, "case.py", [rule_by_code("NNX901")])
    assert [d.code for d in advisories] == ["NNX901"]
    assert "graph=True" in advisories[0].message


def test_overlapping_fixes_reach_a_fixed_point_over_passes() -> None:
    source = (
        "from flax import nnx\n\n"
        "@nnx.vmap(in_axes=(nnx.StateAxes({nnx.Param: 0}), 0), transform_metadata={nnx.PARTITION_NAME: 'l'})\n"
        "def f(m, x):\n    return m(x)\n"
    )
    rules = [rule_by_code("NNX201"), rule_by_code("NNX601")]
    lint = lambda text: lint_source(text, "case.py", rules)  # noqa: E731
    outcome = fix_text(source, lint, unsafe=True)
    # Both fixes edit the one call: the pin (first finding) goes in the first pass; the rewrite
    # waits and is recomputed on the new text, where the pinned call no longer fires NNX601. Both
    # findings are gone, and that is what is counted (not the one fix applied).
    assert outcome.fixed == Counter({"NNX201": 1, "NNX601": 1})
    assert outcome.passes == 1
    # The pinned decorator no longer fits 88 characters: one argument per line.
    assert "    graph=True,\n    graph_updates=True,\n)\n" in outcome.text
    assert lint(outcome.text) == []
    assert fix_text(outcome.text, lint, unsafe=True).passes == 0


def test_class_level_pin_covers_every_use_or_is_display_only() -> None:
    rule = rule_by_code("NNX101")
    source = (
        "from flax import nnx\n\n"
        "class Tied(nnx.Module):\n"
        "    def __init__(self, rngs):\n"
        "        self.a = nnx.Linear(2, 2, rngs=rngs)\n"
        "        self.b = self.a\n\n"
        "m = Tied(nnx.Rngs(0))\n"
        "g, s = nnx.split(m)\n"
        "y = nnx.jit(lambda m: m)(m)\n"
    )
    [diagnostic] = _lint(rule)(source)
    fix = fix_for(diagnostic, SourceIndex(source))
    assert fix.applicability == SAFE and "every use of `Tied`" in fix.message
    assert len(fix.edits) == 2
    fixed = apply_edits(source, list(fix.edits))
    assert "nnx.split(m, graph=True)" in fixed and "nnx.jit(lambda m: m, graph=True, graph_updates=True)" in fixed
    assert _lint(rule)(fixed) == []
    unknown = source + "m.eval()\n"  # a use no call keyword can pin
    [diagnostic] = _lint(rule)(unknown)
    assert fix_for(diagnostic, SourceIndex(unknown)).applicability == "display-only"


def _notebook(cells) -> bytes:
    document = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode()


def test_notebook_fixed_cell_by_cell_and_rest_unchanged() -> None:
    markdown = {"cell_type": "markdown", "metadata": {}, "source": ["# Tïtle\n"]}
    setup = {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["x"]}, "outputs": [],
             "source": ["%matplotlib inline\n", "from flax import nnx\n"]}
    use = {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
           "source": ["f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"]}
    data = _notebook([markdown, setup, use])
    new, fixed = fix_notebook("nb.ipynb", data, [rule_by_code("NNX201")])
    assert fixed == Counter({"NNX201": 1})
    document = json.loads(new)
    expected = json.loads(data)
    expected["cells"][2]["source"] = [
        "f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),), graph=True, graph_updates=True)\n"]
    assert document == expected
    assert new.decode().replace(", graph=True, graph_updates=True", "") == data.decode()


@pytest.mark.slow
def test_cli_diff_fix_json_and_missing_libcst(tmp_path, capsys, monkeypatch) -> None:
    path = tmp_path / "m.py"
    source = "from flax import nnx\n\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    path.write_text(source)
    assert main(["check", str(path), "--no-cache", "--diff"]) == 1
    out = capsys.readouterr()
    assert "+f = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),), graph=True, graph_updates=True)" in out.out
    assert "Would fix 1 diagnostic (NNX201: 1)." in out.err
    assert path.read_text() == source
    assert main(["check", str(path), "--no-cache", "--output-format", "json"]) == 1
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["fix"] == {
        "applicability": "safe",
        "message": "Keep graph mode at `nnx.vmap` (line 3)",
        "edits": [{"content": ", graph=True, graph_updates=True",
                   "location": {"row": 3, "column": 51}, "end_location": {"row": 3, "column": 51}}],
    }
    assert main(["check", str(path), "--no-cache", "--fix"]) == 0
    assert "graph=True, graph_updates=True" in path.read_text()
    assert main(["check", str(path), "--no-cache", "--diff"]) == 0
    import nnx_lint.fixes.cli as fixes_cli

    monkeypatch.setattr(fixes_cli, "libcst_available", lambda: False)
    capsys.readouterr()
    assert main(["check", str(path), "--no-cache", "--fix"]) == 2
    from nnx_lint.base.install_hints import pip_install

    # The install form of this copy (an editable checkout here), never the unpublished name.
    assert f"--fix needs libcst: {pip_install('fix')}" in capsys.readouterr().err
    assert pip_install("fix").startswith("pip install -e ")


def test_lint_core_runs_without_libcst() -> None:
    program = (
        "import sys\n"
        "sys.modules['libcst'] = None  # as if the fix extra were not installed\n"
        "from nnx_lint.cli import main\n"
        "sys.exit(main(['check', sys.argv[1], '--no-cache', '--output-format', 'json']))\n"
    )
    result = subprocess.run([sys.executable, "-c", program, "docs/example/train.py"], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert all(entry["fix"] is None for entry in json.loads(result.stdout))


# -- proof by running: fixed reproductions on flax ---------------------------------------------

#: Rules whose fixed reproduction no longer raises but observes something an unpinned call
#: changes: the reproduction reads the outer `nnx.grad`'s result type (a Module in Tree Mode,
#: a State in graph mode) — NNX4xx findings on that call, not this rule's pin.
_OUTER_GRAD_OBSERVED = {"NNX501", "NNX502"}


@pytest.mark.slow
def test_fixed_reproductions_give_graph_mode_results_in_tree_mode() -> None:
    pytest.importorskip("flax")
    from nnx_lint.confirmation.oracle import run_programs
    from nnx_lint.fixes.proof import proofs_for

    proofs = []
    for rule in FIXABLE:
        if not rule.has_reproduction():
            continue
        diagnostics = [d for case in rule.INVALID if not case.files for d in _lint(rule)(case.source)]
        proofs += proofs_for(rule, diagnostics, unsafe=False) + proofs_for(rule, diagnostics, unsafe=True)
    proven = {proof.code for proof in proofs}
    # Every rule with a pin and a reproduction builder is proven this way, except where the
    # reproduction's own pattern is not one the rule's fix can reach (NNX105: the stream case).
    assert proven >= {r.code for r in FIXABLE if r.has_reproduction()} - {"NNX105"}, proven
    graph = run_programs([p.original for p in proofs], "flax-graph", 900)
    tree = run_programs([p.fixed for p in proofs], "flax", 900)
    for proof, expected, observed in zip(proofs, graph, tree):
        assert expected["status"] == "ok", (proof.code, expected)
        assert observed["status"] == "ok", (proof.code, proof.fixed, observed)
        if proof.code not in _OUTER_GRAD_OBSERVED:
            assert observed["observation"] == expected["observation"], (proof.code, proof.fixed, observed)


@pytest.mark.parametrize("call,api,pinned", [
    ("nnx.jit(f)", "jit", "nnx.jit(f, graph=True, graph_updates=True)"),
    ("nnx.jit(f, graph=True)", "jit", "nnx.jit(f, graph=True, graph_updates=True)"),
    ("nnx.split(m)", "split", "nnx.split(m, graph=True)"),
    ("nnx.vmap(\n    f,\n    in_axes=0,\n)", "vmap",
     "nnx.vmap(\n    f,\n    in_axes=0,\n    graph=True,\n    graph_updates=True,\n)"),  # black's magic trailing comma
    ("partial(nnx.scan, length=2)", "scan", "partial(nnx.scan, length=2, graph=True, graph_updates=True)"),
    ("nnx.jit(f, graph=False)", "jit", None),  # the code chose Tree Mode: a pin never changes a choice
    ("nnx.jit(f, graph_updates=False)", "jit", None),
    ("nnx.jit(f, graph=use_graph)", "jit", None),
    ("nnx.jit(f, **options)", "jit", None),
    ("nnx.jit(f, graph=True, graph_updates=True)", "jit", "nnx.jit(f, graph=True, graph_updates=True)"),
    ("nnx.vjp(f, x)", "vjp", None),  # flax 0.12.8 rejects graph mode with graph updates on vjp
])
def test_pin_edit(call, api, pinned) -> None:
    from nnx_lint.fixes.pin import CannotPin, pin_edit

    text = f"x = 'é'; y = {call}\n"  # a non-ASCII character before the call: byte vs character columns
    prefix = "x = 'é'; y = "
    lines = call.splitlines()
    site = {"line": 1, "column": len(prefix.encode()) + 1, "end_line": len(lines),
            "end_column": (len(prefix.encode()) if len(lines) == 1 else 0) + len(lines[-1].encode()) + 1, "api": api}
    index = SourceIndex(text)
    if pinned is None:
        with pytest.raises(CannotPin):
            pin_edit(index, site)
    elif pinned == call:
        assert pin_edit(index, site) is None  # already pinned: nothing to do
    else:
        assert apply_edits(text, [pin_edit(index, site)]) == f"{prefix}{pinned}\n"


def test_bare_decorator_pin() -> None:
    from nnx_lint.fixes.pin import pin_edit

    text = "class A:\n    @nnx.jit\n    def f(self):\n        pass\n"
    edit = pin_edit(SourceIndex(text), {"line": 2, "column": 6, "end_line": 2, "end_column": 13, "api": "jit"})
    assert apply_edits(text, [edit]) == text.replace("@nnx.jit", "@nnx.jit(graph=True, graph_updates=True)")


@pytest.mark.parametrize("separator", ["\n", "\f\n"])
def test_the_index_parses_only_the_statement_a_fix_touches(separator) -> None:
    """Positions, edits and replacements of a region (one top-level statement, decorators
    included) are the file's; a form feed, which ``str.splitlines`` takes for a line break
    and Python does not, leaves the lines in step with the diagnostics'."""
    from nnx_lint.fixes.pin import pin_edit

    text = f"from flax import nnx\n\n\n@nnx.jit\ndef f(m):\n    return m{separator}\n\nclass A:\n    @nnx.vmap\n    def g(self):\n        pass"
    index = SourceIndex(text)
    line = text.split("\n").index("    @nnx.vmap") + 1
    node = index.node_at(line, 6, line, 14)
    assert index.code(node) == "nnx.vmap" and index.start_line(node) == line
    assert isinstance(index.parent(node), cst.Decorator)
    edit = pin_edit(index, {"line": line, "column": 6, "end_line": line, "end_column": 14, "api": "vmap"})
    assert apply_edits(text, [edit]) == text.replace("@nnx.vmap", "@nnx.vmap(graph=True, graph_updates=True)")
    assert len(index._regions) == 1  # the decorated function's statement was never parsed


_CLASS_WITH_METHODS = """\
from flax import nnx


class Test:
    def setup(self):
        self.model = make()

    def test_a(self):
        y = nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(self.model, xs)
        return y

    def test_b(self):
        return 1
"""


def _vmap_site(text: str) -> tuple[int, int, int]:
    """Line, column and end column (1-based) of the `nnx.vmap(...)` call in ``text``."""
    call = "nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))"
    line = next(number for number, line in enumerate(text.split("\n"), 1) if call in line)
    column = text.split("\n")[line - 1].index(call) + 1
    return line, column, column + len(call)


def test_the_index_reads_only_the_method_a_fix_touches_and_indents_it_back() -> None:
    """Inside a class, the region is the innermost body statement holding the site, without its
    block's indentation; positions, parents and the (wrapped) replacement are the file's."""
    from nnx_lint.fixes.pin import pin_edit

    text = _CLASS_WITH_METHODS
    line, column, end_column = _vmap_site(text)
    site = {"line": line, "column": column, "end_line": line, "end_column": end_column, "api": "vmap"}
    index = SourceIndex(text, line_length=60)
    node = index.node_at(line, column, line, end_column)
    assert isinstance(node, cst.Call) and index.code(node) == "nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))"
    assert index.start_line(node) == line and index.text[index.start_offset(node):index.end_offset(node)] == index.code(node)
    ((first, last),) = index._regions
    assert first == last == line  # one statement of test_a, not the class nor the method
    edit = pin_edit(index, site)
    assert apply_edits(text, [edit]) == text.replace(
        "nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))",
        "nnx.vmap(\n            lambda m, x: m(x),\n            in_axes=(None, 0),\n            graph=True,\n"
        "            graph_updates=True,\n        )")
    assert parses(apply_edits(text, [edit]))


@pytest.mark.parametrize("left", ['len("""\nleft\n""")', "(\n1)", "(\n  \n        1)"])
def test_a_statement_with_a_line_left_of_its_block_is_read_with_the_statement_around_it(left) -> None:
    """A line that does not start with the block's indentation (in a string, in brackets, or
    blank but indented less) cannot be cut: the enclosing statement (here the class) is the region."""
    from nnx_lint.fixes.pin import pin_edit

    text = _CLASS_WITH_METHODS.replace("(self.model, xs)\n", f"(self.model, xs) + {left}\n")
    line, column, end_column = _vmap_site(text)
    index = SourceIndex(text, line_length=120)
    edit = pin_edit(index, {"line": line, "column": column, "end_line": line, "end_column": end_column, "api": "vmap"})
    assert apply_edits(text, [edit]) == text.replace("in_axes=(None, 0))(", "in_axes=(None, 0), graph=True, graph_updates=True)(")
    assert list(index._regions) == [(4, len(text.split("\n")) - 1)]  # the whole class


@pytest.fixture
def libcst_rejects_f(monkeypatch) -> list[str]:
    """libcst refuses the statement `@nnx.jit def f` (as for syntax it does not know); the texts it
    was asked to parse, in order."""
    from nnx_lint.fixes import source

    real_parse = cst.parse_module
    read: list[str] = []

    def parse_all_but_the_first_function(code):
        read.append(code)
        if code.startswith("@nnx.jit\ndef f"):
            return real_parse("def (:\n")  # raises ParserSyntaxError
        return real_parse(code)

    monkeypatch.setattr(source.cst, "parse_module", parse_all_but_the_first_function)
    return read


def test_a_statement_libcst_cannot_parse_gets_no_fix_and_the_others_do(libcst_rejects_f) -> None:
    text = "from flax import nnx\n\n@nnx.jit\ndef f(m):\n    return m\n\n@nnx.vmap\ndef g(m):\n    return m\n"
    index = SourceIndex(text)
    assert index.node_at(3, 2, 3, 9) is None
    assert index.code(index.node_at(7, 2, 7, 10)) == "nnx.vmap"


def test_a_statement_libcst_cannot_parse_does_not_keep_the_others_from_being_fixed(libcst_rejects_f) -> None:
    """Only the statements an edit changes are read with libcst (CPython reads the whole text):
    a statement libcst cannot read elsewhere in the file no longer refuses every fix of the file."""
    from nnx_lint.fixes.pin import pin_edit

    read = libcst_rejects_f
    text = "from flax import nnx\n\n@nnx.jit\ndef f(m):\n    return m\n\nclass A:\n    @nnx.vmap\n    def g(m):\n        return m\n"
    index = SourceIndex(text)
    edit = pin_edit(index, {"line": 8, "column": 6, "end_line": 8, "end_column": 14, "api": "vmap"})
    assert index.parses_after([edit])
    assert not any(code.startswith("from flax") for code in read)  # the whole text was never read by libcst
    fixed = apply_edits(text, [edit])
    assert fixed == text.replace("@nnx.vmap", "@nnx.vmap(graph=True, graph_updates=True)")
    assert read[-1] == "@nnx.vmap(graph=True, graph_updates=True)\ndef g(m):\n    return m\n"  # the method alone


@pytest.mark.slow
def test_fixed_invalid_cases_run_in_tree_mode_as_in_graph_mode() -> None:
    """Second method: each rule's INVALID case, pin-fixed, executed as a program. The fixed
    case in Tree Mode must end as the original does in graph mode (runs, or raises the same
    error type when the case is not runnable as-is, e.g. it needs inputs)."""
    pytest.importorskip("flax")
    from nnx_lint.confirmation.oracle import run_programs
    from nnx_lint.fixes.proof import case_program

    items = []
    for rule, case in CASES:
        fixed = fix_text(case.source, _lint(rule)).text
        if fixed != case.source:
            items.append((rule.code, case.id, case.source, fixed))
    graph = run_programs([case_program(i[2]) for i in items], "flax-graph", 900)
    tree = run_programs([case_program(i[2]) for i in items], "flax", 900)
    fixed = run_programs([case_program(i[3]) for i in items], "flax", 900)
    rescued = set()
    for item, before, unfixed, after in zip(items, graph, tree, fixed):
        assert after["status"] == before["status"], (item[:2], before, after)
        assert after.get("type") == before.get("type"), (item[:2], before, after)
        if before["status"] == "ok" and unfixed["status"] == "raises":
            rescued.add(item[0])
    # The cases whose pattern executes at module level raise in Tree Mode and run once pinned.
    assert {"NNX101", "NNX103", "NNX104", "NNX106", "NNX107", "NNX201", "NNX202", "NNX401", "NNX403"} <= rescued


def test_fix_source_text_in_text_out(tmp_path) -> None:
    from nnx_lint.fixes.apply import fix_source

    source = "from flax import nnx\n\nsplit = lambda rngs: nnx.split_rngs(rngs, splits=2)\n\ndef f(rngs):\n    nnx.split_rngs(rngs, splits=2)\n"
    path = str(tmp_path / "m.py")
    # The lambda uses its result (no finding); the discarded call is pinned, or rewritten.
    assert fix_source(path, source) == source.replace("    nnx.split_rngs(rngs, splits=2)\n",
                                                      "    nnx.split_rngs(rngs, splits=2, graph=True, graph_updates=True)\n")
    assert fix_source(path, source, unsafe=True).endswith("    rngs = nnx.split_rngs(rngs, splits=2)\n")


@pytest.mark.slow
def test_fixes_through_stdin_print_the_fixed_source_or_the_diff(tmp_path, capsys, monkeypatch) -> None:
    import io
    import sys

    source = "from flax import nnx\n\nf = nnx.vmap(g, in_axes=(nnx.StateAxes({...: 0}),))\n"
    monkeypatch.chdir(tmp_path)

    def run(*arguments):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.encode())))
        code = main(["check", "-", "--stdin-filename", "buffer.py", "--no-cache", *arguments])
        return code, capsys.readouterr()

    code, out = run("--fix")
    assert code == 0 and out.out == source.replace("),))", "),), graph=True, graph_updates=True)")
    assert "Fixed 1 diagnostic (NNX201: 1)." in out.err
    code, out = run("--diff")
    assert code == 1 and out.out.startswith("--- a/buffer.py") and "+f = nnx.vmap(" in out.out
    assert not (tmp_path / "buffer.py").exists()  # nothing is written for stdin
