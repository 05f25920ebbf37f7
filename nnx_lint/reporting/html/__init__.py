"""``nnx-lint check --output-format html -o DIR``: the migration readiness report.

A static report a team opens from ``file://`` or a CI artifact: an index (totals, the trend
of ``--history``, charts by family and rule, tables by directory, file and rule), a page per
file (the source, each finding inline with its help, fix diff and related locations), a page
per rule, and, given the gate's JSON report (``--gate-report``), the tests that break in
Tree Mode linked to the findings that explain them.

Modules: :mod:`.writer` (the pages from one input, written confined), :mod:`.counts` (what is
counted, from the JSON output's objects), :mod:`.escape` (the one escaping function and the
page names), :mod:`.layout` (the frame, its Content-Security-Policy and the static files),
:mod:`.index_page`, :mod:`.file_page`, :mod:`.highlight`, :mod:`.rule_page`,
:mod:`.gate_page`, :mod:`.history` and :mod:`.svg` (the charts).
"""
