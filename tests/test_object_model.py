"""The object-flow model (``nnx_lint/analysis/objects``): each flow and each query on small
programs modelled on real idioms, and its bounds."""
from __future__ import annotations

import pytest
from astroid import nodes

from _support import file_context
from nnx_lint.analysis.objects import object_model
from nnx_lint.analysis.objects import solver as solver_module
from nnx_lint.base import bounds


def _model(tmp_path, source, files=None):
    context = file_context(tmp_path, source, files)
    return context, object_model(context)


def _value(context, name):
    """The value assigned to the module-level ``name`` (its last assignment)."""
    found = [s.value for s in context.module.body if isinstance(s, nodes.Assign)
             and any(isinstance(t, nodes.AssignName) and t.name == name for t in s.targets)]
    return found[-1]


def _one(model, expression):
    found = [o for o in model.objects(expression) if o.proven]
    assert len(found) == 1, [o.describe() for o in model.objects(expression)]
    return found[0]


def _rngs_paths(model, obj):
    return sorted((path.text(), found.describe()) for path, found in model.holds(obj))


RNGS_BLOCK = """
from flax import nnx

class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
"""


def test_default_argument_falling_back_to_self_rngs_reaches_the_same_rngs(tmp_path):
    context, model = _model(tmp_path, RNGS_BLOCK + """
class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.block = self.make_block()

    def make_block(self, rngs=None):
        rngs = rngs or self.rngs
        return Block(rngs)

model = Model(nnx.Rngs(0))
""")
    paths = _rngs_paths(model, _one(model, _value(context, "model")))
    assert [p for p, _ in paths] == [".block.rngs", ".rngs"] and paths[0][1] == paths[1][1] == "Rngs@17"


def test_a_fork_is_a_fresh_object(tmp_path):
    context, model = _model(tmp_path, RNGS_BLOCK + """
class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.block = Block(rngs.fork())
        forked = rngs.fork()
        self.other = Block(forked)

model = Model(nnx.Rngs(0))
""")
    paths = _rngs_paths(model, _one(model, _value(context, "model")))
    assert [p for p, _ in paths] == [".block.rngs", ".other.rngs", ".rngs"]
    assert len({found for _p, found in paths}) == 3  # two forks and the original: three objects


def test_a_plain_python_holder_is_not_walked(tmp_path):
    context, model = _model(tmp_path, RNGS_BLOCK + """
class Sampler:
    def __init__(self, rngs):
        self.rngs = rngs

class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.sampler = Sampler(rngs)

model = Model(nnx.Rngs(0))
""")
    obj = _one(model, _value(context, "model"))
    assert [p for p, _ in _rngs_paths(model, obj)] == [".rngs"]
    assert [p.text() for p, _ in model.paths(obj, lambda o: o.kind == "rngs", through_tree_only=False)] \
        == [".rngs", ".sampler.rngs"]


def test_super_init_in_a_base_class_of_another_file(tmp_path):
    context, model = _model(tmp_path, """
from flax import nnx
from pkg.base import Base

class Head(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs

class Model(Base):
    def __init__(self, rngs: nnx.Rngs):
        super().__init__(rngs=rngs)
        self.head = Head(rngs)

model = Model(nnx.Rngs(0))
""", {"pkg/__init__.py": "", "pkg/base.py": """
from flax import nnx

class Base(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
"""})
    paths = _rngs_paths(model, _one(model, _value(context, "model")))
    assert paths == [(".head.rngs", "Rngs@14"), (".rngs", "Rngs@14")]


def test_model_and_optimizer_holds_its_model_and_optimizer_does_not(tmp_path):
    context, model = _model(tmp_path, """
import optax
from flax import nnx

model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
both = nnx.ModelAndOptimizer(model, optax.adam(1e-3), wrt=nnx.Param)
plain = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
""")
    linear = _one(model, _value(context, "model"))
    assert model.fields(_one(model, _value(context, "both")), "model") == {linear}
    assert model.fields(_one(model, _value(context, "plain")), "model") == set()


def test_conditional_store_may_alias_both_arms(tmp_path):
    context, model = _model(tmp_path, """
from flax import nnx

class Net(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)

def build(rngs):
    return Net(rngs)

class Distill(nnx.Module):
    def __init__(self, student, cfg, rngs):
        self.student = student
        self.teacher = student if cfg.self_distill else build(rngs)

model = Distill(Net(nnx.Rngs(0)), object(), nnx.Rngs(1))
""")
    obj = _one(model, _value(context, "model"))
    student, = model.fields(obj, "student")
    assert student in model.fields(obj, "teacher") and len(model.fields(obj, "teacher")) == 2


def test_factory_called_twice_makes_two_objects_and_a_flag_shares_one(tmp_path):
    context, model = _model(tmp_path, """
from flax import nnx

def linear(rngs):
    return nnx.Linear(2, 2, rngs=rngs)

class Pair(nnx.Module):
    def __init__(self, first, second):
        self.first = first
        self.second = second

def build(tie, rngs):
    first = linear(rngs)
    second = first if tie else linear(rngs)
    return Pair(first, second)

twice = Pair(linear(nnx.Rngs(0)), linear(nnx.Rngs(1)))
tied = build(True, nnx.Rngs(0))
""")
    twice = _one(model, _value(context, "twice"))
    assert not model.fields(twice, "first") & model.fields(twice, "second")
    tied = _one(model, _value(context, "tied"))
    assert model.fields(tied, "first") & model.fields(tied, "second")


def test_constants_parameters_partial_loops_and_forwarding(tmp_path):
    context, model = _model(tmp_path, """
import functools
from flax import nnx

class Block(nnx.Module):
    def __init__(self, rngs):
        setattr(self, "rngs", rngs)
        self.deterministic = False
        self.count = 0

    def __call__(self, x, count=False):
        if count:
            self.count = self.count + 1
        self.deterministic = False
        return x

def first(block, extra):
    return block

block = Block(nnx.Rngs(0))
y = block(1)
bound = functools.partial(first, block)
again = bound(None)
looped = nnx.fori_loop(0, 3, lambda i, carry: carry, block)
forwarded = (lambda *a, **k: first(*a, **k))(block, extra=1)
""")
    classdef = context.module.body[2]
    block = _one(model, _value(context, "block"))
    assert model.constant(classdef, "deterministic") == (True, False)
    assert model.constant(classdef, "count") == (False, None)
    assert model.fields(block, "rngs") and model.constant(classdef, "rngs") == (False, None)
    call = classdef.locals["__call__"][0]
    assert {o.definition for o in model.parameter_values(call, "count")} == {False}
    assert model.objects(_value(context, "again")) == {block}
    assert model.objects(_value(context, "forwarded")) == {block}
    copy, = model.objects(_value(context, "looped"))
    assert copy is not block and copy.copy_of == block
    assert model.may_alias(_value(context, "again"), _value(context, "block"))
    assert not model.may_alias(_value(context, "looped"), _value(context, "block"))


def test_sets_past_the_cap_are_widened_and_unproven(tmp_path):
    lines = "\n".join(f"x = Box({i})" for i in range(solver_module.MAX_SET + 10))
    context, model = _model(tmp_path, "class Box:\n    def __init__(self, v):\n        self.v = v\n" + lines
                            + "\nlast = x\n")
    assert len(model.objects(_value(context, "last"))) <= solver_module.MAX_SET


@pytest.mark.slow
def test_a_blow_up_is_a_budget_stop_not_a_hang(tmp_path, monkeypatch):
    """Past the step bound the solve stops with the budget's exception (the engine's NNX004)."""
    monkeypatch.setattr(solver_module, "MAX_STEPS", 10)
    chain = "\n".join(f"def f{i}(x):\n    return f{i + 1}(x)\n" for i in range(3000)) + "def f3000(x):\n    return x\n"
    with bounds.budget_in_force(bounds.AnalysisBudget()):
        with pytest.raises(bounds.BudgetExceeded, match="object-flow model"):
            _model(tmp_path, chain + "\ny = f0([1])\n")


hypothesmith = pytest.importorskip("hypothesmith")
from hypothesis import HealthCheck, given, settings  # noqa: E402


@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.function_scoped_fixture])
@pytest.mark.slow
@given(program=hypothesmith.from_node())
def test_random_programs_solve_within_the_bounds(tmp_path, program):
    """Programs generated from Python's grammar never crash the solve, and every set stays capped."""
    try:
        context = file_context(tmp_path, "from flax import nnx\n" + program)
    except Exception:  # astroid cannot build it: nothing for the model to do
        return
    model = object_model(context)
    assert all(len(found) <= solver_module.MAX_SET for found in model.solver.points.values())
    assert model.solver.steps <= solver_module.MAX_STEPS


def test_release_empties_the_solve_and_drops_the_services(tmp_path):
    """After the walk the engine releases the file's services (FileContext.release): the model's
    tables are emptied, so they are freed at once rather than by the next collection."""
    context, model = _model(tmp_path, RNGS_BLOCK)
    assert model.solver.points and model.world._kinds
    context.release()
    assert not model.solver.points and not model.solver.instances and not model.world._kinds
    assert object_model(context) is not model, "a question after the release builds the model afresh"

def test_flows_through_keyword_partials_forwarding_list_containers_and_builders_of_other_files(tmp_path):
    """`partial(Block, rngs=rngs)()`, `build(cls, *args, **kwargs)`, `nnx.List(layers)` after
    `layers.append(...)`, and a builder in another file that names a class of its own module."""
    context, model = _model(tmp_path, RNGS_BLOCK + """
import functools
from pkg.builders import build_block

def build(cls, *args, **kwargs):
    return cls(*args, **kwargs)

class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.partial = functools.partial(Block, rngs=rngs)()
        self.forwarded = build(Block, rngs=rngs)
        layers = []
        layers.append(Block(rngs))
        self.layers = nnx.List(layers)
        self.built = build_block(rngs)

model = Model(nnx.Rngs(0))
""", {"pkg/__init__.py": "", "pkg/builders.py": """
from flax import nnx

class Other(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs

def build_block(rngs):
    return Other(rngs)
"""})
    paths = _rngs_paths(model, _one(model, _value(context, "model")))
    assert [p for p, _ in paths] == [".built.rngs", ".forwarded.rngs", ".layers.*.rngs", ".partial.rngs"]
    assert len({found for _p, found in paths}) == 1


def test_a_fork_behind_a_hasattr_version_guard_is_a_fork(tmp_path):
    """maxtext's `Dropout`: `self.rngs = rngs.fork() if hasattr(type(rngs), "fork") else rngs`; every
    `nnx.Rngs` has `fork`, so the stored object is a fresh one, not the Rngs passed in."""
    context, model = _model(tmp_path, """
from flax import nnx

class Dropout(nnx.Dropout):
    def __init__(self, rate, *, rngs=None):
        self.rate = rate
        self.rngs = rngs.fork() if hasattr(type(rngs), "fork") else rngs

class Layer(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.dropout = Dropout(0.1, rngs=self.rngs)

layer = Layer(nnx.Rngs(0))
""")
    paths = _rngs_paths(model, _one(model, _value(context, "layer")))
    assert [p for p, _ in paths] == [".dropout.rngs", ".rngs"] and paths[0][1] != paths[1][1]


FOCUS_SOURCE = RNGS_BLOCK + """
class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.block = Block(rngs)

def build_model():
    return Model(nnx.Rngs(0))

def unrelated(rngs):
    return [rngs.fork() for _ in range(3)]
"""


def test_a_question_about_one_class_solves_only_the_code_that_names_it(tmp_path):
    """A class question enters the class's methods and the functions that name it, not the
    whole file; its answer is the whole file's; any other question then enters the rest."""
    from nnx_lint.analysis.objects.guards import shared_rngs_paths

    context, model = _model(tmp_path, FOCUS_SOURCE)
    model_class = next(c for c in context.module.body if isinstance(c, nodes.ClassDef) and c.name == "Model")
    focused = [(first.text(), second.text()) for first, second, _ in shared_rngs_paths(model, model_class)]
    entered = sorted(scope.name for scope in model._entered if isinstance(scope, nodes.FunctionDef))
    assert entered == ["__init__", "build_model"], "Block's __init__ is reached by the call, not entered"
    assert focused == [(".rngs", ".block.rngs")]

    model.objects(context.module.body[-1].body[0].value)  # not a class question: the whole file
    assert "unrelated" in {scope.name for scope in model._entered if isinstance(scope, nodes.FunctionDef)}
    (tmp_path / "whole").mkdir()
    whole = object_model(file_context(tmp_path / "whole", FOCUS_SOURCE))
    whole.solver  # every entry first, then the same question
    whole_class = next(c for c in whole.context.module.body if isinstance(c, nodes.ClassDef) and c.name == "Model")
    assert [(f.text(), s.text()) for f, s, _ in shared_rngs_paths(whole, whole_class)] == focused


GUARDED_LAYERS = {"layers.py": """
from flax import nnx

class Inner(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs

class Deep(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.inner = Inner(rngs)
"""}

GUARDED_MAIN = """
from flax import nnx
from layers import Deep

class Plain:
    def __init__(self, rngs):
        self.rngs = rngs

class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, rate: float = 0.0):
        self.rngs = rngs
        self.child = Deep(rngs)
        self.holder = Plain(rngs)
        self.dropped = Deep(rngs) if rate > 0.0 else None

model = Model(nnx.Rngs(0))
"""


@pytest.mark.parametrize(("fields", "leaves", "never", "settled_shallow"), [
    (("child", "rngs"), False, False, True),  # a layer of another file, built unconditionally
    (("child", "inner", "rngs"), False, False, False),  # the layer's own layer: past the shallow solve
    (("holder", "rngs"), True, False, False),  # a plain Python object: only the full model says so
    (("dropped", "rngs"), False, True, False),  # built only when `rate > 0.0`, and no call passes one
])
def test_the_path_guards_settle_in_the_shallow_model_when_they_can(tmp_path, fields, leaves, never, settled_shallow):
    """leaves_the_tree / never_built first ask the solve of the file's code and one call beyond it;
    an answer settled there (it can only keep a finding) spares the solve of the whole tree."""
    from nnx_lint.analysis.objects.guards import leaves_the_tree, never_built

    context, model = _model(tmp_path, GUARDED_MAIN, GUARDED_LAYERS)
    classdef = next(c for c in context.module.body if isinstance(c, nodes.ClassDef) and c.name == "Model")
    assert (leaves_the_tree(model, classdef, fields), never_built(model, classdef, fields)) == (leaves, never)
    assert (not model._deep) is settled_shallow, "a settled answer leaves the solve shallow"


def test_a_question_about_an_expression_solves_only_the_code_that_reaches_it(tmp_path):
    """`objects(expression)` asked alone enters the expression's function and the chain that calls
    it, not the rest of the file; its answer is the one the whole file gives."""
    context, model = _model(tmp_path, FOCUS_SOURCE)
    build = next(f for f in context.module.body if isinstance(f, nodes.FunctionDef) and f.name == "build_model")
    made = [o.describe() for o in model.objects(build.body[0].value)]
    assert "unrelated" not in {scope.name for scope in model._entered if isinstance(scope, nodes.FunctionDef)}
    (tmp_path / "whole").mkdir()
    whole = object_model(file_context(tmp_path / "whole", FOCUS_SOURCE))
    whole.solver  # every entry first, then the same question
    whole_build = next(f for f in whole.context.module.body if isinstance(f, nodes.FunctionDef) and f.name == "build_model")
    assert made == [o.describe() for o in whole.objects(whole_build.body[0].value)] == ["Model@14"]
