"""``python -m nnx_lint.docs``: a thin entry point that runs :mod:`nnx_lint.reporting.docs`."""
from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("nnx_lint.reporting.docs", run_name="__main__", alter_sys=True)
