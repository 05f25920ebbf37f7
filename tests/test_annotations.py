"""The one annotation reader (``nnx_lint.analysis.annotations``): each form it reads, the
string annotations it parses without running them, and the class model reading through it."""
from __future__ import annotations

import textwrap

import astroid
import pytest
from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.analysis.annotations import (MAX_STRING_ANNOTATION, annotation_expression, annotation_head,
                                           annotation_name, binding_annotation, parameter_annotation)
from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.objects import object_model
from nnx_lint.analysis.project import Project


def _annotation(text: str) -> nodes.NodeNG:
    """The annotation of parameter ``x`` of ``def f(x: <text>)``, in a module that imports the names."""
    module = astroid.parse(textwrap.dedent(f"""
        import typing
        import typing as t
        import typing_extensions
        import dataclasses
        from typing import Annotated, ClassVar, Optional, Union
        from flax import nnx

        def f(x: {text}): ...
    """))
    return parameter_annotation(module.body[-1], "x")


@pytest.mark.parametrize("text, head", [
    ("nnx.Rngs", "nnx.Rngs"),
    ("Optional[nnx.Rngs]", "nnx.Rngs"),
    ("typing.Optional[nnx.Rngs]", "nnx.Rngs"),
    ("t.Optional[nnx.Rngs]", "nnx.Rngs"),
    ("nnx.Rngs | None", "nnx.Rngs"),
    ("None | nnx.Rngs", "nnx.Rngs"),
    ("Union[nnx.Rngs, None]", "nnx.Rngs"),
    ("typing.Union[None, nnx.Rngs]", "nnx.Rngs"),
    ("Annotated[nnx.Rngs, 'seeded']", "nnx.Rngs"),
    ("typing_extensions.Annotated[Optional[nnx.Rngs], 1]", "nnx.Rngs"),
    ("'nnx.Rngs'", "nnx.Rngs"),
    ("'Optional[nnx.Rngs]'", "nnx.Rngs"),
    ("Optional['nnx.Rngs']", "nnx.Rngs"),
    ("'nnx.Rngs | None'", "nnx.Rngs"),
    ("list[nnx.Linear]", "list[nnx.Linear]"),
])
def test_the_head_of_each_form(text, head):
    assert annotation_head(_annotation(text)).as_string() == head


@pytest.mark.parametrize("text", [
    "nnx.Rngs | nnx.Linear",  # two classes: no one class
    "Union[nnx.Rngs, nnx.Linear]",
    "'nnx.Rngs('",  # not an expression
    "'f(x)'",  # a call is no annotation, and is never run
    "'(y := nnx.Rngs)'",  # a walrus would bind a name in the scope
    "'lambda: 1'",
    "''",
])
def test_forms_without_one_class(text):
    assert annotation_head(_annotation(text)) is None


def test_a_string_annotation_resolves_where_it_is_written():
    annotation = _annotation("'Optional[nnx.Rngs]'")
    head = annotation_head(annotation)
    assert head.parent is not None and head.root() is annotation.root()
    context = FileContext(annotation.root(), "m.py", Project())
    assert context.qualified_name(head) == "flax.nnx.Rngs"
    # one parse per string for the file: a name resolver memoises by node
    assert annotation_expression(annotation) is annotation_expression(annotation)


def test_a_walrus_in_a_string_binds_nothing():
    annotation = _annotation("'(y := nnx.Rngs)'")
    assert annotation_head(annotation) is None
    assert "y" not in annotation.root().locals and "y" not in annotation.scope().locals


def test_a_long_string_annotation_is_not_parsed():
    long = "'" + "nnx." * (MAX_STRING_ANNOTATION // 4) + "Rngs'"
    assert annotation_head(_annotation(long)) is None
    assert annotation_head(_annotation("'nnx.Rngs'")) is not None


@pytest.mark.parametrize("text, name", [
    ("dataclasses.InitVar[nnx.Rngs]", "InitVar"),
    ("ClassVar[int]", "ClassVar"),
    ("typing.ClassVar[int]", "ClassVar"),
    ("'ClassVar[int]'", "ClassVar"),
    ("Optional[nnx.Linear]", "Linear"),
    ("Optional[nnx.Data[int]]", "Data"),
    ("nnx.Rngs | nnx.Linear", None),
])
def test_the_outer_name(text, name):
    assert annotation_name(_annotation(text)) == name


def test_the_annotation_of_each_kind_of_parameter_and_binding():
    module = astroid.parse(textwrap.dedent("""
        def f(a: int, /, b: str, *args: float, c: bytes, **kwargs: dict):
            d: list = []
            return d
    """))
    function = module.body[0]
    assert [parameter_annotation(function, name).as_string() for name in "abc"] == ["int", "str", "bytes"]
    assert parameter_annotation(function, "missing") is None
    assert parameter_annotation(module, "a") is None
    (d,) = [n for n in function.nodes_of_class(nodes.AssignName) if n.name == "d"]
    assert binding_annotation(d).as_string() == "list"
    assert binding_annotation(function.args.posonlyargs[0]).as_string() == "int"


def test_the_class_model_reads_annotations_through_the_reader():
    source = textwrap.dedent("""
        from typing import Optional
        from flax import nnx

        class Model(nnx.Module):
            def __init__(self, rngs: nnx.Rngs):
                self.linear = nnx.Linear(2, 2, rngs=rngs)

        def step(a: 'Model', b: Optional[Model], c: 'Model | None', /, d: 'nnx.Rngs'):
            return a, b, c, d
    """)
    module = parsing.build(source, "m.py", "m", lambda name: False)
    classes = FileContext(module, "m.py", Project()).classes
    function = module.body[-1]
    reads = [n for n in function.nodes_of_class(nodes.Name) if n.name in "abcd"]
    assert [getattr(classes.class_of(name), "qualified_name", None) for name in reads] == \
        ["m.Model", "m.Model", "m.Model", "flax.nnx.Rngs"]
    assert classes.parameter_is_rngs(function, "d")
    assert classes.kind_of(classes.ref_of(reads[0])) == "module"


def test_the_object_model_reads_annotations_through_the_reader():
    """An outside parameter is an object of its annotated class: a string annotation and
    ``None | X`` name the class too (before the one reader, both were unknown objects)."""
    source = "from flax import nnx\ndef f(rngs: 'nnx.Rngs | None', other: None | nnx.Rngs):\n    return rngs, other\n"
    module = parsing.build(source, "m.py", "m", lambda name: False)
    context = FileContext(module, "m.py", Project())
    for name in module.body[-1].body[0].value.elts:
        assert [(o.kind, o.class_name) for o in object_model(context).objects(name)] == [("rngs", "flax.nnx.Rngs")]
