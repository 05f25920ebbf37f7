"""The value model (nnx_lint.analysis.values) and the transform resolver (nnx_lint.analysis.transforms)."""
from __future__ import annotations

from _support import file_context
from astroid import nodes

from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.values import value_model


def _marked(context: FileContext, marker: str) -> nodes.NodeNG:
    """The expression statement / call on the line ending with ``# <marker>``."""
    line = next(i for i, text in enumerate(context.module.file_bytes.decode().splitlines(), 1)
                if text.rstrip().endswith(f"# {marker}"))
    for node in context.module.nodes_of_class(nodes.Call):
        if node.lineno == line:
            return node
    raise LookupError(marker)


HEADER = """
import jax.numpy as jnp
from flax import nnx

class Policy(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(3, 2, rngs=rngs)

class Critic(nnx.Module):
    def __init__(self, rngs):
        self.fc = nnx.Linear(3, 1, rngs=rngs)
"""


def test_candidates_list_every_class_the_callers_pass_with_the_first_call(tmp_path):
    context = file_context(tmp_path, HEADER + """
def update(model):
    use(model)  # here

update(Policy(nnx.Rngs(0)))
update(Critic(nnx.Rngs(0)))
update(Policy(nnx.Rngs(1)))
""")
    argument = _marked(context, "here").args[0]
    candidates = value_model(context).candidates(argument)
    assert [(c.ref.short_name, c.evidence, c.call.lineno) for c in candidates] == [
        ("Policy", "call site", 16), ("Critic", "call site", 17)]


def test_a_known_class_is_the_only_candidate(tmp_path):
    context = file_context(tmp_path, HEADER + """
def update(model: Critic):
    use(model)  # here

update(Policy(nnx.Rngs(0)))
""")
    candidates = value_model(context).candidates(_marked(context, "here").args[0])
    assert [(c.ref.short_name, c.evidence) for c in candidates] == [("Critic", "class")]


def test_states_are_recognised_through_splits_names_and_stores(tmp_path):
    context = file_context(tmp_path, HEADER + """
class Holder:
    def __init__(self, model):
        self.params = nnx.state(model)
        self.model = model

def f(model):
    _, params, rest = nnx.split(model, nnx.Param, ...)
    copy = nnx.clone(params)
    h = Holder(model)
    use(params, rest, copy, nnx.split(model)[1], h.params)  # states
    use(model, nnx.split(model)[0], h.model)  # not states
""")
    model = value_model(context)
    states = _marked(context, "states").args
    others = _marked(context, "not states").args
    assert [model.is_state(a) for a in states] == [True, True, True, True, True]  # h.params: stored as a State
    assert [model.is_state(a) for a in others] == [False, False, False]


def test_stored_kinds_name_containers_and_variables(tmp_path):
    context = file_context(tmp_path, HEADER + """
class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.Variable(jnp.array(0))
        self.items = []
        self.blocks = nnx.List([])
        self.name = "x"
        setattr(self, "steps", nnx.BatchStat(jnp.array(0)))

def f(c: Counter):
    use(c)  # here
""")
    model = value_model(context)
    owner = _marked(context, "here").args[0]
    assert {a: model.stored_kinds(owner, a) for a in ("count", "items", "blocks", "name", "steps", "missing")} == {
        "count": {"variable"}, "items": {"static-container"}, "blocks": {"data-container"}, "name": {"other"},
        "steps": {"variable"}, "missing": set()}


def test_stored_kinds_tell_data_containers_from_static_ones(tmp_path):
    """flax 0.12.8, both modes: an item written under nnx.grad/jit into a plain dict survives; into
    nnx.Dict, nnx.data({}) or a dict on a class-level ``nnx.data()`` attribute, Tree Mode drops it."""
    context = file_context(tmp_path, HEADER + """
class Base(nnx.Module):
    declared: dict = nnx.data()

class Caches(Base):
    annotated: nnx.Data[dict]

    def __init__(self):
        self.plain = {}
        self.listed = list()
        self.wrapped = nnx.data({})
        self.nnx_dict = nnx.Dict({})
        self.declared = {}
        self.annotated = {}
        self.array = nnx.data(jnp.zeros(2))

def f(c: Caches):
    use(c)  # here
""")
    model = value_model(context)
    owner = _marked(context, "here").args[0]
    names = ("plain", "listed", "wrapped", "nnx_dict", "declared", "annotated", "array")
    assert {a: model.stored_kinds(owner, a) for a in names} == {
        "plain": {"static-container"}, "listed": {"static-container"}, "wrapped": {"data-container"},
        "nnx_dict": {"data-container"}, "declared": {"data-container"}, "annotated": {"data-container"},
        "array": {"other"}}


def test_the_resolver_sees_stored_transforms_and_ahead_of_time_calls(tmp_path):
    context = file_context(tmp_path, """
from flax import nnx

def forward(model, x):
    return model(x)

class Extractor:
    def __init__(self):
        self._fwd = nnx.jit(forward)

    def features(self, model, x):
        self._fwd(model, x)  # stored
        nnx.jit(forward).lower(model, x)  # lowered
        nnx.jit(forward, graph=False)(model, x)  # pinned
        self.features(model, x)  # plain
""")
    resolver = transform_resolver(context)
    stored = resolver.application(_marked(context, "stored"))
    assert stored.name == "jit" and [a.label for a in stored.arguments] == ["args[0]", "args[1]"]
    assert not stored.keeps_graph
    lowered = resolver.application(_marked(context, "lowered"))
    assert lowered.name == "jit" and lowered.arguments[0].expression.as_string() == "model"
    assert resolver.application(_marked(context, "pinned")).keeps_graph  # Tree Mode chosen: unchanged by the flip
    assert resolver.application(_marked(context, "plain")) is None


def test_the_resolver_follows_a_transform_bound_in_another_file(tmp_path):
    context = file_context(tmp_path, """
from steps import train_step

def run(model, x):
    train_step(model, x)  # call
""", files={"steps.py": """
from flax import nnx

def _step(model, x):
    return model(x)

train_step = nnx.value_and_grad(_step)
"""})
    application = transform_resolver(context).application(_marked(context, "call"))
    assert application is not None and application.name == "value_and_grad"


def test_shared_within_finds_one_object_held_twice_by_a_value(tmp_path):
    context = file_context(tmp_path, HEADER + """
class Pair(nnx.Module):
    def __init__(self, a, b):
        self.a = a
        self.b = b

def f(x):
    v = nnx.Param(jnp.ones(2))
    p1, p2 = nnx.Param(jnp.ones(2)), nnx.Param(jnp.ones(2))
    lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    use([v, v], dict(a=[p1, p2], b=p1), Pair(a=lin, b=lin), (lin, lin.kernel))  # shared
    use([x, x], [p1, p2], Pair(a=lin, b=nnx.clone(lin)), {"a": jnp.ones(2), "b": jnp.ones(2)})  # distinct
""")
    model = value_model(context)
    found = [model.shared_within(a) for a in _marked(context, "shared").args]
    assert [(p.first_path, p.second_path, p.kind) for p in found] == [
        ("[0]", "[1]", "variable"), ("a[0]", "b", "variable"), ("a", "b", "module"), ("[0]", "[1]", "module")]
    assert [model.shared_within(a) for a in _marked(context, "distinct").args] == [None, None, None, None]


def test_a_construction_holds_what_its_call_passes_to_stored_parameters(tmp_path):
    """``Foo(10)`` with ``self.d = d`` holds an int; ``Foo(nnx.Param(...))`` a Variable; ``Foo(**cfg)``
    and ``Foo(x)`` with ``x`` unknown may hold anything; a parameter reassigned before the store counts
    as the value stored."""
    context = file_context(tmp_path, HEADER + """
class Foo(nnx.Pytree):
    def __init__(self, d, e=3):
        self.d = d
        self.e = e

class Wrapped(nnx.Module):
    def __init__(self, d):
        d = nnx.Param(d)
        self.d = d

def f(x, cfg):
    use(Foo(10), Foo(d=1.5), Foo(nnx.Param(jnp.ones(2))), Foo(x), Foo(**cfg), Foo(1, e=nnx.Variable(1)), Wrapped(1))  # built
""")
    classes = context.classes
    kinds = [classes.kind_of(classes.ref_of(a)) for a in _marked(context, "built").args]
    assert kinds == [None, None, "module", "module", "module", "module", "module"]


def test_shared_node_within_finds_a_variable_free_node_reached_twice(tmp_path):
    context = file_context(tmp_path, HEADER + """
class Foo(nnx.Pytree):
    def __init__(self, d):
        self.d = d

class Parent(nnx.Module):
    def __init__(self):
        self.left = nnx.Dropout(0.5)
        self.right = self.left

class Pair(nnx.Module):
    def __init__(self, a, b):
        self.a = a
        self.b = b

def f(x, config):
    foo = Foo(1)
    drop = nnx.Dropout(0.1)
    use([foo, Foo(2), foo], dict(a=foo, b=foo), Parent(), Pair(a=drop, b=drop), [Parent()])  # shared
    use([Foo(1), Foo(1)], [x, x], [config, config], [drop], nnx.Dropout(0.1, rngs=nnx.Rngs(0)))  # distinct
    v = nnx.Param(jnp.ones(2))
    use([Foo(v), Foo(v)])  # variable
""")
    model = value_model(context)
    found = [model.shared_node_within(a) for a in _marked(context, "shared").args]
    assert [(p.first_path, p.second_path, p.kind) for p in found] == [
        ("[0]", "[2]", "node"), ("a", "b", "node"), ("left", "right", "node"), ("a", "b", "node"),
        ("[0].left", "[0].right", "node")]
    assert [model.shared_node_within(a) for a in _marked(context, "distinct").args] == [None] * 5
    # one Variable held by two nodes is shared state (Tree Mode raises): shared_within's answer
    (holding,) = _marked(context, "variable").args
    assert model.shared_within(holding) is not None and model.shared_node_within(holding) is None


def test_ties_after_construction_make_two_objects_share(tmp_path):
    context = file_context(tmp_path, HEADER + """
def f(x):
    m1 = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    m2 = nnx.Linear(2, 2, rngs=nnx.Rngs(1))
    m3 = nnx.Linear(2, 2, rngs=nnx.Rngs(2))
    use([m1, m2])  # before
    m2.kernel = m1.kernel
    m3.bias = jnp.zeros(2)
    use([m1, m2], [m2, m3], [m1, m3])  # after
""")
    model = value_model(context)
    assert model.shared_within(_marked(context, "before").args[0]) is None
    after = [model.shared_within(a) for a in _marked(context, "after").args]
    # the places of the tied part itself, and the tie that joined them
    assert after[0] is not None and (after[0].first_path, after[0].second_path, after[0].kind) == (
        "[0].kernel", "[1].kernel", "variable")
    assert after[0].tie is not None and after[0].tie.as_string() == "m2.kernel = m1.kernel"
    assert after[1:] == [None, None]
    m1, m2 = (context.classes.ref_of(e) for e in _marked(context, "after").args[0].elts)
    tie = model.tie_between(m1, m2, _marked(context, "after"))
    assert tie is not None and tie.node.as_string() == "m2.kernel"


def test_helper_summaries_see_graph_calls_and_returned_parameters(tmp_path):
    from nnx_lint.analysis.summaries import helper_summaries

    context = file_context(tmp_path, """
from flax import nnx
from helpers import take_sown_elsewhere

def take_sown(model):
    return nnx.pop(model, nnx.Intermediate)

def outer(m, other):
    take_sown(m)
    return other

def rebinds(model):
    model = None
    return nnx.pop(model, nnx.Intermediate)

def f(model, x):
    take_sown(model)  # direct
    outer(x, model)  # nested
    take_sown_elsewhere(model)  # imported
    rebinds(model)  # rebound
""", files={"helpers.py": """
from flax import nnx

def take_sown_elsewhere(module):
    return nnx.state(module, nnx.Intermediate)
"""})
    summaries = helper_summaries(context)
    direct = summaries.graph_calls_through(_marked(context, "direct"))
    assert [(a.as_string(), g.call.name, g.chain) for a, g in direct] == [("model", "pop", ("take_sown",))]
    nested = summaries.graph_calls_through(_marked(context, "nested"))
    assert [(a.as_string(), g.chain) for a, g in nested] == [("x", ("outer", "take_sown"))]
    assert [a.as_string() for a in summaries.returned_arguments(_marked(context, "nested"))] == ["model"]
    imported = summaries.graph_calls_through(_marked(context, "imported"))
    assert [(a.as_string(), g.call.name) for a, g in imported] == [("model", "state")]
    assert summaries.graph_calls_through(_marked(context, "rebound")) == []


def test_back_references_ask_about_the_value_only_of_stores_that_may_count(tmp_path):
    """``model.loop = model`` puts a graph node below itself; ``self.x = ...`` (most stores)
    never counts, and the value it stores is not asked about."""
    context = file_context(tmp_path, '''
from flax import nnx

class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

def build():
    model = Model(nnx.Rngs(0))
    model.loop = model
    return model
''')
    asked = []
    classes = context.classes
    original = classes.ref_of

    def recorded(expression, *args, **kwargs):
        asked.append(expression.as_string() if expression is not None else None)
        return original(expression, *args, **kwargs)

    classes.ref_of = recorded
    values = value_model(context)
    init, build = [f for f in context.module.nodes_of_class(nodes.FunctionDef)]
    assert values.back_references_in(init) == []
    assert asked == ["self"]  # not `nnx.Linear(2, 2, rngs=rngs)`
    found = values.back_references_in(build)
    assert [back.node.as_string() for back in found] == ["model.loop"]
