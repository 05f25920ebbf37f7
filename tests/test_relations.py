"""Relations in the value model: across calls (nnx_lint.analysis.relations), containers and fallbacks
(nnx_lint.analysis.refs identity, nnx_lint.analysis.flow defaults)."""
from __future__ import annotations

from _support import file_context
from astroid import nodes

from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.relations import argument_views, held_items


def _call(context: FileContext, marker: str) -> nodes.Call:
    """The outermost call on the line ending with ``# <marker>``."""
    line = next(i for i, text in enumerate(context.module.file_bytes.decode().splitlines(), 1)
                if text.rstrip().endswith(f"# {marker}"))
    return min((node for node in context.module.nodes_of_class(nodes.Call) if node.lineno == line),
               key=lambda node: node.col_offset)


HELPER = """
import optax
from flax import nnx

def train_step(model, optimizer, x):
    pass

def measure(model, optimizer, x):
    return nnx.jit(train_step).lower(model, optimizer, x)  # transform

def main():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    {setup}
    measure(model, optimizer, None)  # caller
"""


def _holds(context: FileContext, view) -> bool:
    """Whether the view's second argument holds its first."""
    if view.refs[0] is None:
        return False
    held = held_items(context, view.expressions[1], view.refs[1], view.substitutions)
    return held is not None and any(ref is not None and ref.overlaps(view.refs[0]) for _path, ref in held[1])


def test_a_caller_makes_one_parameter_hold_another(tmp_path):
    context = file_context(tmp_path, HELPER.format(setup="optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))"))
    call = _call(context, "transform")
    views = argument_views(context, list(call.args))
    assert views[0].via == () and views[0].refs[0].origin == "param"
    assert not _holds(context, views[0])  # the helper alone does not say
    assert len(views) == 2 and views[1].via == (_call(context, "caller"),)
    assert _holds(context, views[1])


def test_a_caller_passing_unrelated_objects_relates_nothing(tmp_path):
    context = file_context(tmp_path, HELPER.format(setup="optimizer = optax.sgd(0.1).init(nnx.state(model))"))
    views = argument_views(context, list(_call(context, "transform").args))
    assert not any(_holds(context, view) for view in views)


def test_callers_are_followed_two_calls_out(tmp_path):
    source = """
    from flax import nnx

    def inner(a, b):
        return nnx.jit(lambda x, y: None)(a, b)  # transform

    def middle(a, b):
        return inner(a, b)

    def outer():
        m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        middle(m, m)
    """
    context = file_context(tmp_path, source)
    views = argument_views(context, list(_call(context, "transform").args))
    last = views[-1]
    assert len(last.via) == 2 and last.refs[0] == last.refs[1] and last.refs[0].origin == "new"


def test_a_dict_display_holds_its_values(tmp_path):
    source = """
    from flax import nnx

    def run():
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        holder = {"model": model, "other": nnx.Linear(2, 2, rngs=nnx.Rngs(1))}
        f(holder, model)  # here
    """
    context = file_context(tmp_path, source)
    holder, model = _call(context, "here").args
    built, items = held_items(context, holder, context.classes.ref_of(holder))
    assert isinstance(built, nodes.Dict)
    model_ref = context.classes.ref_of(model)
    assert [path for path, ref in items if ref is not None and ref.overlaps(model_ref)] == [("model",)]


STRUCT = """
from typing import NamedTuple
import flax
from flax import nnx

@flax.struct.dataclass
class TrainingState:
    networks: nnx.Module
    step: int

class Pair(NamedTuple):
    net: nnx.Module
    step: int

class Plain:
    def __init__(self, net):
        self.net = net

def f(state: TrainingState, pair: Pair, plain: Plain):
    g(state.replace(step=1))  # keeps
    g(state.replace(networks=nnx.Linear(2, 2, rngs=nnx.Rngs(0))))  # new module
    g(pair._replace(step=1))  # named tuple
    g(plain._replace(step=1))  # not a named tuple
"""


def test_copies_of_containers_keep_the_objects_they_do_not_replace(tmp_path):
    context = file_context(tmp_path, STRUCT)
    ref_of = context.classes.ref_of
    kept = ref_of(_call(context, "keeps").args[0])
    assert kept is not None and kept.root[0] == "param" and kept.root[2] == "state"
    assert ref_of(_call(context, "new module").args[0]).origin == "new"
    assert ref_of(_call(context, "named tuple").args[0]).root[2] == "pair"
    assert ref_of(_call(context, "not a named tuple").args[0]).origin == "new"


FALLBACKS = """
from flax import nnx

class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs

    def conditional(self, rngs=None):
        rngs = rngs if rngs is not None else self.rngs
        g(rngs)  # conditional

    def inverted(self, rngs=None):
        g(self.rngs if rngs is None else rngs)  # inverted

    def either(self, rngs=None):
        g(rngs or self.rngs)  # either

    def resolved(self, rngs=None):
        if rngs is None:
            rngs = self.rngs
        g(rngs)  # resolved

    def required(self, rngs):
        g(rngs or self.rngs)  # required

    def other_test(self, rngs=None, flag=None):
        g(rngs if flag is not None else self.rngs)  # other test

    def resolved_otherwise(self, rngs=None):
        if rngs is not None:
            rngs = self.rngs
        g(rngs)  # resolved otherwise
"""


def test_fallbacks_of_none_defaults_denote_the_fallback(tmp_path):
    context = file_context(tmp_path, FALLBACKS)
    for marker in ("conditional", "inverted", "either", "resolved"):
        ref = context.classes.ref_of(_call(context, marker).args[0])
        assert ref is not None and ref.origin == "self" and ref.path == ("rngs",), marker
    for marker in ("required", "other test", "resolved otherwise"):
        assert context.classes.ref_of(_call(context, marker).args[0]) is None, marker


RETURNS = """
import optax
from flax import nnx

def make(tx):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    return model, nnx.ModelAndOptimizer(model, tx)

def run(tx):
    model, optimizer = make(tx)
    f(model, optimizer)  # one evaluation
    m1, _ = make(tx)
    _, o2 = make(tx)
    f(m1, o2)  # two evaluations
"""


def test_what_one_evaluation_of_a_project_function_returns_is_related(tmp_path):
    context = file_context(tmp_path, RETURNS)
    views = argument_views(context, list(_call(context, "one evaluation").args))
    assert not _holds(context, views[0])
    assert any(_holds(context, view) for view in views[1:])
    views = argument_views(context, list(_call(context, "two evaluations").args))
    assert not any(_holds(context, view) for view in views)


FACTORIES = """
from flax import nnx
from models import Model

class Noisy(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs

    @classmethod
    def create(cls, seed):
        return cls(nnx.Rngs(seed))

class Trainer:
    def __init__(self, model: nnx.Module):
        self.model = model

    def with_loss(self, loss):
        self.loss = loss
        return self

class Case:
    def _make(self, n):
        model = Noisy(nnx.Rngs(n))
        return model, n

    def _either(self, n):
        if n:
            return Noisy(nnx.Rngs(n)), n
        return nnx.Linear(2, 2, rngs=nnx.Rngs(0)), n

    def _imported(self):
        return Model(), 1

    def run(self):
        model, n = self._make(1)
        model  # unpacked
        other, n = self._either(1)
        other  # either
        Noisy.create(0)  # classmethod
        trainer = Trainer(Noisy(nnx.Rngs(0))).with_loss(None)
        trainer  # builder
        trainer.model  # stored
        Trainer(model).model  # stored-direct
        imported, n = self._imported()
        imported  # imported
"""


def _expression(context: FileContext, marker: str) -> nodes.NodeNG:
    """The expression statement on the line ending with ``# <marker>``."""
    line = next(i for i, text in enumerate(context.module.file_bytes.decode().splitlines(), 1)
                if text.rstrip().endswith(f"# {marker}"))
    return next(node.value for node in context.module.nodes_of_class(nodes.Expr) if node.lineno == line)


def test_method_factories_give_their_returned_class(tmp_path):
    context = file_context(tmp_path, FACTORIES, {"models.py": "class Model:\n    pass\n"})
    classes = context.classes

    def name(marker):
        ref = classes.class_of(_expression(context, marker))
        return ref.qualified_name if ref is not None else None

    assert name("unpacked") == "main.Noisy"  # element 0 of the method's returned tuple
    assert name("either") is None  # two classes on two paths: unknown
    assert name("classmethod") == "main.Noisy"  # `return cls(...)`
    assert name("builder") == "main.Trainer"  # `return self`: the receiver's class
    assert name("stored") == "main.Noisy"  # `model: nnx.Module`, narrowed by the construction
    assert name("stored-direct") == "main.Noisy"
    assert name("imported") == "models.Model"


def test_an_argument_built_by_a_call_from_outside_the_project_is_opaque(tmp_path):
    from nnx_lint.analysis.relations import opaque_builder

    context = file_context(tmp_path, """
        import optax
        from flax import nnx
        from elsewhere import make_optimizer
        from helpers import make_project_optimizer

        def run(model, factory):
            make_optimizer(model, optax.sgd(0.1))  # outside
            factory(model)  # parameter
            optax.sgd(0.1)  # known
            nnx.ModelAndOptimizer(model, optax.sgd(0.1))  # flax
            make_project_optimizer(model)  # project
            make_optimizer(None)  # nothing-known
        """, {"helpers.py": "def make_project_optimizer(model):\n    return [model]\n"})
    outside = opaque_builder(context, _expression(context, "outside"))
    assert outside is not None and outside.outside and outside.callee == "make_optimizer"
    assert "model" in [argument.as_string() for argument, _ref in outside.passed]
    parameter = opaque_builder(context, _expression(context, "parameter"))
    assert parameter is not None and not parameter.outside
    for marker in ("known", "flax", "project", "nothing-known"):
        assert opaque_builder(context, _expression(context, marker)) is None, marker


def test_an_annotation_naming_a_class_of_the_enclosing_function(tmp_path):
    context = file_context(tmp_path, """
        from flax import nnx

        def test_scan():
            class _Scale(nnx.Module):
                def __init__(self):
                    self.factor = nnx.Param(2.0)

            def step(m: _Scale, batch):
                m  # annotated
        """)
    ref = context.classes.class_of(_expression(context, "annotated"))
    assert ref is not None and ref.short_name == "_Scale" and ref.definition is not None
