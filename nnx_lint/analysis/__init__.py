"""Analysis: the services rules ask (values, classes, variables, transforms, mode, flow), the
project they read across files, and the rule base class.

Rules reach these only through :mod:`nnx_lint.api`.
"""
