"""nnx-lint rules, one family package per breaking change of the Tree Mode spec.

``checkers/<family>/`` holds the family's policy docstring (its ``__init__``), one module
per rule (``nnx201_state_axes_prefix.py``: the rule class, its examples, its facts and its
reproduction builder) and the family's shared helpers (``base.py``, ``analysis.py``,
``reproduction.py``). Every :class:`nnx_lint.analysis.rule.Rule` subclass with a ``code`` defined
in a module of this package is discovered by :func:`nnx_lint.engine.registry.all_rules`; nothing
is listed by hand. See CONTRIBUTING.md to add a rule.
"""
