"""Hostile repositories, round three (issue 44), m2: a confined write under a racing directory swap.

``write_confined`` used to resolve the target's directory, check it against the scope, then open it by
path: a process that swapped a parent directory for a symlink between the two sent the write outside the
project. Each test here runs a real racing process against the real function, for a few seconds, and
checks that no write ever lands outside while the honest writes still land inside.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnx_lint.base.confined_writes import WriteRefused, WriteScope, write_confined

pytestmark = pytest.mark.skipif(os.name != "posix", reason="symlink swaps: POSIX")

#: Swaps ROOT/SWAPPED for a symlink to OUTSIDE and back, as fast as it can, until killed.
RACER = """
import os, sys
swapped, parked, outside = sys.argv[1], sys.argv[2], sys.argv[3]
while True:
    try:
        os.rename(swapped, parked); os.symlink(outside, swapped)
        os.unlink(swapped); os.rename(parked, swapped)
    except OSError:
        pass
"""


def _race(tmp_path: Path, swapped: str, seconds: float = 4.0) -> tuple[int, int]:
    """Write ``root/pkg/sub/x.py`` while ``root/<swapped>`` is swapped for a symlink to ``outside/<same>``;
    returns (writes that landed inside, writes refused or failed). Fails as soon as one lands outside."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "pkg" / "sub").mkdir(parents=True)
    (outside / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "sub" / "x.py").write_text("original\n")
    target_parent = os.path.dirname(swapped)
    victim = outside / "pkg" / "sub" / "x.py"  # where the write lands through either swap
    racer = subprocess.Popen([sys.executable, "-c", RACER, str(root / swapped),
                              str(root / target_parent / ".parked"), str(outside / swapped)])
    scope = WriteScope.of(root)
    landed = refused = 0
    try:
        end = time.monotonic() + seconds
        index = 0
        while time.monotonic() < end:
            index += 1
            try:
                write_confined(root / "pkg" / "sub" / "x.py", b"write %d\n" % index, scope)
                landed += 1
            except (WriteRefused, OSError):
                refused += 1
            assert not victim.exists(), f"write {index} left the project: {victim.read_text()!r}"
    finally:
        racer.kill()
        racer.wait()
    return landed, refused


@pytest.mark.slow
@pytest.mark.parametrize("swapped", ["pkg", "pkg/sub"], ids=["parent", "deeper-parent"])
def test_m2_a_directory_swapped_for_a_symlink_mid_write_never_sends_the_write_outside(tmp_path, swapped):
    landed, refused = _race(tmp_path, swapped)
    assert refused, "the racer never won a window: the test proved nothing"
    assert landed, "no write landed inside the project at all"
    # The last honest write is whole, where it belongs (the racer leaves the real directory in place
    # or parked; either way inside the root).
    written = [path for path in (tmp_path / "root").rglob("x.py")]
    assert written and all(path.read_text().startswith(("write ", "original")) for path in written)


def test_m2_a_final_component_that_is_a_symlink_is_refused(tmp_path):
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (tmp_path / "victim.py").write_text("victim\n")
    (root / "pkg" / "x.py").symlink_to(tmp_path / "victim.py")
    with pytest.raises(WriteRefused, match="symlink"):
        write_confined(root / "pkg" / "x.py", b"changed\n", WriteScope.of(root))
    assert (tmp_path / "victim.py").read_text() == "victim\n"
