"""The values a parameterised test gives one of its parameters, read from its decorator.

A test suite often runs one body with several transforms::

    @parameterized.named_parameters(('jax_jit', jax.jit), ('nnx_jit', nnx.jit))
    def test_split_merge(self, jit_fn):
        @partial(jit_fn, static_argnames=('graphdef',))
        def update(graphdef, state): ...

    @pytest.mark.parametrize("grad", [jax.grad, nnx.grad])
    def test_grad(grad): ...

``jit_fn`` is ``nnx.jit`` in one case and ``jax.jit`` in the other. The name resolver
(:mod:`nnx_lint.analysis.names`) reads these values, so every rule sees the NNX case, under the
same policy as a name bound to an NNX transform on one path and to JAX's transform of the same
name on another. Pin fixes never edit such a call: a pin written for the NNX case would break
the JAX one (:func:`nnx_lint.analysis.call_sites.is_parameter`), and a finding names the case it
holds in (:mod:`nnx_lint.analysis.case_notes`). Those two look names up (:mod:`nnx_lint.analysis.flow`);
this module does not, because the name resolver, which the lookup uses, reads it.

Read forms (absl's ``parameterized`` and pytest's ``parametrize``), each value an expression of
the decorator:

* ``named_parameters(('name', v1, v2), ...)``, and each case as ``dict(testcase_name=..., p=v)``
  or ``{'testcase_name': ..., 'p': v}``;
* ``parameters((v1, v2), ...)`` (or a bare ``v`` for a one-parameter test), and dict cases;
* ``product(p=[v, ...], ...)``;
* ``pytest.mark.parametrize('p', [v, ...])`` / ``('a, b', [(va, vb), ...])``, names as a list or
  tuple too, a value wrapped in ``pytest.param(v, id=...)``.

Anything else (a case list built elsewhere, ``*cases``) leaves the parameter's values unknown.
"""
from __future__ import annotations

from astroid import nodes

#: Decorators that list the cases of a test, by the last part of their qualified name and the
#: modules they come from.
_ABSL = "absl.testing.parameterized."
PYTEST_PARAMETRIZE = "pytest.mark.parametrize"
_NAMED, _PARAMETERS, _PRODUCT = "named_parameters", "parameters", "product"
#: absl's case-list decorators by qualified name: the kind of each.
ABSL_CASE_LISTS = {f"{_ABSL}{kind}": kind for kind in (_NAMED, _PARAMETERS, _PRODUCT)}
#: Most cases read from one test's decorators (a longer list is left unread).
MAX_CASES = 64


def case_values(assignment: nodes.AssignName, qualified_name) -> list[nodes.NodeNG] | None:
    """The expressions a parameterised test's cases give the parameter ``assignment`` (an
    argument of the test function), or None when it is not one or a case cannot be read.

    ``qualified_name(node)`` resolves the decorators (the caller's name resolver)."""
    arguments = assignment.parent
    function = arguments.parent if isinstance(arguments, nodes.Arguments) else None
    if not isinstance(function, nodes.FunctionDef) or function.decorators is None:
        return None
    positional = [argument.name for argument in arguments.args or []]
    if positional and isinstance(function.parent, nodes.ClassDef) and positional[0] in ("self", "cls"):
        positional = positional[1:]
    found: list[nodes.NodeNG] | None = None
    for decorator in function.decorators.nodes:
        if not isinstance(decorator, nodes.Call):
            continue
        name = qualified_name(decorator.func) or ""
        values = _decorator_values(decorator, name, assignment.name, positional)
        if values is _NOT_A_CASE_LIST:
            continue
        if values is None:
            return None
        found = [*(found or []), *values]
    return found if found and len(found) <= MAX_CASES else None


class _NotACaseList:
    """A decorator that is not a case list (the parameter's values may still come from another)."""


_NOT_A_CASE_LIST = _NotACaseList()


def _decorator_values(decorator: nodes.Call, name: str, parameter: str, positional: list[str]):
    if name == PYTEST_PARAMETRIZE:
        return _pytest_values(decorator, parameter)
    if not name.startswith(_ABSL):
        return _NOT_A_CASE_LIST
    kind = name[len(_ABSL):]
    if kind == _PRODUCT:
        keyword = next((k for k in decorator.keywords or [] if k.arg == parameter), None)
        if keyword is None:
            return _NOT_A_CASE_LIST if all(k.arg for k in decorator.keywords or []) else None
        return list(keyword.value.elts) if isinstance(keyword.value, (nodes.List, nodes.Tuple)) else None
    if kind not in (_NAMED, _PARAMETERS):
        return _NOT_A_CASE_LIST
    if decorator.keywords:
        return None
    values = []
    for case in decorator.args:
        value = _case_value(case, parameter, positional, named=kind == _NAMED)
        if value is None:
            return None
        values.append(value)
    return values


def _case_value(case: nodes.NodeNG, parameter: str, positional: list[str], named: bool) -> nodes.NodeNG | None:
    """The value one absl case gives ``parameter``."""
    read = absl_case_values(case, positional, named)
    return None if read is None else read[1].get(parameter)


def absl_case_values(case: nodes.NodeNG, positional: list[str], named: bool):
    """``(testcase name or None, {parameter: value})`` of one case of absl's ``parameters`` or
    ``named_parameters`` (a dict, ``dict(...)``, a tuple or list, or a bare value), or None."""
    if isinstance(case, nodes.Dict):
        items = {}
        for key, value in case.items:
            if not (isinstance(key, nodes.Const) and isinstance(key.value, str)):
                return None
            items[key.value] = value
    elif isinstance(case, nodes.Call) and isinstance(case.func, nodes.Name) and case.func.name == "dict":
        if case.args or any(k.arg is None for k in case.keywords or []):
            return None
        items = {k.arg: k.value for k in case.keywords or []}
    elif isinstance(case, (nodes.Tuple, nodes.List)):
        elements = list(case.elts)
        if any(isinstance(e, nodes.Starred) for e in elements):
            return None
        if named:
            if not elements or not (isinstance(elements[0], nodes.Const) and isinstance(elements[0].value, str)):
                return None
            return elements[0].value, dict(zip(positional, elements[1:]))
        return None, dict(zip(positional, elements))
    elif not named and positional and (len(positional) == 1 or isinstance(case, nodes.Const)) \
            and not isinstance(case, nodes.Starred):
        # absl passes a value that is not a tuple, list or dict as the first argument.
        return None, {positional[0]: case}
    else:
        return None
    name = items.pop("testcase_name", None)
    if named:
        if not (isinstance(name, nodes.Const) and isinstance(name.value, str)):
            return None
        return name.value, items
    return None, items


def _pytest_values(decorator: nodes.Call, parameter: str):
    read = pytest_case_values(decorator)
    if read is None:
        return None
    names, cases = read
    if parameter not in names:
        return _NOT_A_CASE_LIST
    position = names.index(parameter)
    return [values[position] for _case, values, _id in cases]


def pytest_case_values(decorator: nodes.Call):
    """``(parameter names, [(case expression, its values, its explicit id or None), ...])`` of
    one ``pytest.mark.parametrize(names, values[, ids=[...]])``, or None when it cannot be read:
    names as ``'a, b'`` or a list or tuple of strings, values as a literal list or tuple, each
    case a value (one name), a tuple or list, or ``pytest.param(..., id='x')``. An ``ids`` list
    gives the ids it names; ``indirect`` (the values go to fixtures) is not read."""
    arguments = {keyword.arg: keyword.value for keyword in decorator.keywords or []}
    if None in arguments or arguments.keys() - {"argnames", "argvalues", "ids", "scope"} or len(decorator.args) > 2:
        return None
    positional = list(decorator.args)
    names_node = positional[0] if positional else arguments.get("argnames")
    cases = positional[1] if len(positional) > 1 else arguments.get("argvalues")
    if names_node is None or cases is None:
        return None
    if isinstance(names_node, nodes.Const) and isinstance(names_node.value, str):
        names = [part.strip() for part in names_node.value.split(",") if part.strip()]
    elif isinstance(names_node, (nodes.List, nodes.Tuple)) and all(
            isinstance(e, nodes.Const) and isinstance(e.value, str) for e in names_node.elts):
        names = [e.value for e in names_node.elts]
    else:
        return None
    if not names or not isinstance(cases, (nodes.List, nodes.Tuple)):
        return None
    ids = _explicit_ids(arguments.get("ids"), len(cases.elts))
    if ids is None:
        return None
    read = []
    for case, given_id in zip(cases.elts, ids):
        values: list[nodes.NodeNG] | None
        if isinstance(case, nodes.Call) and isinstance(case.func, nodes.Attribute) and case.func.attrname == "param":
            # `pytest.param(a, b, id=...)`: its positional arguments are the case's values.
            values = list(case.args) if len(case.args) == len(names) else None
            case_id = next((k.value for k in case.keywords or [] if k.arg == "id"), None)
            if case_id is not None:
                if not (isinstance(case_id, nodes.Const) and isinstance(case_id.value, str)):
                    return None
                given_id = case_id.value
        elif len(names) == 1:
            values = [case]
        elif isinstance(case, (nodes.Tuple, nodes.List)) and len(case.elts) == len(names):
            values = list(case.elts)
        else:
            values = None
        if values is None or any(isinstance(value, nodes.Starred) for value in values):
            return None
        read.append((case, values, given_id))
    return names, read


def _explicit_ids(ids: nodes.NodeNG | None, count: int) -> list[str | None] | None:
    """The ``ids=[...]`` of a parametrize (None for a case it leaves to pytest), or None when
    they cannot be read (a function, a generator)."""
    if ids is None:
        return [None] * count
    if not isinstance(ids, (nodes.List, nodes.Tuple)) or len(ids.elts) > count:
        return None
    given: list[str | None] = []
    for element in ids.elts:
        if isinstance(element, nodes.Const) and (element.value is None or isinstance(element.value, str)):
            given.append(element.value)
        else:
            return None
    return given + [None] * (count - len(given))
