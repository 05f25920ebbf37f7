"""tree_runtime's public names are flax.nnx names (plus its own error API)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tree_runtime

nnx = pytest.importorskip("flax.nnx")

REQUIRED = """Variable Param BatchStat Cache Intermediate Perturbation RngState RngKey RngCount
Module List Sequential data static Rngs RngStream split_rngs Linear Embed Dropout BatchNorm
LayerNorm relu gelu split merge state graphdef update clone pop find_duplicates Not All Any
PathContains jit grad value_and_grad vmap scan Carry remat cond switch fori_loop while_loop
eval_shape custom_vjp capture transform_metadata Optimizer""".split()


def test_every_exported_name_exists_in_flax_nnx():
    ours = [n for n in tree_runtime.__all__ if n not in tree_runtime.RUNTIME_ONLY]
    missing = [n for n in ours if not hasattr(nnx, n)]
    assert not missing, f"not in flax.nnx: {missing}"


def test_issue_names_are_exported():
    missing = [n for n in REQUIRED if n not in tree_runtime.__all__]
    assert not missing


def test_runtime_does_not_import_flax():
    import subprocess
    import sys

    code = "import sys, tree_runtime; assert not any(m == 'flax' or m.startswith('flax.') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_public_name_has_a_docstring():
    import inspect

    undocumented = [
        n for n in tree_runtime.__all__
        if (inspect.isclass(getattr(tree_runtime, n)) or inspect.isfunction(getattr(tree_runtime, n)))
        and getattr(tree_runtime, n).__module__.startswith("tree_runtime")
        and not inspect.getdoc(getattr(tree_runtime, n))
    ]
    assert not undocumented


def test_every_runtime_error_points_at_a_page_in_this_repository():
    from tree_runtime._errors import RULE_DOCS

    repo = Path(__file__).resolve().parents[2]
    for category, reference in RULE_DOCS.items():
        assert (repo / reference.split(" ")[0]).is_file(), category
