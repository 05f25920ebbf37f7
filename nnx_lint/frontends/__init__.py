"""Front-ends' internals: the CI options of ``nnx-lint check`` (baseline, ``--add-noqa``,
stdin), and the language server. The entry points stay at the top: :mod:`nnx_lint.cli`,
:mod:`nnx_lint.flake8`, :mod:`nnx_lint.pylint`, ``python -m nnx_lint.scaffold`` and
``python -m nnx_lint.docs``.
"""
