"""Reporting: what a run's diagnostics become.

The output formats (:mod:`.reporters`, which dispatches the ones that follow other tools'
conventions to :mod:`.formats`: Ruff's ``concise`` and ``full``, ``junit``, ``gitlab``,
``pylint``), the Markdown summary (:mod:`.markdown_report`), the migration overview
(:mod:`.overview`), the HTML migration readiness report (:mod:`.html`), the rule pages (:mod:`.docs`, shipped in ``pages/``), the tables of the
hand-written documents that follow from the rules (:mod:`.doc_tables`) and the options that
choose among them (:mod:`.options`). Where a rule's page is lives below, in
:mod:`nnx_lint.base.links`: a Diagnostic's ``url`` needs it at lint time.
"""
