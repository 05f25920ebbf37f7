"""Library calls in the object-flow model: the flax relations of
:mod:`nnx_lint.flax_table.object_relations`, applied as constraints (never flax's source)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import nnx_lint.analysis.objects.abstract as kinds
from nnx_lint.analysis.objects.abstract import AbstractObject
from nnx_lint.analysis.objects.carries import LoopCarries
from nnx_lint.flax_table import object_relations as relations
from nnx_lint.flax_table.names import NNX_PREFIX, NNX_RNG_STREAM
from nnx_lint.flax_table.nnx_api import MODULE_CLASSES, TRANSFORMS, VARIABLE_TYPES

if TYPE_CHECKING:
    from nnx_lint.analysis.objects.solver import Invocation, Solver

_STREAM_CLASS = NNX_RNG_STREAM


def is_transform(qualified_name: str | None) -> bool:
    """``flax.nnx.jit`` and the other NNX transforms (the ``compat`` spellings too)."""
    if not qualified_name or not qualified_name.startswith(NNX_PREFIX):
        return False
    return qualified_name.rpartition(".")[2] in TRANSFORMS


class LibraryModels:
    """Applies the flax relations for one solver."""

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        #: The loop models, and the loops they saw (:mod:`nnx_lint.analysis.objects.carries`).
        self.carries = LoopCarries(solver)

    def rngs_attribute(self, rngs: AbstractObject, attr: str) -> AbstractObject:
        """``rngs.fork`` (a method making a fresh Rngs) or a stream ``rngs.dropout`` (part of the owner)."""
        if attr in relations.FRESH_RNGS_METHODS:
            return AbstractObject(kinds.LIBRARY, None, class_name=f"{relations.RNGS_CLASS}.{attr}", target=rngs,
                                  definition=attr)
        owner = rngs.copy_of if rngs.kind == kinds.STREAM and rngs.copy_of is not None else rngs
        return AbstractObject(kinds.STREAM, None, class_name=_STREAM_CLASS, definition=attr, copy_of=owner,
                              proven=owner.proven)

    def call(self, callee: AbstractObject, invocation: Invocation) -> None:
        """A call of a library value: a flax model, or nothing known (an empty result)."""
        solver = self.solver
        name = callee.class_name or ""
        node, context, dst = invocation.node, invocation.context, invocation.dst
        if callee.target is not None and callee.definition in relations.FRESH_RNGS_METHODS:
            if dst is not None:
                solver.add(dst, [AbstractObject(kinds.RNGS, node, context, class_name=relations.RNGS_CLASS)])
            return
        if name in relations.FRESH_RNGS:
            if dst is not None:
                solver.add(dst, [AbstractObject(kinds.RNGS, node, context, class_name=name)])
            return
        if name in relations.HOLDS_MODEL:
            optimizer = AbstractObject(kinds.OPTIMIZER, node, context, class_name=name)
            if dst is not None:
                solver.add(dst, [optimizer])
            for position, keyword, field in relations.HOLDS_MODEL[name]:
                argument = invocation.argument(position, keyword)
                if argument is not None:
                    solver.store_value(optimizer, field, argument, node)
            return
        if name in relations.CONTAINERS:
            self._container(name, invocation)
            return
        if name in relations.FRESH_COPIES:
            self._copies(name, invocation, invocation.argument(0, None))
            return
        if name in relations.LOOP_CARRIES or name in relations.GRAPH_LOOP_CARRIES:
            self.carries.loop(name, invocation)
            return
        if name == relations.PARTIAL and invocation.args:
            self._partial(invocation)
            return
        short = name.rpartition(".")[2]
        if name.startswith(NNX_PREFIX) and (short in VARIABLE_TYPES or short in MODULE_CLASSES):
            if dst is not None:  # a Variable, or a flax layer (which keeps no argument object as it is)
                kind = kinds.VARIABLE if short in VARIABLE_TYPES else kinds.MODULE
                solver.add(dst, [AbstractObject(kind, node, context, class_name=name)])
            return
        if is_transform(name):
            if invocation.args:
                self._wrap_each(name, invocation.args[0], invocation)
            elif dst is not None:  # `@nnx.jit(static_argnums=...)`: a decorator that wraps later
                solver.add(dst, [AbstractObject(kinds.TRANSFORMED, node, None, class_name=name)])

    def wrap(self, name: str | None, invocation: Invocation) -> None:
        """A transform decorator factory's result called on the function it decorates."""
        if invocation.args:
            self._wrap_each(name, invocation.args[0], invocation)

    def _wrap_each(self, name, function_var, invocation: Invocation) -> None:
        solver, dst = self.solver, invocation.dst
        if dst is None:
            return
        solver.watch(function_var, lambda f: solver.add(
            dst, [AbstractObject(kinds.TRANSFORMED, invocation.node, None, class_name=name, target=f)]))

    def _container(self, name: str, invocation: Invocation) -> None:
        solver = self.solver
        container = AbstractObject(kinds.CONTAINER, invocation.node, invocation.context, class_name=name)
        if invocation.dst is not None:
            solver.add(invocation.dst, [container])
        if name.endswith("Sequential"):
            for index, argument in enumerate(invocation.args):
                solver.store_value(container, f"[{index}]", argument, invocation.node)
                solver.store_value(container, "*", argument, invocation.node)
            if invocation.star is not None:
                items = ("container-items", invocation.node, invocation.context)
                solver.load(items, invocation.star, "*")
                solver.store_value(container, "*", items, invocation.node)
            return
        for argument in invocation.args[:1]:
            # through a store, so that the container's elements are on its paths (``nnx.List(layers)``)
            items = ("container-items", invocation.node, invocation.context)
            solver.load(items, argument, "*")
            solver.store_value(container, "*", items, invocation.node)
        for keyword, argument in invocation.keywords:
            solver.store_value(container, repr(keyword), argument, invocation.node)
            solver.store_value(container, "*", argument, invocation.node)

    def _copies(self, name: str, invocation: Invocation, argument) -> None:
        """``nnx.clone(x)``: a fresh copy of each object of ``x``; split / merge: fresh results."""
        solver, dst, node = self.solver, invocation.dst, invocation.node
        if dst is None:
            return
        if name.endswith("clone") and argument is not None:
            solver.watch(argument, lambda obj: solver.add(dst, [_copy(obj, node, invocation.context)]))
            return
        solver.add(dst, [AbstractObject(kinds.LIBRARY, node, invocation.context, class_name=name)])

    def _partial(self, invocation: Invocation) -> None:
        solver = self.solver
        function, prepended = invocation.args[0], invocation.args[1:]
        dst = invocation.dst
        if dst is None:
            return

        def made(target: AbstractObject) -> None:
            partial = AbstractObject(kinds.PARTIAL, invocation.node, invocation.context, target=target,
                                     prepended=len(prepended))
            for index, argument in enumerate(prepended):
                solver.copy(solver.field(partial, f"[{index}]"), argument)
            for keyword, argument in invocation.keywords:  # `partial(Block, rngs=rngs)`: read back by name
                solver.copy(solver.field(partial, repr(keyword)), argument)
            solver.add(dst, [partial])

        solver.watch(function, made)


def _copy(obj: AbstractObject, node, context) -> AbstractObject:
    """A fresh object of ``obj``'s kind and class, made at ``node``, that is a copy of it."""
    return AbstractObject(obj.kind, node, context, class_name=obj.class_name, definition=obj.definition,
                          proven=obj.proven, copy_of=obj)
