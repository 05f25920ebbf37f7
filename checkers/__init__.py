"""nnx-lint rules, one family module per breaking change of the Tree Mode spec.

Every :class:`nnx_lint.rule.Rule` subclass with a ``code`` defined in a module of this
package is discovered by :func:`nnx_lint.registry.all_rules`; nothing is listed by hand.
"""
