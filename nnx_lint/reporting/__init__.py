"""Reporting: where a rule's page is (:mod:`.links`) and the output formats that follow
other tools' conventions (:mod:`.formats`: Ruff's ``concise`` and ``full``, ``junit``,
``gitlab``, ``pylint``). The original formats live in :mod:`nnx_lint.reporters`, which
dispatches here."""
