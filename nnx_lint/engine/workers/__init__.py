"""Worker processes that start clean: nnx-lint's own code only, whatever the analysed repository holds.

The ``-j`` lint workers (:mod:`~nnx_lint.engine.workers.pool`) and the fix worker
(:mod:`nnx_lint.fixes.isolated`) are fresh interpreters started by
:mod:`~nnx_lint.engine.workers.process`, never by :mod:`multiprocessing`, whose ``spawn`` and
``forkserver`` children import ``multiprocessing`` itself with the working directory first
on ``sys.path`` (a committed ``multiprocessing/`` package ran in every worker). The worker
side is :mod:`~nnx_lint.engine.workers.serve`.
"""
from __future__ import annotations
