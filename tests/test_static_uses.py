"""``nnx_lint.analysis.static_uses``: Python values, and where a function needs a parameter concrete."""
from __future__ import annotations

import astroid
import pytest

from nnx_lint.analysis.static_uses import bound_arguments, python_value, static_use


@pytest.mark.parametrize(("code", "kind"), [
    ("3", "int"), ("True", "bool"), ("2.0", "float"), ("'relu'", "str"), ("(4, 10)", "tuple"),
    ("(x.shape[0], 10)", "tuple"), ("x.shape", "tuple"), ("x.shape[1:]", "tuple"), ("x.ndim", "int"),
    ("len(xs)", "int"), ("not True", "bool"), ("2 * 3", "int"), ("1 < 2", "bool"),
    ("x", None), ("x + 1", None), ("()", None), ("None", None), ("f(3)", None), ("jnp.ones(3)", None),
])
def test_python_value(code, kind):
    assert python_value(astroid.extract_node(f"f({code})").args[0]) == kind


def test_python_value_follows_a_local_bound_only_to_python_values():
    one, two = astroid.extract_node("n = 2\nm = g()\nf(n) #@\nf(m) #@\n")
    assert python_value(one.args[0]) == "int"
    assert python_value(two.args[0]) is None


FUNCTION = '''
class Block:
    def __call__(self, x, n, flag, mask, scale, width, k, start):
        if flag:
            x = x * 2
        if mask is None:
            mask = 1
        y = x * scale
        z = self.resize(y, width)
        m = k * 2
        for _ in range(m):
            y = y + 1
        return x[start:], jnp.zeros((n, 3)), z

    def resize(self, x, width):
        return x.reshape(width, -1)
'''


@pytest.mark.parametrize(("parameter", "use", "error", "line"), [
    ("flag", "an `if` test", "TracerBoolConversionError", 4),
    ("n", "a shape", "TypeError", 13),
    ("width", "a shape", "TypeError", 16),  # through self.resize
    ("k", "a `range(...)` argument", "TracerIntegerConversionError", 11),  # through m = k * 2
    ("start", "a slice bound", "IndexError", 13),
])
def test_static_use_finds_where_the_value_must_be_concrete(parameter, use, error, line):
    function = astroid.parse(FUNCTION).body[0].body[0]
    found = static_use(function, parameter)
    assert (found.use, found.error, found.node.lineno) == (use, error, line)


@pytest.mark.parametrize("parameter", ["x", "scale", "mask"])
def test_arithmetic_and_identity_tests_need_no_concrete_value(parameter):
    """``x * scale`` traces fine; ``mask is None`` is an identity test (``mask`` is also rebound)."""
    function = astroid.parse(FUNCTION).body[0].body[0]
    assert static_use(function, parameter) is None


def test_bound_arguments_skip_self_and_stop_at_a_spread():
    function = astroid.parse(FUNCTION).body[0].body[0]
    call = astroid.extract_node("m(x, 3, *rest, flag=True, other=1)")
    assert [(name, argument.as_string()) for name, argument in
            bound_arguments(function, call.args, call.keywords)] == [("x", "x"), ("n", "3"), ("flag", "True")]
