"""A helper a package re-exports (``from .sowed import pop_sowed`` in its ``__init__.py``) is
found where it is defined, so its summary reaches the files that call it through the package.

google/tunix calls ``feature_extraction.pop_sowed_intermediate_outputs(model)`` after a stored
``nnx.jit``; the helper lives in ``feature_extraction/sowed_module.py`` and pops the sown
intermediates, which are empty in Tree Mode (NNX302).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from nnx_lint.engine.config import load_settings
from nnx_lint.analysis.project import Project
from nnx_lint.engine.runner import run

FILES = {
    "pkg/__init__.py": "",
    "pkg/fe/__init__.py": "from .sowed import pop_sowed as pop_sown\nfrom pkg.fe.other import *\n",
    "pkg/fe/other.py": "def unrelated():\n    return 1\n",
    "pkg/fe/sowed.py": """
        from flax import nnx

        def pop_sowed(model):
            return nnx.pop(model, nnx.Intermediate)
    """,
    "pkg/strategy.py": """
        from flax import nnx
        from pkg import fe

        class Strategy:
            def __init__(self, forward_fn):
                self._forward = nnx.jit(forward_fn)

            def outputs(self, model, inputs):
                self._forward(model, **inputs)
                return fe.pop_sown(model)
    """,
}


def _write(root: Path) -> None:
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_re_exported_name_is_followed_to_its_definition(tmp_path):
    _write(tmp_path)
    project = Project([tmp_path])
    found = project.definition("pkg.fe.pop_sown")
    assert found is not None and found.name == "pop_sowed" and found.root().name == "pkg.fe.sowed"
    assert project.definition("pkg.fe.missing") is None
    assert project.definition("pkg.fe.unrelated") is None  # a star import is not followed


def test_a_helper_called_through_its_package_is_summarised(tmp_path, monkeypatch):
    _write(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.nnx-lint]\n")
    monkeypatch.chdir(tmp_path)
    result = run([Path("pkg/strategy.py")], load_settings(Path(".")), jobs=1, cache_dir=tmp_path / "cache")
    found = [d for d in result.diagnostics if d.code == "NNX302"]
    assert [d.line for d in found] == [11]
    assert any(related.path.endswith("sowed.py") for related in found[0].related)
