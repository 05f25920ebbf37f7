"""NNX3xx: graph updates that silently stop propagating out of transforms — catalogue C1-C10.

In graph mode, whatever code inside an NNX transform does to a Module flows back out.
In Tree Mode only Variable *value* updates do; everything else happens on a per-call
copy and is dropped without an error. Whether a statement runs inside a transform, and
whether the object it changes came from outside, is answered by
:mod:`nnx_lint.analysis.transformed` (entries, calls followed into methods and other files,
graph-mode opt-ins excluded). Each diagnostic's ``confidence`` fact says how sure it is.
"""
