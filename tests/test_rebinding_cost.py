"""A model rebound to many names, each passed to ``nnx.jit``, costs linear work (issue 44, h4).

The analysis of such a file was linear already; its fix was not. NNX101's class-level pin has an
edit at every use of the class, and computing it compared every pair of edits, scanned every
parsed statement for each node, and set up libcst's batched visitor (which lists its members by
introspection) for every statement: 8 s at 55 KB, 65 s at 83 KB, 125 s at 150 KB, in the fix
worker, where no deadline applied. Now the work is counted (nnx-lint's own function calls, the
same on every machine) and must grow linearly, and the fix worker stops a file's fixes at the
file's time budget.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("libcst")

HEAD = ("from flax import nnx\nclass M(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.l = nnx.Linear(2, 2, rngs=rngs)\n        self.m = self.l\nm = M(nnx.Rngs(0))\n")

#: How the model is rebound to each name, and how that name is passed to ``nnx.jit``.
REBINDINGS = {
    "name": ("m{i} = m\n", "nnx.jit(lambda m: 0)(m{i})\n"),
    "tuple": ("m{i}, _ = m, 0\n", "nnx.jit(lambda m: 0)(m{i})\n"),
    "attribute": ("class H{i}:\n    pass\nH{i}.m = m\n", "nnx.jit(lambda m: 0)(H{i}.m)\n"),
}


def rebound(count: int, how: str = "name") -> str:
    bind, use = REBINDINGS[how]
    return HEAD + "".join(bind.format(i=i) for i in range(count)) + "".join(use.format(i=i) for i in range(count))


def _pin_work(text: str) -> tuple[int, int]:
    """``(nnx-lint function calls, edits)`` of NNX101's fix of ``text``: calls made by nnx-lint's
    own code (libcst's parse of each statement is linear and not counted)."""
    from nnx_lint.engine.registry import select_rules
    from nnx_lint.engine.walk import lint_source
    from nnx_lint.fixes.apply import fix_for
    from nnx_lint.fixes.source import index_for

    (finding,) = [d for d in lint_source(text, "rebind.py", list(select_rules(None, (), ()))) if d.code == "NNX101"]
    index = index_for(text)
    calls = 0

    def count(frame, event, _arg) -> None:
        nonlocal calls
        if "nnx_lint" in frame.f_code.co_filename:
            calls += 1

    sys.setprofile(count)
    try:
        fix = fix_for(finding, index)
    finally:
        sys.setprofile(None)
    return calls, len(fix.edits)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["name", "tuple"])
def test_a_class_level_pin_costs_linear_work_in_the_uses_it_pins(how: str):
    small, small_edits = _pin_work(rebound(100, how))
    large, large_edits = _pin_work(rebound(400, how))
    assert (small_edits, large_edits) == (100, 400)  # every use pinned, as before
    # Linear work grows 4x; it grew 12x (every pair of edits compared, every region scanned).
    assert large / small < 6, (small, large)


def test_the_fix_worker_stops_a_file_s_fixes_at_its_time_budget(monkeypatch, tmp_path: Path):
    """Each pin, each fix chosen and each pass checks the file's budget: time that runs out
    while the pins are made ends the fixes (the file is then reported without them)."""
    from nnx_lint.base import bounds
    from nnx_lint.fixes import apply, isolated

    isolated.prepare()
    now = [0.0]
    monkeypatch.setattr(bounds, "clock", lambda: now[0])
    pin_edit = apply.pin_edit

    def a_second_per_pin(*args, **kwargs):
        now[0] += 1.0
        return pin_edit(*args, **kwargs)

    monkeypatch.setattr(apply, "pin_edit", a_second_per_pin)  # 300 pins: 300 s, over the 60 s budget
    path = tmp_path / "rebind.py"
    text = rebound(300)
    path.write_text(text)
    request = {"op": "text", "path": str(path), "text": text, "notebook": False, "codes": ["NNX101"],
               "roots": [str(tmp_path)], "unsafe": False}
    assert isolated.answer(request) == {"after": None, "fixed": {}}
    assert isolated.answer({**request, "op": "actions", "diagnostics": [], "fix_all": True})["over_budget"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["name", "attribute"])
def test_the_console_script_lints_a_model_rebound_to_many_names(tmp_path: Path, how: str):
    """h4 as it was reported, with the real console script, at 1,500 names (55 KB)."""
    (tmp_path / "rebind.py").write_text(rebound(1500, how))
    script = Path(sys.executable).parent / "nnx-lint"
    started = time.monotonic()
    done = subprocess.run([str(script), "check", "rebind.py", "--no-cache", "-j1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "NNX101" in done.stdout
    # Rebound by name, every use is a known pin site: the fix is computed (in the fix worker).
    assert ("[*] 1 fixable" in done.stdout) == (how == "name")
    assert time.monotonic() - started < 120
