"""The fact index (``nnx_lint.api.fact_index``): one module's calls, stores, bindings and returns,
listed once in the walk's order, and what each call runs, resolved once for every rule."""
from __future__ import annotations

from astroid import nodes

from _support import file_context
from nnx_lint.analysis.shared_objects import graph_uses
from nnx_lint.api import fact_index, transform_resolver

SOURCE = """
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)


@nnx.jit
def step(model, x):
    return model(x)


def train(x):
    model = Model(nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    loss = step(model, x)
    return nnx.grad(lambda m: m(x))(model), loss
"""


def test_lists_are_the_modules_nodes_in_walk_order(tmp_path):
    context = file_context(tmp_path, SOURCE)
    facts = fact_index(context)
    assert facts.calls == list(context.module.nodes_of_class(nodes.Call))
    assert facts.stores == list(context.module.nodes_of_class(nodes.AssignAttr))
    assert [b.name for b in facts.bindings] == [b.name for b in context.module.nodes_of_class(nodes.AssignName)]
    assert len(facts.returns) == 3
    assert fact_index(context) is facts  # one index per file


def test_calls_are_resolved_once_for_every_rule(tmp_path):
    context = file_context(tmp_path, SOURCE)
    facts = fact_index(context)
    resolver = transform_resolver(context)
    step_call = next(c for c in facts.calls if isinstance(c.func, nodes.Name) and c.func.name == "step")
    entry = facts.running_entry(step_call)
    assert entry is not None and entry.transform == "jit"
    assert resolver.running_entry(step_call) is entry  # the resolver's memo: the same answer object
    applied = dict(facts.applications())
    assert step_call in applied and applied[step_call] is resolver.application(step_call)
    assert [c.func.as_string() for c in applied] == ["step", "nnx.grad(lambda m: m(x))"]
    assert facts.nnx_call(next(c for c in facts.calls if c.func.as_string() == "nnx.split")).name == "split"


def test_each_callee_is_resolved_once_for_the_application_the_entry_and_the_grad_rules(tmp_path):
    """The application, the running entry and the grad analysis each ask which transform a
    call's callee runs: the resolver answers once per callee, the same object every time."""
    context = file_context(tmp_path, SOURCE)
    resolver = transform_resolver(context)
    for call in fact_index(context).calls:
        assert resolver.transformed(call.func) is resolver.transformed(call.func)
    step_call = next(c for c in fact_index(context).calls if c.func.as_string() == "step")
    transform, function, unaffected = resolver.transformed(step_call.func)
    assert transform.name == "jit" and function.name == "step" and not unaffected


def test_each_functions_decorators_are_decoded_once(tmp_path):
    """The returns rules, the transformed callables and NNX306 ask about every def: the decoded
    decorators are the same objects each time, in a list of the caller's own."""
    context = file_context(tmp_path, SOURCE)
    resolver = transform_resolver(context)
    step = next(f for f in fact_index(context).functions_in(context.module) if f.name == "step")
    first = resolver.decorators(step)
    assert [d.name for d in first] == ["jit"] and first[0].applied_to is step
    first.clear()
    again = resolver.decorators(step)
    assert [d.name for d in again] == ["jit"] and again[0] is resolver.decorators(step)[0]


def test_each_call_is_matched_against_the_nnx_api_once_per_file(tmp_path, monkeypatch):
    """The rules (``context.nnx_call``) and the transform resolver ask about every call: the
    resolver's matching of the linted module shares the context's answers, the same objects."""
    import nnx_lint.analysis.context as context_module
    import nnx_lint.analysis.transform_types as transform_types

    context = file_context(tmp_path, SOURCE)
    matched = []
    original = context_module.match_nnx_call

    def counted(node, resolver):
        matched.append(node)
        return original(node, resolver)

    monkeypatch.setattr(context_module, "match_nnx_call", counted)
    monkeypatch.setattr(transform_types, "match_nnx_call", counted)
    resolver = transform_resolver(context)
    calls = fact_index(context).calls
    for call in calls:
        assert resolver.nnx_call(call) is context.nnx_call(call)
    assert len(matched) == len(calls)
    assert resolver.nnx_call(next(c for c in calls if c.func.as_string() == "nnx.split")).name == "split"


def test_graph_uses_are_recorded_once_per_call(tmp_path):
    context = file_context(tmp_path, SOURCE)
    uses = graph_uses(context)
    for call in fact_index(context).calls:
        uses.record(call)
    recorded = list(uses.events)
    for call in fact_index(context).calls:  # the next class-alias rule's visits: nothing new
        uses.record(call)
    assert uses.events == recorded
    used = [(event[1].as_string(), event[3]) for event in recorded if event[0] == "use"]
    assert ("model", "split") in used and ("model", "jit") in used


INSIDE = """
from flax import nnx


class Model(nnx.Module):
    def __init__(self, rngs, other=None):
        self.rngs = other or rngs
        self.linear = nnx.Linear(2, 2, rngs=rngs) if other is None else self.rngs

    def __call__(self, x):
        def inner(y):
            return y.value

        return self.linear(inner(x)).mean()


async def later(m):
    return m


def loop(models, x):
    for m in models:
        m.scale = x
        setattr(m, "shift", x)
        apply = lambda v: v.add(x)
        m.out = apply(m.w)
"""


def test_the_class_alias_rules_with_the_plain_view_share_one_fold_of_the_uses(tmp_path):
    """NNX101, NNX102 and NNX105 read the file's uses as recorded; NNX109 refines each use
    (``_record_use``) and folds its own."""
    from checkers.shared_references.nnx101_aliased_module_attribute import AliasedAttribute
    from checkers.shared_references.nnx102_repeated_container_element import RepeatedContainerElement
    from checkers.shared_references.nnx105_shared_rngs import SharedRngs
    from checkers.shared_references.nnx109_module_holds_itself import ModuleHoldsItself

    context = file_context(tmp_path, SOURCE)
    rules = [rule(context) for rule in (AliasedAttribute, RepeatedContainerElement, SharedRngs, ModuleHoldsItself)]
    for call in fact_index(context).calls:
        for rule in rules:
            rule.visit_call(call)
    for rule in rules:
        rule._fold_uses()
    plain, refined = rules[:3], rules[3]
    assert all(rule.uses is plain[0].uses for rule in plain) and refined.uses is not plain[0].uses
    assert all(rule._object_uses is plain[0].uses.per_object for rule in plain)
    assert plain[0].uses.per_class == refined.uses.per_class  # SOURCE has no choice NNX109 refines
    assert plain[0].uses.per_class  # `step(model, x)` and `nnx.split(model)` use a Model


def test_what_lies_inside_a_node_is_astroids_answer(tmp_path):
    """Each query is the nodes astroid's own walk finds below the node, in the same order: for a
    scope (a slice of the module's index) and for any other node (a statement, an expression)."""
    context = file_context(tmp_path, INSIDE)
    facts, module = fact_index(context), context.module
    model = next(module.nodes_of_class(nodes.ClassDef))
    call_method = model.locals["__call__"][0]
    loop = next(module.nodes_of_class(nodes.For))
    assert facts.calls_in(call_method) == list(call_method.nodes_of_class(nodes.Call))
    assert facts.calls_in(loop) == list(loop.nodes_of_class(nodes.Call))
    assert [f.name for f in facts.functions_in(module)] == ["__init__", "__call__", "inner", "later", "loop"]
    assert [r.value.as_string() for r in facts.returns_of(call_method)] == ["self.linear(inner(x)).mean()"]
    assert facts.returns_of(module.locals["later"][0])[0].value.as_string() == "m"
    assert [a.as_string() for a in facts.attribute_reads_in(call_method)] == [
        "y.value", "self.linear(inner(x)).mean", "self.linear"]
    assert [c.as_string() for c in facts.choices_in(model)] == [
        "other or rngs", "nnx.Linear(2, 2, rngs=rngs) if other is None else self.rngs"]
    value = call_method.body[-1].value
    assert facts.names_and_calls_in(value) == list(value.nodes_of_class((nodes.Name, nodes.Call)))
    own = facts.own_assignments_and_calls(loop)
    assert own == list(loop.nodes_of_class((nodes.Assign, nodes.Call), skip_klass=(nodes.FunctionDef, nodes.Lambda)))
    assert [n.as_string() for n in own] == [  # not the lambda's call
        "m.scale = x", "setattr(m, 'shift', x)", "apply = lambda v: v.add(x)", "m.out = apply(m.w)", "apply(m.w)"]
