"""The module index answers nodes_of_class exactly as astroid's walk does (same nodes, same order)."""
from __future__ import annotations

import gc

import pytest
from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.base.file_memo import forget_file_memos
from nnx_lint.base.node_index import module_index, nodes_of_class

SOURCE = '''
import flax.nnx as nnx

class Model(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(1, 2, rngs=rngs)
        self.f = lambda x: [y.z for y in x]
        def inner(m):
            m.b = m
            class Local:
                def g(self):
                    self.c = inner(self)
            return Local
        self.g = inner(self)

    async def run(self, x):
        return [await x for x in self.a(x)]

def train(model, x):
    del model.a
    model.loop = model
    return nnx.jit(lambda m: m.a(x))(model)

result = train(Model(nnx.Rngs(0)), 1)
'''

QUESTIONS = [
    (nodes.Call, None),
    (nodes.NodeNG, None),
    ((nodes.FunctionDef, nodes.AsyncFunctionDef, nodes.Call), None),
    (nodes.AssignAttr, (nodes.FunctionDef, nodes.ClassDef, nodes.Lambda)),
    (nodes.Return, (nodes.FunctionDef, nodes.Lambda, nodes.ClassDef)),
    ((nodes.Attribute, nodes.Name), nodes.Call),
    (nodes.ClassDef, nodes.ClassDef),
]


@pytest.fixture
def module():
    yield parsing.build(SOURCE, "example.py", "example")
    forget_file_memos()


def test_every_scope_and_question_matches_astroid(module):
    assert nodes_of_class(module, nodes.Module) == [module]  # builds the module's index
    assert module_index(module).order[0] is module
    asked = [module, *module.nodes_of_class(nodes.NodeNG)]  # scopes from the index, others walked
    for node in asked:
        for klass, skip in QUESTIONS:
            assert nodes_of_class(node, klass, skip) == list(node.nodes_of_class(klass, skip)), (node, klass, skip)


def test_a_question_about_a_function_indexes_its_module(module):
    function = next(module.nodes_of_class(nodes.FunctionDef))
    assert module.__dict__.get("_nnx_lint_node_index") is None
    assert nodes_of_class(function, nodes.AssignAttr) == list(function.nodes_of_class(nodes.AssignAttr))
    index = module.__dict__.get("_nnx_lint_node_index")
    assert index is not None and index.module is module
    assert module_index(module) is index


def test_the_index_outlives_the_file_memos(module):
    """A project module is asked about by many analysed files: its index is built once per run."""
    index = module_index(module)
    forget_file_memos()
    assert module_index(module) is index


def test_the_index_is_held_by_its_module_alone(module):
    """No table outside the tree holds the index: it goes when the tree goes (the
    analysed file's after its analysis, a project module's at the end of the run)."""
    nodes_of_class(module, nodes.Call)
    assert gc.get_referrers(module_index(module)) == [module.__dict__]
