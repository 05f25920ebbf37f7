"""Per-file memo tables: answers are reused within a file, and a linted tree is let go after it."""
from __future__ import annotations

import gc
import weakref

import astroid

from nnx_lint.analysis import flow, parsing
from nnx_lint.engine.walk import lint_module
from nnx_lint.analysis.project import Project
from nnx_lint.engine.registry import all_rules

SOURCE = """
from flax import nnx

def step(model, x):
    return model(x)

class Block(nnx.Module):
    def __init__(self, rngs):
        self.a = nnx.Linear(2, 2, rngs=rngs)
        self.b = self.a

def train(rngs):
    model = Block(rngs)
    return nnx.jit(step)(model, 1) + step(model, 2)
"""


def _clear_astroid_bounded_caches() -> None:
    """astroid's own LRU caches (128 lookups, 1024 metaclass lookups, ...) hold nodes of the
    last files linted: bounded, and not nnx-lint's, so they are emptied before counting."""
    from astroid import context
    from astroid.inference_tip import clear_inference_tip_cache
    from astroid.interpreter.objectmodel import ObjectModel
    from astroid.nodes import ClassDef
    from astroid.nodes._base_nodes import LookupMixIn

    for cached in (LookupMixIn.lookup, ClassDef._metaclass_lookup_attribute, ObjectModel.attributes):
        cached.cache_clear()
    context._invalidate_cache()
    clear_inference_tip_cache()


def test_linting_many_files_keeps_their_trees_alive_no_longer():
    """The memo tables are emptied after each file, so they keep no linted tree alive (astroid's
    object-model singletons remember the last node they were read through: one tree at most)."""
    alive = []
    for index in range(30):
        name = f"m{index}"
        module = parsing.build(SOURCE, f"{name}.py", name)  # astroid.parse would cache it in astroid
        assert lint_module(module, f"{name}.py", all_rules(), Project()), "the rules ran and asked the memos"
        alive.append(weakref.ref(module))
        del module
    _clear_astroid_bounded_caches()
    gc.collect()
    assert sum(ref() is not None for ref in alive) <= 1


def test_lookup_answers_a_fresh_list_each_time():
    module = astroid.parse("x = 1\nx = 2\nx\n")
    use = module.body[-1].value
    first = flow.lookup(use)[1]
    assert [a.lineno for a in first] == [2]
    first.clear()  # a caller changing its list must not change the memoised answer
    assert [a.lineno for a in flow.lookup(use)[1]] == [2]
    assert flow.lookup(use, "x")[1] == use.lookup("x")[1]
