"""Python syntax by version: what a file uses that is newer than a Python, and how to read it anyway.

nnx-lint must give the same findings whichever Python from 3.10 runs it. A file written for a
newer Python (PEP 701 f-strings, ``type`` aliases, generics, ``except*``) is read by spelling
those constructs, character for character, in syntax the running parser accepts
(:mod:`nnx_lint.base.syntax.constructs`); the project's ``target-version``
(:mod:`nnx_lint.base.syntax.target`) decides which of them are reported as syntax errors.
"""

# The submodules are not imported with the package: `nnx-lint check` reads only `target`'s names
# to build its options, and a warm run never scans syntax (the plugins load every module of
# nnx_lint.base up front anyway: nnx_lint.engine.eager).
