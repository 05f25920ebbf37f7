"""The examples in tree_runtime's docstrings run."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tree_runtime

MODULES = ["tree_runtime"] + [
    f"tree_runtime.{m.name}" for m in pkgutil.iter_modules(tree_runtime.__path__)
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
