"""Name resolution through imports, aliases and re-exports, without loading flax or jax."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from _support import REPO

from nnx_lint.analysis import parsing
from nnx_lint.analysis.names import NameResolver
from nnx_lint.analysis.project import Project


def resolve_last(source: str, project: Project | None = None, module_name: str = "m") -> str | None:
    """Qualified name of the expression on the file's last line."""
    module = parsing.build(textwrap.dedent(source), "m.py", module_name)
    return NameResolver(module, project).qualified_name(module.body[-1].value)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from flax import nnx\nnnx.vmap", "flax.nnx.vmap"),
        ("import flax.nnx as nn\nnn.vmap", "flax.nnx.vmap"),
        ("from flax import nnx as N\nN.StateAxes", "flax.nnx.StateAxes"),
        ("from flax.nnx import vmap as V\nV", "flax.nnx.vmap"),
        ("import flax\nflax.nnx.vmap", "flax.nnx.vmap"),
        ("import flax.nnx\nflax.nnx.vmap", "flax.nnx.vmap"),
        ("from flax import nnx\nnnx.compat.vmap", "flax.nnx.compat.vmap"),
        ("from flax.nnx import compat\ncompat.vmap", "flax.nnx.compat.vmap"),
        ("from flax import nnx\naxes_cls = nnx.StateAxes\naxes_cls", "flax.nnx.StateAxes"),
        ("from flax.nnx import *\nvmap", "flax.nnx.vmap"),
        ("from flax.nnx.transforms.iteration import vmap\nvmap", "flax.nnx.vmap"),
        ("from flax.experimental import nnx\nnnx.jit", "flax.nnx.jit"),
        ("import jax\njax.vmap", "jax.vmap"),
        ("import flax.linen as nn\nnn.vmap", "flax.linen.vmap"),
        ("class StateAxes: pass\nStateAxes", "m.StateAxes"),
        ("vmap", None),
        ("def f(nnx):\n    return nnx.vmap\nf", "m.f"),
    ],
)
def test_import_spellings(source, expected):
    assert resolve_last(source) == expected


def test_parameter_shadowing_an_import_is_not_resolved():
    module = parsing.build("from flax import nnx\ndef f(nnx):\n    return nnx.vmap\n", "m.py", "m")
    returned = module.body[-1].body[0].value
    assert NameResolver(module).qualified_name(returned) is None


def test_conflicting_bindings_are_unknown():
    source = "import jax\nfrom flax import nnx\nif jax:\n    v = nnx.vmap\nelse:\n    v = jax.vmap\nv"
    assert resolve_last(source) is None


def test_reexport_through_project_module(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "common.py").write_text("from flax import nnx\nfrom flax.nnx import StateAxes as Axes\n")
    project = Project([tmp_path])
    assert resolve_last("from pkg.common import nnx\nnnx.vmap", project, "pkg.user") == "flax.nnx.vmap"
    assert resolve_last("from .common import Axes\nAxes", project, "pkg.user") == "flax.nnx.StateAxes"
    assert resolve_last("import pkg.common as c\nc.nnx.jit", project, "pkg.user") == "flax.nnx.jit"


NO_FLAX_PROGRAM = r"""
import sys
from pathlib import Path
from nnx_lint.engine.walk import lint_bytes
from nnx_lint.analysis.parsing import manager
from nnx_lint.engine.registry import all_rules
fixtures = sorted(Path(sys.argv[1]).rglob("*.py"))
total = 0
for path in fixtures:
    total += len(lint_bytes(path.read_bytes(), str(path), all_rules()))
assert total > 0, "the fixtures produced no diagnostics: the test would prove nothing"
loaded = sorted(name for name in manager().astroid_cache if name.split(".")[0] in ("flax", "jax", "jaxlib", "optax"))
imported = sorted(name for name in sys.modules if name.split(".")[0] in ("flax", "jax", "jaxlib", "optax"))
print(total, loaded, imported)
assert not loaded, f"astroid loaded {loaded}"
assert not imported, f"imported {imported}"
"""


@pytest.mark.slow
def test_linting_never_loads_flax_or_jax():
    """Lint every fixture in a fresh process; fail if flax/jax entered astroid's cache or sys.modules."""
    result = subprocess.run(
        [sys.executable, "-c", NO_FLAX_PROGRAM, str(REPO / "tests" / "fixtures")],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
