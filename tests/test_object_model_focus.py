"""How little of a file the object-flow model solves for a question about one class: the
construction-only model the path guards ask first, the methods a class question enters, and the
holders a path walk never expands."""
from __future__ import annotations

from astroid import nodes

from _support import file_context
from nnx_lint.analysis.objects import object_model
from nnx_lint.analysis.objects.guards import leaves_the_tree, never_built, shared_rngs_paths
from test_object_model import GUARDED_LAYERS


def _class(context, name):
    return next(c for c in context.module.body if isinstance(c, nodes.ClassDef) and c.name == name)


def _entered(model):
    return sorted(scope.name for scope in model._entered if isinstance(scope, nodes.FunctionDef))


# The guard tests' layers (`Inner`, and `Deep` that builds one), and a factory of many.
LAYERS = {"layers.py": GUARDED_LAYERS["layers.py"] + """
def build_every_family(rngs):
    return [Deep(rngs) for _ in range(3)]
"""}

# Like maxtext's decoder: built only by other files (here: handed to a wrapper of another file),
# its `__init__` builds the layers of every model family through helpers.
DECODER = """
from flax import nnx
from layers import Deep, build_every_family
import wrappers

class Plain:
    def __init__(self, rngs):
        self.rngs = rngs

class Decoder(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.head = Deep(rngs)
        self.holder = Plain(rngs)
        self._init_layers(rngs)

    def _init_layers(self, rngs):
        self.layers = build_every_family(rngs)

def decoder_as_linen(rngs):
    return wrappers.to_linen(Decoder, rngs=rngs)
"""


def test_a_guard_settles_on_the_constructions_of_the_class_alone(tmp_path):
    """`self.head` is a Module and is built: the construction-only model of `Decoder` (its own
    methods, each construction and its `__init__`, no other call) settles both guards, and the
    file's model enters nothing. A plain holder is not settled there: the model answers it."""
    context = file_context(tmp_path, DECODER, LAYERS)
    model = object_model(context)
    decoder = _class(context, "Decoder")
    assert model.constructions_of(decoder) is not None
    assert leaves_the_tree(model, decoder, ("head", "rngs")) is False
    assert never_built(model, decoder, ("head", "rngs")) is False
    assert _entered(model) == [], "settled without the focus on the class"
    assert leaves_the_tree(model, decoder, ("holder", "rngs")) is True
    assert "__init__" in _entered(model)


def test_a_class_built_by_this_file_gets_no_construction_model(tmp_path):
    """Instances made by this file's code are the holders the focused solve walks from, and the
    construction-only model would not make them: the guards then start from the focused solve."""
    context = file_context(tmp_path, DECODER + "\ndecoder = Decoder(nnx.Rngs(0))\n", LAYERS)
    assert object_model(context).constructions_of(_class(context, "Decoder")) is None


FORWARD = """
from flax import nnx

class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs

def heavy_helper(x):
    return [x for _ in range(3)]

class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.block = Block(rngs)

    def __call__(self, x):
        return heavy_helper(self.block(x))

    def reset(self, rngs):
        self.extra = Block(rngs)

    @classmethod
    def create(cls, seed):
        return cls(nnx.Rngs(seed))
"""


def test_a_class_question_leaves_out_a_forward_pass_that_stores_nothing(tmp_path):
    """A method that stores nothing through `self` (the forward pass) cannot fill an instance by
    itself: a question about what the instances hold enters the constructor, the method that
    stores and the factory, not `__call__`, and finds the sharing."""
    context = file_context(tmp_path, FORWARD)
    model = object_model(context)
    found = [(first.text(), second.text()) for first, second, _ in shared_rngs_paths(model, _class(context, "Model"))]
    assert _entered(model) == ["__init__", "create", "reset"]
    assert (".rngs", ".block.rngs") in found


PARAMS = """
from flax import nnx

class Weights(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(1.0)
        self.b = nnx.Param(0.0)

class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.rngs = rngs
        self.weights = Weights()

model = Model(nnx.Rngs(0))
"""


def test_a_walk_for_some_kinds_never_expands_a_holder_that_reaches_none(tmp_path):
    """Asked for Rngs, the path walk does not step into a layer that holds only Variables; asked
    for Variables, it does, and finds them."""
    context = file_context(tmp_path, PARAMS)
    model = object_model(context)
    root = next(o for o in model.objects(context.module.body[-1].value) if o.proven)
    assert [path.text() for path, _ in model.paths(root, frozenset({"rngs"}))] == [".rngs"]
    entered = model._reaching(frozenset({"rngs"}), True)  # the holders the walk may step into
    assert root in entered
    assert not [holder for holder in entered if (holder.class_name or "").endswith("Weights")]
    assert [path.text() for path, _ in model.paths(root, frozenset({"variable"}))] == [".weights.w", ".weights.b"]


# Like maxtext's attention tests: `setUp` stores what the tests share, each test builds its own
# layer (one through a helper method), and most tests never store through `self`.
TESTS = """
import unittest
from flax import nnx

class Layer(nnx.Module):
    def __init__(self, rngs):
        self.rngs = rngs

class LayerTest(unittest.TestCase):
    def setUp(self):
        self.rngs = nnx.Rngs(0)

    def _build(self):
        layer = Layer(self.rngs)
        return layer

    def test_built_by_the_helper(self):
        layer = self._build()
        return nnx.jit(lambda m: m)(layer)

    def test_something_else(self):
        other = Layer(nnx.Rngs(1))
        return other
"""


def test_an_expression_question_enters_the_filling_methods_and_the_callers_of_its_method(tmp_path):
    """A question about `layer` in `_build` enters `_build`, the method that calls it by name
    (`self._build()`), and `setUp`, which stores through `self`: not a test that does neither.
    The answer still sees what `setUp` stored."""
    context = file_context(tmp_path, TESTS)
    model = object_model(context)
    build = next(f for f in _class(context, "LayerTest").mymethods() if f.name == "_build")
    layer = build.body[-1].value
    found = model.objects(layer)
    assert _entered(model) == ["_build", "setUp", "test_built_by_the_helper"]
    assert {o.class_name.rsplit(".", 1)[-1] for o in found if o.proven} == {"Layer"}
    held = [o for obj in found for o in model.fields(obj, "rngs")] if found else []
    assert any(o.kind == "rngs" for o in held), "setUp's Rngs reaches the layer"


FLAGS = """
from flax import nnx

class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.BatchStat(0)

    def step(self, update=False):
        if update:
            self.count.value += 1
        return self.count.value

def make():
    return Counter()

counter = make()
counter.step()

def unrelated():
    return [nnx.Linear(2, 2, rngs=nnx.Rngs(i)) for i in range(3)]
"""


def test_a_never_taken_branch_is_judged_from_the_functions_callers_alone(tmp_path):
    """Whether any call of `step` passes `update`: the file's calls of `step` say no. Only the
    code that can reach `step` is solved (its class's filling methods, and `make`, which names the
    class), not `unrelated`."""
    from nnx_lint.analysis.objects.guards import branch_never_taken

    context = file_context(tmp_path, FLAGS)
    model = object_model(context)
    step = next(f for f in _class(context, "Counter").mymethods() if f.name == "step")
    write = step.body[0].body[0]
    assert branch_never_taken(model, write) is True
    assert _entered(model) == ["__init__", "make", "step"]
