"""The opt-in removal of ``bench/flax_tests_recall.py`` (``bench/remove_opt_ins.py``): exact and complete.

The bench measures nnx-lint on flax's tests with their explicit graph-mode opt-ins removed;
what counts as an opt-in, and what is kept, is decided there. These tests pin each decision.
"""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("libcst")

_PATH = Path(__file__).resolve().parent.parent / "bench" / "remove_opt_ins.py"
_SPEC = importlib.util.spec_from_file_location("remove_opt_ins", _PATH)
remove_opt_ins = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(remove_opt_ins)

NNX_NAMES = frozenset({"split", "jit", "vmap"})


def _transform(source: str) -> tuple[str, dict[str, int]]:
    text, counts = remove_opt_ins.remove_opt_ins(textwrap.dedent(source), NNX_NAMES)
    return text, dict(counts)


def test_true_and_mode_parameter_keywords_are_dropped_false_and_other_names_kept():
    text, counts = _transform("""\
        def test_a(self, graph, graph_updates):
            nnx.jit(f, graph=graph, graph_updates=False)
            nnx.split(m, graph=True, other=graph)
            nnx.split(m, graph=False)
            nnx.split(m, graph=some_global)
        """)
    assert text == textwrap.dedent("""\
        def test_a(self, graph, graph_updates):
            nnx.jit(f, graph_updates=False)
            nnx.split(m, other=graph)
            nnx.split(m, graph=False)
            nnx.split(m, graph=some_global)
        """)
    assert counts == {"graph=<mode parameter> dropped": 1, "graph=<True> dropped": 1}


def test_a_dropped_last_argument_keeps_the_lines_of_the_call():
    text, _ = _transform("""\
        x = nnx.split(
            g, with_paths=True, graph=True
        )
        y = nnx.jit(
            f,
            graph_updates=True,
        )
        """)
    assert text == textwrap.dedent("""\
        x = nnx.split(
            g, with_paths=True
        )
        y = nnx.jit(
            f,
        )
        """)


def test_compat_names_map_to_nnx_only_where_nnx_has_them():
    text, counts = _transform("a = nnx.compat.split(m)\nb = nnx.compat.backup_keys(m)\nc = other.compat.split(m)\n")
    assert text == "a = nnx.split(m)\nb = nnx.compat.backup_keys(m)\nc = other.compat.split(m)\n"
    assert counts == {"nnx.compat.X -> nnx.X": 1, "nnx.compat.backup_keys kept (no nnx.backup_keys)": 1}


def test_mode_switches_are_unwrapped_or_removed_when_they_opt_in_and_kept_when_they_opt_out():
    text, counts = _transform("""\
        class T:
            @nnx.set_graph_mode(True)
            def test_a(self, graph_mode):
                # the body stays
                with set_graph_mode(graph_mode):
                    x = 1
                    if graph_mode:
                        y = 2
                with nnx.set_graph_updates(False):
                    z = 3

            @nnx.set_graph_updates(False)
            def test_b(self):
                pass
        """)
    assert text == textwrap.dedent("""\
        class T:
            def test_a(self, graph_mode):
                # the body stays
                x = 1
                if graph_mode:
                    y = 2
                with nnx.set_graph_updates(False):
                    z = 3

            @nnx.set_graph_updates(False)
            def test_b(self):
                pass
        """)
    assert counts == {"decorator set_graph_mode(literal) removed": 1, "with set_graph_mode(parameter) removed": 1}


def test_files_are_rewritten_in_place_and_only_changed_files_are_reported(tmp_path):
    (tmp_path / "a_test.py").write_text("nnx.split(m, graph=True)\n")
    (tmp_path / "b_test.py").write_text("nnx.split(m)\n")
    changed = remove_opt_ins.remove_opt_ins_in_tree(tmp_path, NNX_NAMES)
    assert {path: dict(counts) for path, counts in changed.items()} == {"a_test.py": {"graph=<True> dropped": 1}}
    assert (tmp_path / "a_test.py").read_text() == "nnx.split(m)\n"
    assert (tmp_path / "b_test.py").read_text() == "nnx.split(m)\n"
