"""Reporting: where a rule's page is (:mod:`.links`) and the output formats that follow
other tools' conventions (:mod:`.formats`: Ruff's ``concise`` and ``full``, ``junit``,
``gitlab``, ``pylint``). The original formats live in :mod:`nnx_lint.reporting.reporters`, which
dispatches here."""

# Loaded with the package: a Diagnostic's ``url`` is read at lint time (the plugins' messages),
# and the plugins import the lint path up front (nnx_lint.engine.eager).
from nnx_lint.base import links  # noqa: E402,F401
