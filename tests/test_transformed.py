"""The transformed-code service (nnx_lint.analysis.transformed): entries, reach, opt-ins, files."""
from __future__ import annotations

import textwrap
from pathlib import Path

from astroid import nodes

from nnx_lint.analysis import parsing
from nnx_lint.analysis.context import FileContext
from nnx_lint.analysis.project import Project
from nnx_lint.analysis.transformed import transformed_code


def _service(tmp_path: Path, source: str, files: dict[str, str] | None = None, name: str = "main"):
    for relative, text in (files or {}).items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    text = textwrap.dedent(source)
    path = tmp_path / f"{name.replace('.', '/')}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    project = Project([tmp_path])
    project.start_file(str(path))
    module = parsing.build(text, str(path), name, project.is_project_module)
    project.register(name, module)
    context = FileContext(module, str(path), project)
    return transformed_code(context), module


def _function(module: nodes.Module, name: str):
    for function in module.nodes_of_class((nodes.FunctionDef,)):
        qualified = f"{function.parent.name}.{function.name}" if isinstance(function.parent, nodes.ClassDef) else function.name
        if qualified == name:
            return function
    raise KeyError(name)


def _reached(service, module):
    found = {}
    for reach in service.reaches():
        function = reach.function
        if isinstance(function, nodes.Lambda):
            key = f"<lambda:{function.lineno}>"
        elif isinstance(function.parent, nodes.ClassDef):
            key = f"{function.parent.name}.{function.name}"
        else:
            key = function.name
        found[key] = reach
    return found


def test_decorator_forms_are_entries(tmp_path):
    service, module = _service(tmp_path, """
        from functools import partial
        import flax.nnx as nn
        from flax.nnx import vmap as V

        @nn.jit
        def a(m): ...

        @nn.jit(donate_argnums=0)
        def b(m): ...

        @partial(nn.scan, in_axes=(nn.Carry, 0))
        def c(carry, x): ...

        @V(in_axes=0)
        def d(m): ...

        @nn.split_rngs(splits=2)
        def not_traced(rngs): ...

        class M(nn.Module):
            @nn.remat
            def __call__(self, x): ...
    """)
    entries = {(e.function.name, e.transform) for e in service.transforms.entries}
    assert entries == {("a", "jit"), ("b", "jit"), ("c", "scan"), ("d", "vmap"), ("__call__", "remat")}
    assert "self" in service.reach(_function(module, "M.__call__")).external


def test_wrapper_forms_are_entries(tmp_path):
    service, module = _service(tmp_path, """
        from functools import partial
        from flax import nnx

        def loss(m, x): ...
        def t(m): ...
        def f(m): ...
        def body(i, m): ...
        def cond_fun(m): ...
        def loop(m): ...
        def g(m): ...
        def h(m): ...

        step = nnx.jit(loss)
        grads = nnx.value_and_grad(partial(loss, x=1))
        nnx.cond(True, t, f, None)
        nnx.switch(0, [t, f], None)
        nnx.fori_loop(0, 3, body, None)
        nnx.while_loop(cond_fun, loop, None)
        vm = nnx.vmap(in_axes=0)(g)
        sm = partial(nnx.shard_map, mesh=None)(h)
        lam = nnx.eval_shape(lambda m: m)
    """)
    traced = {getattr(e.function, "name", None) for e in service.transforms.entries}
    assert {"loss", "t", "f", "body", "cond_fun", "loop", "g", "h", "<lambda>"} <= traced
    assert all(not e.keeps_graph for e in service.transforms.entries)


def test_opt_ins_do_not_reach(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        def a(m): m.x = 1
        def b(m): m.x = 1
        def c(m): m.x = 1
        def d(m): m.x = 1

        nnx.compat.jit(a)
        nnx.jit(b, graph=True, graph_updates=True)
        nnx.jit(c, graph=True)
        with nnx.set_graph_mode(True), nnx.set_graph_updates(True):
            nnx.jit(d)
    """)
    keeps = {e.function.name: e.keeps_graph for e in service.transforms.entries}
    assert keeps == {"a": True, "b": True, "c": False, "d": True}
    reached = _reached(service, module)
    assert set(reached) == {"c"}


def test_methods_and_calls_are_followed(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        class Block(nnx.Module):
            def __init__(self):
                self.count = 0
            def __call__(self, x):
                return self.helper(x)
            def helper(self, x):
                return x
            def unused(self):
                return 1

        class Model(nnx.Module):
            def __init__(self):
                self.block = Block()
            def __call__(self, x):
                return self.block(x)

        def util(m, x):
            return m(x)

        @nnx.jit
        def step(model: Model, x):
            fresh = Block()
            fresh(x)
            return util(model, x)

        def eager(model: Model):
            return model.block.unused()
    """)
    reached = _reached(service, module)
    assert {"step", "util", "Model.__call__", "Block.__call__", "Block.helper"} <= set(reached)
    assert "Block.unused" not in reached and "eager" not in reached and "Block.__init__" not in reached
    assert reached["util"].chain == ("step", "util")
    # shortest chain first (through `fresh(x)`), externality merged from every chain
    assert reached["Block.helper"].chain == ("step", "Block.__call__", "Block.helper")
    assert reached["Model.__call__"].chain == ("step", "util", "Model.__call__")
    assert reached["Block.helper"].confidence == "called"
    assert reached["step"].confidence == "transform"
    # `self` of Block.__call__ is external: reached through model.block (an input)
    assert "self" in reached["Block.__call__"].external


def test_fresh_objects_are_not_external(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        class Block(nnx.Module):
            def __init__(self):
                self.count = 0
            def bump(self):
                self.count += 1

        @nnx.jit
        def make():
            b = Block()
            b.bump()
            return b
    """)
    reach = service.reach(_function(module, "Block.bump"))
    assert reach is not None and "self" not in reach.external


def test_external_through_aliases_and_loops(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        @nnx.jit
        def step(model, x):
            layer = model.layers[0]
            for block in model.blocks:
                pass
            local = object()
            return layer, block, local
    """)
    function = _function(module, "step")
    reach = service.reach(function)
    names = {n.name: n for n in function.nodes_of_class(nodes.Name)}
    assert service.is_external(names["layer"], reach.external)
    assert service.is_external(names["block"], reach.external)
    assert not service.is_external(names["local"], reach.external)


def test_nested_closures_inherit_external_names(tmp_path):
    service, module = _service(tmp_path, """
        import jax
        from flax import nnx

        @nnx.jit
        def step(m, xs):
            def body(carry, x):
                return carry, m
            def shadow(m):
                return m
            return jax.lax.scan(body, 0, xs), shadow
    """)
    assert "m" in service.reach(_function(module, "body")).external
    assert "m" not in service.reach(_function(module, "shadow")).external


def test_calls_across_files(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/layers.py": """
            from flax import nnx

            class Counter(nnx.Module):
                def __init__(self):
                    self.count = 0
                def __call__(self, x):
                    return self.inner(x)
                def inner(self, x):
                    return x

            def helper(m):
                return m

            @nnx.vmap(in_axes=(None, 0))
            def vmapped(m, x):
                return m(x)

            jitted = nnx.jit(helper)
        """,
    }
    service, module = _service(tmp_path, """
        from flax import nnx
        from pkg import layers
        from pkg.layers import Counter, helper, vmapped

        @nnx.jit
        def step(model: Counter, x):
            helper(model)
            return model(x)

        def run(model, x):
            vmapped(model, x)
            layers.jitted(model)
    """, files=files, name="pkg.main")
    reached = _reached(service, module)
    assert {"helper", "Counter.__call__", "Counter.inner"} <= set(reached)
    inner = reached["Counter.inner"]
    assert inner.boundary is not None and inner.boundary.root() is module and inner.boundary.lineno == 9
    assert "self" in inner.external
    calls = {c.func.as_string(): c for c in module.nodes_of_class(nodes.Call)}
    assert service.transforms.transformed_callable(calls["vmapped"].func).transform == "vmap"
    assert service.transforms.transformed_callable(calls["layers.jitted"].func).transform == "jit"


def test_transformed_callables(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        @nnx.grad
        def loss(m): ...

        step = nnx.jit(lambda m: m)

        class M(nnx.Module):
            @nnx.vmap
            def __call__(self, x): ...

        def run(m: M, x):
            loss(m)
            step(m)
            nnx.scan(lambda c, x: (c, x))(0, x)
            m(x)
            print(x)
    """)
    calls = [c for c in _function(module, "run").nodes_of_class(nodes.Call)]
    found = [service.transforms.transformed_callable(c.func) for c in calls]
    assert [e.transform if e else None for e in found] == ["grad", "jit", "scan", None, "vmap", None]


def test_heuristic_is_labelled(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx

        class M(nnx.Module):
            def __init__(self):
                self.x = 0
            def method(self):
                self.x = 1
            @staticmethod
            def helper():
                return 1

        class Plain:
            def method(self):
                self.x = 1
    """)
    reach = service.heuristic(_function(module, "M.method"))
    assert reach is not None and reach.confidence == "heuristic" and reach.external == frozenset({"self"})
    assert service.heuristic(_function(module, "M.__init__")) is None
    assert service.heuristic(_function(module, "M.helper")) is None
    assert service.heuristic(_function(module, "Plain.method")) is None
    assert service.reach(_function(module, "M.method")) is None


def test_memoised_per_file(tmp_path):
    service, module = _service(tmp_path, """
        from flax import nnx
        step = nnx.jit(lambda m: m)
    """)
    assert transformed_code(service.context) is service
    assert service.reaches() and service._reaches is not None
