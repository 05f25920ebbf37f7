"""Python syntax by version: what a file uses that is newer than a Python, and how to read it anyway.

nnx-lint must give the same findings whichever Python from 3.10 runs it. A file written for a
newer Python (PEP 701 f-strings, ``type`` aliases, generics, ``except*``) is read by spelling
those constructs, character for character, in syntax the running parser accepts
(:mod:`nnx_lint.base.syntax.constructs`); the project's ``target-version``
(:mod:`nnx_lint.base.syntax.target`) decides which of them are reported as syntax errors.
"""

# Loaded with the package: the plugins import the lint path up front (nnx_lint.engine.eager), and these
# are imported inside functions at lint time.
from nnx_lint.base.syntax import constructs, lexer, target  # noqa: F401
