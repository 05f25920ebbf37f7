"""Differential programs: each is ONE program text, a function ``prog(nnx)``
that runs unchanged against ``tree_runtime`` and against ``flax.nnx`` in Tree
Mode and returns an observation (arrays, shapes, type names, bools, ...).

A program that raises is observed as ``("raises", error_category(exc))``.
``@program(deviation=...)`` marks the few places where flax 0.12.8 differs
from the FLIP and the runtime follows the FLIP; the test checks both sides
against the documented outcomes.  Catalogue ids (A1, C10, ...) name the row
each program covers.
"""

from __future__ import annotations

import dataclasses
import typing as tp

import jax
import jax.numpy as jnp
import optax

from tree_runtime import error_category


@dataclasses.dataclass(frozen=True)
class Deviation:
    """A documented difference: what each implementation does."""

    row: str
    why: str
    runtime: tp.Any  # expected runtime outcome, e.g. ("raises", "aliasing")
    flax: tp.Any  # expected flax outcome, e.g. "ok" (any successful observation)


@dataclasses.dataclass(frozen=True)
class Program:
    name: str
    fn: tp.Callable
    rows: tuple[str, ...]
    deviation: Deviation | None = None
    trace: bool = False  # also run inside jax.make_jaxpr (what the confirmer does)


PROGRAMS: dict[str, Program] = {}


def program(*rows: str, deviation: Deviation | None = None, trace: bool = False):
    def register(fn):
        name = fn.__name__.removeprefix("prog_")
        PROGRAMS[name] = Program(name, fn, rows, deviation, trace)
        return fn

    return register


# ---------------------------------------------------------------- helpers
def _tied(nnx):
    class Tied(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones(2))
            self.b = self.a

    return Tied()


def _shared_sub(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.enc = nnx.Linear(2, 2, rngs=rngs)
            self.dec = self.enc

    return Net(nnx.Rngs(0))


# ---------------------------------------------------------------- A. sharing
@program("A1", trace=True)
def prog_a1_tied_variable_jit(nnx):
    m = _tied(nnx)
    nnx.jit(lambda m: m.a[...] + m.b[...])(m)


@program("A1")
def prog_a1_fix_embed_attend(nnx):
    class LM(nnx.Module):
        def __init__(self, rngs):
            self.embed = nnx.Embed(7, 4, rngs=rngs)

        def __call__(self, tokens):
            return self.embed.attend(self.embed(tokens))

    model = LM(nnx.Rngs(1))
    return nnx.jit(lambda m, t: m(t))(model, jnp.array([1, 2, 3]))


@program("A2")
def prog_a2_shared_submodule_split(nnx):
    nnx.split(_shared_sub(nnx))


@program("A2")
def prog_a2_shared_submodule_state(nnx):
    nnx.state(_shared_sub(nnx), nnx.Param)


@program("A2")
def prog_a2_shared_submodule_clone(nnx):
    nnx.clone(_shared_sub(nnx))


@program("A2")
def prog_a2_shared_submodule_grad(nnx):
    nnx.grad(lambda m: m.enc(jnp.ones((1, 2))).sum())(_shared_sub(nnx))


@program("A3", trace=True)
def prog_a3_list_same_module_twice(nnx):
    block = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    layers = nnx.List([block, block])

    @nnx.jit
    def forward(layers, x):
        for layer in layers:
            x = layer(x)
        return x

    forward(layers, jnp.ones((1, 2)))


@program("A3")
def prog_a3_fix_apply_block_twice(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.block = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            for _ in range(2):
                x = self.block(x)
            return x

    return nnx.jit(lambda m, x: m(x))(Net(nnx.Rngs(0)), jnp.ones((1, 2)))


@program("A4", trace=True)
def prog_a4_same_object_two_args_jit(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda a, b: a(jnp.ones((1, 2))) + b(jnp.ones((1, 2))))(m, m)


@program("A4")
def prog_a4_model_and_submodule_vmap(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.sub = nnx.Linear(2, 2, rngs=rngs)

    m = Net(nnx.Rngs(0))
    nnx.vmap(lambda a, b, x: b(x), in_axes=(None, None, 0))(m, m.sub, jnp.ones((3, 2)))


@program("A4")
def prog_a4_same_object_grad(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    nnx.grad(lambda a, b: (a(jnp.ones((1, 2))) * b(jnp.ones((1, 2)))).sum())(m, m)


@program("A4")
def prog_a4_fix_clone_second_arg(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    f = nnx.jit(lambda a, b: (a(jnp.ones((1, 2))) - b(jnp.ones((1, 2)))).sum())
    return f(m, nnx.clone(m))


@program("A5", trace=True)
def prog_a5_return_input_module(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda m: m)(m)


@program("A5")
def prog_a5_return_input_variable(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda m: m.kernel)(m)


@program("A5")
def prog_a5_grad_aux_returns_input(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    nnx.grad(lambda m: (m(jnp.ones((1, 2))).sum(), m.bias), has_aux=True)(m)


@program("A5")
def prog_a5_eval_shape_identity(nnx):
    nnx.eval_shape(lambda m: m, nnx.Linear(2, 2, rngs=nnx.Rngs(0)))


@program("A5")
def prog_a5_fix_return_arrays(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    kernel = nnx.jit(lambda m: m.kernel[...] * 1.0)(m)
    return kernel, nnx.eval_shape(lambda m: m.kernel[...], m).shape


@program("A6", deviation=Deviation(
    "A6", "flax 0.12.8 does not check aliasing in fori_loop/while_loop and silently loses the "
    "updates (a=b=1); the runtime rejects the alias as the FLIP requires for every transform.",
    runtime=("raises", "aliasing"), flax="ok"))
def prog_a6_tied_model_fori_loop(nnx):
    m = _tied(nnx)

    def body(i, m):
        m.a[...] = m.a[...] + 1.0
        return m

    nnx.fori_loop(0, 2, body, m)
    return m.a[...], m.b[...]


@program("A6")
def prog_a6_fix_untied_fori_loop(nnx):
    class Pair(nnx.Module):
        def __init__(self):
            self.a = nnx.Param(jnp.ones(2))

    m = Pair()

    def body(i, m):
        m.a[...] = m.a[...] + i
        return m

    out = nnx.fori_loop(0, 3, body, m)
    return m.a[...], out.a is m.a


@program("A7", trace=True)
def prog_a7_shared_rngs_stored_twice(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.rngs = rngs

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.a, self.b = Block(rngs), Block(rngs)

    nnx.jit(lambda m: m.a.rngs())(Net(nnx.Rngs(0)))


@program("A7")
def prog_a7_fix_fork_per_module(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.rngs = rngs.fork()

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.a, self.b = Block(rngs), Block(rngs)

    net = Net(nnx.Rngs(0))
    keys = nnx.jit(lambda m: (jax.random.key_data(m.a.rngs()), jax.random.key_data(m.b.rngs())))(net)
    return keys, net.a.rngs.default.count[...], net.b.rngs.default.count[...]


@program("A8")
def prog_a8_jit_constructor_stores_rngs(nnx):
    class Model(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)
            self.rngs = rngs

    nnx.jit(Model)(nnx.Rngs(0))


@program("A8")
def prog_a8_eval_shape_constructor_stores_rngs(nnx):
    class Model(nnx.Module):
        def __init__(self, rngs):
            self.rngs = rngs

    nnx.eval_shape(Model, nnx.Rngs(0))


@program("A8")
def prog_a8_fix_jit_constructor(nnx):
    model = nnx.jit(lambda rngs: nnx.Linear(2, 3, rngs=rngs))(nnx.Rngs(0))
    return model.kernel[...], type(model).__name__


@program("NNX110", trace=True)
def prog_nnx110_jit_returns_input_ref(nnx):
    r = jax.new_ref(jnp.ones(2))
    nnx.jit(lambda r: r)(r)


@program("NNX110", trace=True)
def prog_nnx110_jit_returns_new_ref(nnx):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda m: jax.new_ref(jnp.ones(2)))(model)


@program("NNX110", trace=True)
def prog_nnx110_fix_return_the_array(nnx):
    r = jax.new_ref(jnp.ones(2))

    def f(r):
        r[...] += 1.0
        return r[...] * 2.0

    out = nnx.jit(f)(r)
    return out, r[...]


@program("A10")
def prog_a10_plain_jax_jit_unties(nnx):
    m = _tied(nnx)

    def f(m):
        m.a[...] = m.a[...] * 3.0
        return m.b[...]

    out = jax.jit(f)(m)
    return out, m.a[...]


# ---------------------------------------------------------------- B. prefix filters
@program("B1", trace=True)
def prog_b1_stateaxes_vmap_at_decoration(nnx):
    state_axes = nnx.StateAxes({nnx.Param: 0, ...: None})
    nnx.vmap(lambda m, x: m(x), in_axes=(state_axes, 0))


@program("B1")
def prog_b1_stateaxes_scan(nnx):
    nnx.scan(lambda m, x: (m, x), in_axes=(nnx.StateAxes({...: nnx.Carry}), 0))


@program("B1")
def prog_b1_fix_split_merge_vmap(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 2, rngs=rngs)

    stack = create(nnx.Rngs(0).split(3))
    graphdef, params, rest = nnx.split(stack, nnx.Param, ...)

    @nnx.vmap(in_axes=(0, None, None))
    def apply(params, rest, x):
        return nnx.merge(graphdef, params, rest)(x)

    return apply(params, rest, jnp.ones((1, 2)))


@program("B2", trace=True)
def prog_b2_diffstate_grad(nnx):
    nnx.grad(lambda m: 0.0, argnums=nnx.DiffState(0, nnx.Param))


@program("B2")
def prog_b2_diffstate_value_and_grad(nnx):
    nnx.value_and_grad(lambda m: 0.0, argnums=(nnx.DiffState(0, nnx.Param),))


@program("B2")
def prog_b2_fix_grad_params_only(nnx):
    model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    graphdef, params, stats = nnx.split(model, nnx.Param, ...)

    def loss(params, stats, x):
        return nnx.merge(graphdef, params, stats)(x).sum()

    grads = nnx.grad(loss)(params, stats, jnp.array([[1.0, 2.0], [3.0, 5.0]]))
    return type(grads).__name__, sorted(grads), jax.tree.leaves(grads)


@program("B3")
def prog_b3_statesharding_jit(nnx):
    nnx.jit(lambda m: m, in_shardings=(nnx.StateSharding({nnx.Param: None}),))


# ---------------------------------------------------------------- C. graph updates
@program("C1")
def prog_c1_static_counter_dropped(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.calls = 0

    m = M()

    @nnx.jit
    def step(m):
        m.calls += 1
        return m.w[...].sum()

    step(m)
    return m.calls


@program("C1")
def prog_c1_new_attribute_dropped(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def step(m):
        m.extra = nnx.Param(jnp.zeros(1))
        m.flag = True
        return m.kernel[...].sum()

    step(m)
    return hasattr(m, "extra"), hasattr(m, "flag")


@program("C1", "C4")
def prog_c1_variable_value_update_propagates(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def step(m):
        m.bias[...] = m.bias[...] + 1.5
        m.kernel[...] *= 2.0

    step(m)
    step(m)
    return m.bias[...], m.kernel[...]


@program("C2")
def prog_c2_sow_pop_after_jit_empty(nnx):
    class Foo(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "h", x * 2)
            return x

    m = Foo()
    nnx.jit(lambda m, x: m(x))(m, jnp.ones(2))
    return len(jax.tree.leaves(nnx.pop(m, nnx.Intermediate)))


@program("C2")
def prog_c2_fix_capture(nnx):
    class Foo(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            h = self.lin(x)
            self.sow(nnx.Intermediate, "h", h)
            return h.sum()

    m = Foo(nnx.Rngs(0))
    y, inter = nnx.capture(m, nnx.Intermediate)(jnp.ones((1, 2)))
    return y, sorted(inter), jax.tree.leaves(inter)


@program("C2")
def prog_c2_capture_inside_jit(nnx):
    class Foo(nnx.Module):
        def __call__(self, x):
            self.sow(nnx.Intermediate, "h", x + 1)
            return x * 2

    @nnx.jit
    def run(m, x):
        return nnx.capture(m, nnx.Intermediate)(x)

    y, inter = run(Foo(), jnp.ones(2))
    return y, jax.tree.leaves(inter)


@program("C3")
def prog_c3_perturb_capture_grad(nnx):
    class Model(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            h = self.perturb("h", self.lin(x))
            return (h ** 2).sum()

    model = Model(nnx.Rngs(0))
    x = jnp.array([[1.0, -2.0]])
    _, perturbs = nnx.capture(model, nnx.Perturbation)(x)

    def loss(model, perturbs):
        y, _ = nnx.capture(model, nnx.Perturbation, init=perturbs)(x)
        return y

    model_g, perturb_g = nnx.grad(loss, argnums=(0, 1))(model, perturbs)
    return jax.tree.leaves(perturb_g), type(model_g).__name__


@program("C4")
def prog_c4_batchstat_rngcount_cache_updates(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.bn = nnx.BatchNorm(2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)
            self.cache = nnx.Cache(jnp.zeros(2))

        def __call__(self, x):
            y = self.drop(self.bn(x))
            self.cache[...] = self.cache[...] + y.sum(0)
            return y

    m = Net(nnx.Rngs(0))
    nnx.jit(lambda m, x: m(x))(m, jnp.array([[1.0, 2.0], [3.0, 7.0]]))
    return m.bn.mean[...], m.bn.var[...], m.drop.rngs.count[...], m.cache[...]


@program("C5")
def prog_c5_eval_inside_jit_not_propagated(nnx):
    m = nnx.Dropout(0.5, rngs=nnx.Rngs(0))

    @nnx.jit
    def f(m):
        m.eval()
        return jnp.zeros(())

    f(m)
    return m.deterministic


@program("C5")
def prog_c5_fix_eval_outside(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.bn = nnx.BatchNorm(2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.bn(x))

    m = Net(nnx.Rngs(0))
    x = jnp.array([[1.0, 2.0], [3.0, 7.0]])
    m.eval()
    y_eval = nnx.jit(lambda m, x: m(x))(m, x)
    m.train()
    y_train = nnx.jit(lambda m, x: m(x))(m, x)
    return y_eval, y_train, m.drop.deterministic, m.bn.use_running_average


@program("C6")
def prog_c6_create_cache_in_jit_lost(nnx):
    class Attn(nnx.Module):
        def init_cache(self, n):
            self.cache = nnx.Cache(jnp.zeros(n))

    m = Attn()
    nnx.jit(lambda m: m.init_cache(3))(m)
    return hasattr(m, "cache")


@program("C6", "C4")
def prog_c6_autoregressive_cache_decode(nnx):
    class Decoder(nnx.Module):
        def __init__(self, rngs):
            self.embed = nnx.Embed(5, 4, rngs=rngs)
            self.proj = nnx.Linear(4, 4, rngs=rngs)

        def init_cache(self, length):
            self.keys = nnx.Cache(jnp.zeros((length, 4)))
            self.index = nnx.Cache(jnp.array(0))

        def __call__(self, token):
            h = self.proj(self.embed(token))
            self.keys[...] = self.keys[...].at[self.index[...]].set(h)
            self.index[...] += 1
            return self.embed.attend(self.keys[...].sum(0))

    model = Decoder(nnx.Rngs(0))
    model.init_cache(4)  # outside the transform: the attributes persist
    step = nnx.jit(lambda m, t: jnp.argmax(m(t)))
    token, tokens = jnp.array(1), []
    for _ in range(4):
        token = step(model, token)
        tokens.append(token)
    return jnp.stack(tokens), model.index[...], model.keys[...]


@program("C7")
def prog_c7_vmap_on_init_attribute_missing(nnx):
    class Stack(nnx.Module):
        @nnx.split_rngs(splits=4)
        @nnx.vmap(in_axes=(0, 0), out_axes=0)
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)

    m = Stack(nnx.Rngs(0))
    return hasattr(m, "linear")


@program("C7")
def prog_c7_fix_vmap_factory(nnx):
    class Stack(nnx.Module):
        def __init__(self, rngs):
            @nnx.split_rngs(splits=4)
            @nnx.vmap(in_axes=0, out_axes=0)
            def create(rngs):
                return nnx.Linear(3, 3, rngs=rngs)

            self.linear = create(rngs)

    m = Stack(nnx.Rngs(0))
    return m.linear.kernel.shape, m.linear.kernel[...]


@program("C8")
def prog_c8_static_container_mutation(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.tags = ("a",)

    @nnx.jit
    def step(m):
        m.tags = m.tags + ("b",)
        return m.w[...].sum()

    m = M()
    step(m)
    step(m)
    return m.tags


@program("C9")
def prog_c9_cond_static_update_dropped(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.array(1.0))
            self.mode = "start"

    def yes(m):
        m.mode = "yes"
        m.w[...] = m.w[...] + 10.0

    def no(m):
        m.w[...] = m.w[...] - 10.0

    m = M()
    nnx.cond(jnp.array(True), yes, no, m)
    return m.mode, m.w[...]


@program("C9")
def prog_c9_fori_loop_returns_new_module(nnx):
    def body(i, m):
        return nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    nnx.fori_loop(0, 2, body, nnx.Linear(2, 2, rngs=nnx.Rngs(0)))


@program("C9")
def prog_c9_switch_updates(nnx):
    c = nnx.BatchStat(jnp.array(0.0))

    def add(k):
        def branch(c):
            c[...] = c[...] + k
            return c[...] * 2

        return branch

    outs = [nnx.switch(i, [add(1.0), add(10.0), add(100.0)], c) for i in (2, 0, 1)]
    return outs, c[...]


@program("C10")
def prog_c10_scan_broadcast_update_and_carry_identity(nnx):
    class Acc(nnx.Module):
        def __init__(self):
            self.total = nnx.BatchStat(jnp.array(0.0))

    acc = Acc()

    @nnx.scan(in_axes=(nnx.Carry, None, 0), out_axes=(nnx.Carry, 0))
    def step(carry, acc, x):
        acc.total[...] = acc.total[...] + x
        return carry + x, carry

    carry0 = jnp.array(0.0)
    carry, ys = step(carry0, acc, jnp.arange(3.0))
    return acc.total[...], carry, ys


@program("C10")
def prog_c10_scan_module_carry_is_new_object(nnx):
    class C(nnx.Module):
        def __init__(self):
            self.v = nnx.BatchStat(jnp.array(1.0))

    c = C()

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
    def step(c, x):
        c.v[...] = c.v[...] * x
        return c, c.v[...]

    out, ys = step(c, jnp.array([2.0, 3.0]))
    return out is c, out.v is c.v, c.v[...], ys


@program("C11")
def prog_c11_rng_counters_advance_through_transforms(nnx):
    rngs = nnx.Rngs(0)
    nnx.jit(lambda r: r())(rngs)
    nnx.vmap(lambda r, x: x * 1.0, in_axes=(None, 0))(rngs, jnp.ones(2))
    nnx.cond(jnp.array(True), lambda r: r.default.count[...], lambda r: r.default.count[...], rngs)
    nnx.jit(lambda r: (r(), r()))(rngs)

    def body(i, r):
        r()
        return r

    nnx.fori_loop(0, 3, body, rngs)
    return rngs.default.count[...]


# ---------------------------------------------------------------- D. grad
@program("D1", trace=True)
def prog_d1_grad_returns_argument_type(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.bn = nnx.BatchNorm(2, rngs=rngs)

        def __call__(self, x):
            return self.bn(self.lin(x))

    m = Net(nnx.Rngs(0))
    grads = nnx.grad(lambda m, x: (m(x) ** 2).sum())(m, jnp.array([[1.0, 2.0], [0.5, -1.0]]))
    return type(grads).__name__, type(grads.bn.mean).__name__, jax.tree.leaves(grads)


@program("D1")
def prog_d1_grads_subscript_not_subscriptable(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(m)
    return grads["kernel"]


@program("D1")
def prog_d1_global_norm_includes_batchstats(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.bn = nnx.BatchNorm(2, rngs=rngs)

        def __call__(self, x):
            return self.bn(self.lin(x), use_running_average=True)

    m = Net(nnx.Rngs(0))
    grads = nnx.grad(lambda m: (m(jnp.array([[1.0, 2.0]])) ** 2).sum())(m)
    return optax.global_norm(grads), optax.global_norm(nnx.state(grads, nnx.Param))


@program("D1")
def prog_d1_fix_optimizer_filters_by_wrt(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(m, optax.sgd(0.5), wrt=nnx.Param)
    grads = nnx.grad(lambda m: (m(jnp.ones((1, 2))) ** 2).sum())(m)
    opt.update(m, grads)
    return m.kernel[...], m.bias[...], opt.step[...]


@program("D2", trace=True)
def prog_d2_grad_over_dropout_rngs(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.lin(x))

    nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(Net(nnx.Rngs(0)))


@program("D2")
def prog_d2_fix_split_params(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.lin(x))

    m = Net(nnx.Rngs(0))
    graphdef, params, rest = nnx.split(m, nnx.Param, ...)

    def loss(params, rest):
        model = nnx.merge(graphdef, params, rest)
        return (model(jnp.ones((1, 2))) ** 2).sum()

    grads = nnx.grad(loss)(params, rest)
    return jax.tree.leaves(grads), rest["drop"]["rngs"]["count"][...]


@program("D1")
def prog_d1_value_and_grad_has_aux(nnx):
    m = nnx.Linear(3, 2, rngs=nnx.Rngs(2))

    def loss(m, x):
        y = m(x)
        return (y ** 2).mean(), y.shape

    (value, aux), grads = nnx.value_and_grad(loss, has_aux=True)(m, jnp.ones((4, 3)))
    return value, aux, grads.kernel[...], grads.bias[...]


# ---------------------------------------------------------------- E. custom_vjp
def _foo(nnx):
    class Foo(nnx.Module):
        def __init__(self):
            self.x = nnx.Param(jnp.array(1.0))

    return Foo


@program("E1")
def prog_e1_old_bwd_protocol(nnx):
    Foo = _foo(nnx)

    @nnx.custom_vjp
    def f(m):
        return jnp.sin(m.x[...])

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]),)

    def f_bwd(res, g):
        (m_updates_g,), out_g = g
        return (m_updates_g,)

    f.defvjp(f_fwd, f_bwd)
    nnx.grad(f)(Foo())


@program("E2")
def prog_e2_state_tangent(nnx):
    Foo = _foo(nnx)

    @nnx.custom_vjp
    def f(m):
        return jnp.sin(m.x[...])

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]), m)

    def f_bwd(res, g):
        cos_x, m = res
        return (jax.tree.map(lambda v: v * 0.0 + cos_x * g, nnx.state(m)),)

    f.defvjp(f_fwd, f_bwd)
    nnx.grad(f)(Foo())


@program("E1", "E2")
def prog_e_fix_tree_protocol(nnx):
    Foo = _foo(nnx)

    @nnx.custom_vjp
    def f(m, y):
        return jnp.sin(m.x[...]) * y

    def f_fwd(m, y):
        return f(m, y), (jnp.cos(m.x[...]), jnp.sin(m.x[...]), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        m_g = jax.tree.map(jnp.zeros_like, Foo())
        m_g.x[...] = 10.0 * cos_x * y * g
        return m_g, sin_x * g

    f.defvjp(f_fwd, f_bwd)
    m_g, y_g = nnx.grad(f, argnums=(0, 1))(Foo(), jnp.array(2.0))
    return type(m_g).__name__, m_g.x[...], y_g


_E3 = Deviation(
    "E3", "flax 0.12.8 does not enforce the FLIP rule 'differentiable Variables may not be updated "
    "inside nnx.custom_vjp' (the update is applied and its cotangent silently dropped); the runtime "
    "raises CustomVjpUpdateError.", runtime=("raises", "custom-vjp-update"), flax="ok")


@program("E3", deviation=_E3)
def prog_e3_update_inside_custom_vjp(nnx):
    Foo = _foo(nnx)

    @nnx.custom_vjp
    def f(m):
        m.x[...] = m.x[...] * 2.0
        return jnp.sin(m.x[...])

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]),)

    def f_bwd(res, g):
        m_g = jax.tree.map(jnp.zeros_like, Foo())
        m_g.x[...] = res[0] * g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = Foo()
    grads = nnx.grad(f)(m)
    return m.x[...], grads.x[...]


@program("E4", deviation=dataclasses.replace(_E3, row="E4"))
def prog_e4_updated_variable_cotangent(nnx):
    Foo = _foo(nnx)

    @nnx.custom_vjp
    def f(m):
        m.x[...] = m.x[...] * 2.0
        return jnp.sin(m.x[...])

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]),)

    def f_bwd(res, g):
        m_g = jax.tree.map(jnp.zeros_like, Foo())
        m_g.x[...] = res[0] * g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    return nnx.grad(lambda m: f(m) + m.x[...])(Foo()).x[...]


@program("E3")
def prog_e3_integer_counter_update_allowed(nnx):
    class Foo(nnx.Module):
        def __init__(self):
            self.x = nnx.Param(jnp.array(1.0))
            self.calls = nnx.BatchStat(jnp.array(0))

    @nnx.custom_vjp
    def f(m):
        m.calls[...] += 1
        return jnp.sin(m.x[...])

    def f_fwd(m):
        return f(m), (jnp.cos(m.x[...]),)

    def f_bwd(res, g):
        m_g = jax.tree.map(jnp.zeros_like, Foo())
        m_g.x[...] = res[0] * g
        return (m_g,)

    f.defvjp(f_fwd, f_bwd)
    m = Foo()
    y = f(m)
    return y, m.calls[...]


# ---------------------------------------------------------------- F. transform_metadata
def _stack_factory(nnx, **vmap_kwargs):
    @nnx.vmap(in_axes=0, out_axes=0, **vmap_kwargs)
    def create(rngs):
        return nnx.Linear(3, 3, rngs=rngs, kernel_metadata={"out_sharding": ("din", "dout")})

    return create


def _mesh():
    auto = (jax.sharding.AxisType.Auto,) * 3
    return jax.set_mesh(jax.make_mesh((1, 1, 1), ("layers", "din", "dout"), axis_types=auto))


@program("F1")
def prog_f1_transform_metadata_kwarg_ignored(nnx):
    create = _stack_factory(nnx, transform_metadata={nnx.PARTITION_NAME: "layers"})
    with _mesh():
        m = create(nnx.Rngs(0).split(2))
    return m.kernel.shape, m.kernel.out_sharding


@program("F1")
def prog_f1_fix_transform_metadata_layer(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    @nnx.transform_metadata(in_axes=0, out_axes=0, partition="layers")
    def create(rngs):
        return nnx.Linear(3, 3, rngs=rngs, kernel_metadata={"out_sharding": ("din", "dout")})

    @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
    @nnx.transform_metadata(in_axes=(0, nnx.Carry), out_axes=nnx.Carry, partition="layers")
    def forward(m, x):
        assert m.kernel.out_sharding == ("din", "dout")
        return m(x)

    with _mesh():
        m = create(nnx.Rngs(0).split(2))
        y = forward(m, jnp.ones((1, 3)))
    return m.kernel.shape, m.kernel.out_sharding, y


# ---------------------------------------------------------------- H. other semantics
@program("H1")
def prog_h1_split_rngs_context_manager(nnx):
    rngs = nnx.Rngs(0)
    with nnx.split_rngs(rngs, splits=4):
        pass


@program("H1")
def prog_h1_fix_split_rngs_decorator(nnx):
    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=(0, None), out_axes=0)
    def create(rngs, n):
        return nnx.Linear(n, 2, rngs=rngs)

    rngs = nnx.Rngs(0)
    stack = create(rngs, 2)
    return stack.kernel[...], rngs.default.count[...]


@program("H1")
def prog_h1_fix_rngs_split_method(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 2, rngs=rngs)

    return create(nnx.Rngs(3).split(2)).kernel[...]


@program("H2")
def prog_h2_kwargs_to_vmap_are_mapped(nnx):
    f = nnx.vmap(lambda x, scale: x * scale, in_axes=(0,))
    return f(jnp.arange(3.0), scale=jnp.array([1.0, 2.0, 3.0]))


@program("H2")
def prog_h2_kwargs_to_grad_not_differentiated(nnx):
    g = nnx.grad(lambda x, y: (x * y).sum())
    return g(jnp.ones(2), y=jnp.array([2.0, 3.0]))


@program("H3", trace=True)
def prog_h3_pytree_false_module(nnx):
    class Foo(nnx.Module, pytree=False):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))

    nnx.jit(lambda m: m.w[...].sum())(Foo())


@program("H5")
def prog_h5_python_scalar_in_data_is_traced(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.cfg = nnx.data((jnp.ones(2), 3))

    @nnx.jit
    def f(m):
        return jnp.zeros(m.cfg[1])

    f(M())


@program("H5")
def prog_h5_fix_scalar_static(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.n = 3

    return nnx.jit(lambda m: jnp.zeros(m.n) + m.w[...].sum())(M())


@program("H7")
def prog_h7_iter_modules_paths(nnx):
    model = nnx.Sequential(nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(2, 1, rngs=nnx.Rngs(1)))
    return sorted(str(path) for path, _ in nnx.iter_modules(model))


@program("H9")
def prog_h9_module_is_plain_pytree(nnx):
    m = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    grads = jax.grad(lambda m: m(jnp.ones((1, 2))).sum())(m)
    out = jax.jit(lambda m: m)(m)
    return type(grads).__name__, grads.kernel[...], type(out).__name__, out.kernel is m.kernel


@program("H10")
def prog_h10_find_duplicates(nnx):
    return nnx.find_duplicates(_tied(nnx))


@program("H10")
def prog_h10_update_and_pop(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.note = nnx.Intermediate(jnp.zeros(1))

    m = M()
    nnx.update(m, nnx.State({"w": jnp.array([3.0, 4.0])}))
    popped = nnx.pop(m, nnx.Intermediate)
    again = nnx.pop(m, nnx.Intermediate)
    return m.w[...], sorted(popped), len(jax.tree.leaves(again)), hasattr(m, "note")


# ---------------------------------------------------------------- graph APIs and filters
@program("graph-api")
def prog_split_merge_roundtrip_filters(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.bn = nnx.BatchNorm(2, rngs=rngs)

    m = Net(nnx.Rngs(0))
    graphdef, params, stats = nnx.split(m, nnx.Param, nnx.BatchStat)
    merged = nnx.merge(graphdef, params, stats)
    not_bn = nnx.state(m, nnx.All(nnx.Param, nnx.Not(nnx.PathContains("bn"))))
    any_state = nnx.state(m, nnx.Any(nnx.BatchStat, nnx.PathContains("lin")))
    return (type(merged).__name__, merged.lin.kernel[...], len(jax.tree.leaves(params)),
            len(jax.tree.leaves(stats)), len(jax.tree.leaves(not_bn)), len(jax.tree.leaves(any_state)),
            nnx.graphdef(m) == graphdef)


@program("graph-api")
def prog_clone_is_independent(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    c = nnx.clone(m)
    c.bias[...] = jnp.ones(2)
    return m.bias[...], c.bias[...], c.kernel is m.kernel


@program("graph-api")
def prog_list_and_sequential(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs) for _ in range(3)])
            self.head = nnx.Sequential(nnx.Linear(2, 3, rngs=rngs), nnx.gelu)

        def __call__(self, x):
            for layer in self.layers:
                x = nnx.relu(layer(x))
            return self.head(x)

    m = Net(nnx.Rngs(0))
    y = nnx.jit(lambda m, x: m(x))(m, jnp.ones((2, 2)))
    return y, len(jax.tree.leaves(m)), sorted(nnx.state(m, nnx.Param)["layers"])


@program("graph-api")
def prog_data_attribute_children(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.blocks = nnx.data([nnx.Param(jnp.ones(1)), nnx.Param(jnp.ones(1) * 2)])
            self.name = "m"

    m = M()

    @nnx.jit
    def bump(m):
        for p in m.blocks:
            p[...] += 1.0

    bump(m)
    return [b[...] for b in m.blocks], len(jax.tree.leaves(m))


# ---------------------------------------------------------------- other transforms
@program("transforms")
def prog_jit_static_argnums(nnx):
    f = nnx.jit(lambda m, n: m(jnp.ones((1, n))), static_argnums=1)
    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    return f(m, 3)


@program("transforms")
def prog_jit_method_and_kwargs(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)

    @nnx.jit
    def apply(m, x, *, scale):
        return m.lin(x) * scale

    return apply(Net(nnx.Rngs(0)), jnp.ones((1, 2)), scale=jnp.array(3.0))


@program("transforms")
def prog_vmap_broadcast_model_mapped_input(nnx):
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    return nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(m, jnp.arange(8.0).reshape(4, 2))


@program("transforms")
def prog_vmap_mapped_variable_updates(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.BatchNorm(2, rngs=rngs)

    bns = create(nnx.Rngs(0).split(3))

    @nnx.vmap(in_axes=(0, 0))
    def apply(bn, x):
        return bn(x)

    y = apply(bns, jnp.arange(12.0).reshape(3, 2, 2))
    return y, bns.mean[...], bns.var[...]


@program("transforms")
def prog_remat_grad(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    @nnx.remat
    def block(m, x):
        return jnp.tanh(m(x))

    return nnx.grad(lambda m: block(m, jnp.ones((1, 2))).sum())(m).kernel[...]


@program("transforms")
def prog_while_loop_counter(nnx):
    c = nnx.BatchStat(jnp.array(0))

    def body(val):
        c, x = val
        c[...] += 1
        return c, x * 2.0

    _, x = nnx.while_loop(lambda val: val[1] < 100.0, body, (c, jnp.array(1.0)))
    return c[...], x


@program("transforms")
def prog_eval_shape_model(nnx):
    abstract = nnx.eval_shape(lambda: nnx.Linear(4, 3, rngs=nnx.Rngs(0)))
    return type(abstract).__name__, abstract.kernel.shape, str(abstract.kernel.dtype)


@program("transforms")
def prog_jit_inside_plain_jax_jit(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def inner(m, x):
        m.bias[...] = m.bias[...] + x.sum()
        return m(x)

    @jax.jit
    def outer(m, x):
        y = inner(m, x)
        return y, m

    y, m2 = outer(m, jnp.ones((1, 2)))
    return y, m2.bias[...], m.bias[...]


# ---------------------------------------------------------------- training programs
@program("training", trace=True)
def prog_train_mlp_batchnorm_dropout_optimizer(nnx):
    class MLP(nnx.Module):
        def __init__(self, rngs):
            # No bias before BatchNorm: its gradient is ~0 (pure float noise),
            # which Adam would amplify into implementation-dependent updates.
            self.l1 = nnx.Linear(3, 8, use_bias=False, rngs=rngs)
            self.bn = nnx.BatchNorm(8, rngs=rngs)
            self.drop = nnx.Dropout(0.2, rngs=rngs)
            self.l2 = nnx.Linear(8, 1, rngs=rngs)

        def __call__(self, x):
            return self.l2(self.drop(nnx.relu(self.bn(self.l1(x)))))

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (8, 3))
    y = x.sum(-1, keepdims=True)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        graphdef, params, rest = nnx.split(model, nnx.Param, ...)

        def loss_fn(params, rest):
            return ((nnx.merge(graphdef, params, rest)(x) - y) ** 2).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(params, rest)
        optimizer.update(model, grads)
        return loss

    losses = [train_step(model, optimizer, x, y) for _ in range(3)]
    model.eval()
    pred = nnx.jit(lambda m, x: m(x))(model, x)
    return jnp.stack(losses), optimizer.step[...], model.bn.mean[...], pred


@program("training")
def prog_train_grad_whole_model_sgd(nnx):
    model = nnx.Sequential(nnx.Linear(2, 4, rngs=nnx.Rngs(0)), nnx.tanh, nnx.Linear(4, 1, rngs=nnx.Rngs(1)))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
    x, y = jnp.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]), jnp.array([[1.0], [1.0], [0.0]])

    @nnx.jit
    def step(model, optimizer):
        loss, grads = nnx.value_and_grad(lambda m: ((m(x) - y) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    return jnp.stack([step(model, optimizer) for _ in range(4)])


def _linesearch_step(nnx, as_state: bool):
    """One L-BFGS step whose linesearch gets the gradient as ``grad=`` (an optax extra argument)."""
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    graphdef = nnx.graphdef(model)
    optimizer = nnx.Optimizer(model, optax.lbfgs(1e-1), wrt=nnx.Param)
    x, y = jnp.array([[0.0, 1.0], [1.0, 0.0]]), jnp.array([[1.0], [0.0]])
    loss_fn = lambda m: ((m(x) - y) ** 2).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    grad = nnx.state(grads, nnx.Param) if as_state else grads
    optimizer.update(model, grads, grad=grad, value=loss, value_fn=lambda params: loss_fn(nnx.merge(graphdef, params)))
    return loss_fn(model)


@program("training")
def prog_train_linesearch_grad_as_state(nnx):
    return _linesearch_step(nnx, as_state=True)


@program("D1")
def prog_train_linesearch_grad_as_module(nnx):
    # Tree Mode's gradient is a Module; the linesearch tree-maps it against the State of params.
    return _linesearch_step(nnx, as_state=False)


@program("training")
def prog_train_scanned_layer_stack(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(4, 4, rngs=rngs)
            self.norm = nnx.LayerNorm(4, rngs=rngs)

        def __call__(self, x):
            return x + nnx.gelu(self.norm(self.lin(x)))

    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return Block(rngs)

    blocks = create(nnx.Rngs(0))

    def forward(blocks, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def body(x, block):
            return block(x)

        return body(x, blocks)

    x = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
    loss = lambda blocks: (forward(blocks, x) ** 2).mean()
    value, grads = nnx.jit(lambda b: nnx.value_and_grad(loss)(b))(blocks)
    return value, grads.lin.kernel.shape, grads.lin.kernel[...], grads.norm.scale[...]


@program("training")
def prog_dropout_train_vs_eval(nnx):
    drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=3))
    x = jnp.ones((2, 4))
    y1 = nnx.jit(lambda d, x: d(x))(drop, x)
    y2 = nnx.jit(lambda d, x: d(x))(drop, x)
    drop.eval()
    y3 = drop(x)
    return y1, y2, y3, drop.rngs.count[...]


@program("training")
def prog_layernorm_embed_numerics(nnx):
    emb = nnx.Embed(6, 4, rngs=nnx.Rngs(0))
    ln = nnx.LayerNorm(4, rngs=nnx.Rngs(0))
    h = ln(emb(jnp.array([[0, 5, 2]])))
    return h, emb.attend(h)


# ---------------------------------------------------------------- more semantics
@program("H7")
def prog_h7_iter_graph_no_static(nnx):
    class M(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.n = 3
            self.arr = jnp.zeros(1)
            self.sub = nnx.Linear(1, 1, rngs=nnx.Rngs(0))

    return [(p, type(v).__name__) for p, v in nnx.iter_graph(M()) if "_pytree__state" not in p]


@program("trace-context", trace=True)
def prog_closure_variable_mutation_in_jit(nnx):
    v = nnx.Param(jnp.ones(2))

    @nnx.jit
    def f(x):
        v[...] = x * 2.0
        return x

    f(jnp.ones(2))


@program("trace-context")
def prog_closure_module_attribute_in_jit(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def f(x):
        m.bias[...] = x
        return x

    f(jnp.ones(2))


@program("trace-context")
def prog_closure_variable_read_is_fine(nnx):
    v = nnx.Param(jnp.arange(3.0))
    return nnx.jit(lambda x: x * v[...])(jnp.ones(3)), nnx.grad(lambda x: (x * v[...]).sum())(jnp.ones(3))


@program("transforms")
def prog_nested_jit_vmap_grad(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.Linear(2, 1, rngs=rngs)

    models = create(nnx.Rngs(0).split(3))

    @nnx.jit
    def per_model_grads(models, x):
        @nnx.vmap(in_axes=(0, None))
        def one(m, x):
            return nnx.grad(lambda m: (m(x) ** 2).sum())(m)

        return one(models, x)

    grads = per_model_grads(models, jnp.array([[1.0, -1.0]]))
    return type(grads).__name__, grads.kernel[...], grads.bias[...]


@program("transforms")
def prog_vmap_out_axes_1_and_axis_size(nnx):
    f = nnx.vmap(lambda x: jnp.stack([x, x * 2]), in_axes=0, out_axes=1)
    g = nnx.vmap(lambda: jnp.arange(2.0), in_axes=(), axis_size=3)
    return f(jnp.arange(3.0)), g()


@program("transforms")
def prog_scan_reverse_and_ys_only(nnx):
    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0), reverse=True)
    def running(total, x):
        total = total + x
        return total, total

    @nnx.scan(in_axes=0, out_axes=0)
    def square(x):
        return x * x

    return running(jnp.array(0.0), jnp.arange(4.0)), square(jnp.arange(3.0))


@program("transforms")
def prog_scan_scanned_module_updates(nnx):
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(rngs):
        return nnx.BatchNorm(2, rngs=rngs)

    bns = create(nnx.Rngs(0).split(3))

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(x, bn):
        return bn(x)

    y = forward(jnp.array([[1.0, 2.0], [3.0, 5.0]]), bns)
    return y, bns.mean[...], bns.var[...]


@program("transforms")
def prog_grad_argnums_tuple_module_and_state(nnx):
    m = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    graphdef, params = nnx.split(m)

    def loss(m, params, x):
        return (m(x) * nnx.merge(graphdef, params)(x)).sum()

    gm, gp = nnx.grad(loss, argnums=(0, 1))(m, nnx.clone(params), jnp.ones((1, 2)))
    return type(gm).__name__, type(gp).__name__, gm.kernel[...], gp["kernel"][...]


@program("graph-api")
def prog_value_property_and_metadata(nnx):
    p = nnx.Param(jnp.ones(2), note="w")
    p.value = p.value * 3.0
    return p.value, p[...], p.note, p.get_metadata("note"), type(p).__name__


@program("graph-api")
def prog_rngs_streams(nnx):
    rngs = nnx.Rngs(0, dropout=1)
    a = rngs.params()
    b = rngs.dropout()
    c = rngs()
    forked = rngs.fork()
    return (jax.random.key_data(a), jax.random.key_data(b), jax.random.key_data(c),
            rngs.default.count[...], rngs.dropout.count[...], sorted(forked),
            jax.random.key_data(forked.default.key[...]))


@program("graph-api")
def prog_pop_empty_and_non_empty(nnx):
    class Foo(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(1))

        def __call__(self, x):
            self.sow(nnx.Intermediate, "y", x * 3)
            return x

    m = Foo()
    m(jnp.ones(1))
    first = nnx.pop(m, nnx.Intermediate)
    second = nnx.pop(m, nnx.Intermediate)
    return jax.tree.leaves(first), len(jax.tree.leaves(second))


@program("training")
def prog_optimizer_inside_vmap_free_loop(nnx):
    model = nnx.Linear(3, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(5e-2), wrt=nnx.Param)
    xs = jnp.arange(12.0).reshape(4, 3) / 10.0
    ys = xs @ jnp.array([[1.0], [-2.0], [0.5]])

    @nnx.jit
    def epoch(model, optimizer):
        def body(i, state):
            model, optimizer = state
            grads = nnx.grad(lambda m: ((m(xs) - ys) ** 2).mean())(model)
            optimizer.update(model, grads)
            return model, optimizer

        nnx.fori_loop(0, 5, body, (model, optimizer))
        return ((model(xs) - ys) ** 2).mean()

    return epoch(model, optimizer), epoch(model, optimizer), optimizer.step[...], model.kernel[...]


@program("graph-api")
def prog_variable_operators(nnx):
    p = nnx.Param(jnp.array([1.0, 2.0]))
    q = nnx.Param(jnp.array([1.0, 5.0]))
    return p + 1, 2 * p, p @ q, p == q, -p, p ** 2


@program("graph-api")
def prog_variable_inplace_operator_rejected(nnx):
    p = nnx.Param(jnp.ones(2))
    p += 1


@program("G1", deviation=Deviation(
    "G1", "graph=True is an explicit opt-in to graph mode, which flax honours even in a "
    "tree-mode process; tree_runtime implements Tree Mode only and raises "
    "GraphModeNotSupportedError (the linter treats the opt-in as silent, NNX9xx advisory).",
    runtime=("raises", "graph-mode"), flax="ok"))
def prog_g1_explicit_graph_true_opt_in(nnx):
    m = _tied(nnx)
    return nnx.jit(lambda m: m.a[...] + m.b[...], graph=True, graph_updates=True)(m)


@program("B1")
def prog_b1_fix_prefix_tree_vmap(nnx):
    class Ens(nnx.Module):
        def __init__(self):
            self.w = nnx.Param(jnp.arange(12.0).reshape(4, 3))
            self.scale = nnx.BatchStat(jnp.array(2.0))

    model = Ens()
    axes = nnx.prefix(model, {nnx.Param: 0, ...: None})

    @nnx.vmap(in_axes=(axes, None))
    def f(m, x):
        m.scale[...] = m.scale[...] + 0.0  # broadcast Variable, unbatched update: fine
        return (m.w @ x) * m.scale

    return f(model, jnp.ones(3))


@program("C11")
def prog_c11_rngs_sampler_methods_through_transforms(nnx):
    rngs = nnx.Rngs(0)
    a = nnx.jit(lambda r: r.normal(()))(rngs)
    b = nnx.jit(lambda r: r.normal(()))(rngs)
    nnx.vmap(lambda r, x: r.uniform(()) + x, in_axes=(None, 0))(rngs, jnp.zeros(3))
    nnx.cond(True, lambda r: r.normal(()), lambda r: r.normal(()), rngs)
    nnx.fori_loop(0, 3, lambda i, r: (r.normal(()), r)[1], rngs)
    return a, b, rngs.default.count[...], rngs.params.bernoulli(0.5, (4,))


@program("C5")
def prog_c5_fix_view(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.lin(x))

    m = Net(nnx.Rngs(0))
    frozen = nnx.view(m, deterministic=True)
    y = nnx.jit(lambda m, x: m(x))(frozen, jnp.ones((1, 2)))
    return y, m.drop.deterministic, frozen.drop.deterministic, frozen.lin.kernel is m.lin.kernel


@program("F1")
def prog_f1_with_partitioning_metadata(nnx):
    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), ("din", "dout"))
    with _mesh():
        m = nnx.Linear(3, 2, kernel_init=init, rngs=nnx.Rngs(0))
    return m.kernel.out_sharding, m.kernel[...]


@program("graph-api")
def prog_variable_value_attributes_and_flat_state(nnx):
    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    flat = nnx.to_flat_state(nnx.state(m))
    return m.kernel.T.shape, m.kernel.sum(), m.kernel.shape, [path for path, _ in flat]


@program("G2")
def prog_g2_set_graph_mode_false_is_accepted(nnx):
    with nnx.set_graph_mode(False), nnx.set_graph_updates(False):
        f = nnx.jit(lambda m: m.w[...] * 2)
    m = _tied(nnx)
    return nnx.set_graph_mode.current_value(), f.__class__.__name__ != "", _raises_aliasing(f, m)


def _raises_aliasing(f, m):
    try:
        f(m)
        return "ok"
    except ValueError as exc:
        return "ValueError" if "alias" in str(exc).lower() or "Duplicate" in str(exc) else str(exc)


@program("A9", trace=True)
def prog_a9_model_and_optimizer_with_model(nnx):
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))

    @nnx.jit
    def step(model, optimizer):
        grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
        optimizer.update(grads)

    step(model, optimizer)


@program("A9")
def prog_a9_fix_model_and_optimizer_alone(nnx):
    model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))

    @nnx.jit
    def step(optimizer):
        grads = nnx.grad(lambda m: (m(jnp.ones((1, 2))) ** 2).sum())(optimizer.model)
        optimizer.update(grads)

    step(optimizer)
    step(optimizer)
    return model.kernel[...], optimizer.step[...]


@program("transforms")
def prog_vmap_broadcast_variable_batched_update_rejected(nnx):
    acc = nnx.BatchStat(jnp.zeros(()))

    @nnx.vmap(in_axes=(None, 0))
    def f(acc, x):
        acc[...] = acc[...] + x  # depends on the mapped axis but acc is broadcast
        return x

    f(acc, jnp.arange(3.0))


@program("graph-api")
def prog_nnx_dict_container(nnx):
    class Heads(nnx.Module):
        def __init__(self, rngs):
            self.heads = nnx.Dict(a=nnx.Linear(2, 1, rngs=rngs), b=nnx.Linear(2, 3, rngs=rngs))

        def __call__(self, x):
            return {k: self.heads[k](x) for k in ("a", "b")}

    m = Heads(nnx.Rngs(0))
    out = nnx.jit(lambda m, x: m(x))(m, jnp.ones((1, 2)))
    return out, sorted(nnx.state(m, nnx.Param)["heads"]), m.heads.a.kernel.shape


# ------------------------------------------- runtime gaps (reproduction builders)
def _legacy(nnx):
    class Legacy(nnx.Module, pytree=False):
        def __init__(self):
            self.w = nnx.Param(jnp.ones(2))
            self.count = nnx.BatchStat(jnp.zeros(()))

        def __call__(self, x):
            return x * self.w[...]

    return Legacy()


@program("H3", trace=True)
def prog_h3_pytree_false_grad(nnx):
    nnx.grad(lambda m: m.w[...].sum())(_legacy(nnx))  # jax: "... is not a valid JAX type"


@program("H3", trace=True)
def prog_h3_pytree_false_value_and_grad(nnx):
    nnx.value_and_grad(lambda m: m.w[...].sum())(_legacy(nnx))


@program("H3", trace=True)
def prog_h3_pytree_false_vmap_broadcast_runs(nnx):
    # in_axes=None: JAX passes the opaque leaf through untouched (flax runs it).
    return nnx.vmap(lambda m, x: m(x), in_axes=(None, 0))(_legacy(nnx), jnp.ones((3, 2)))


@program("H3")
def prog_h3_pytree_false_vmap_broadcast_nested_and_whole(nnx):
    a = nnx.vmap(lambda t, x: t[0](x), in_axes=((None,), 0))((_legacy(nnx),), jnp.ones((3, 2)))
    b = nnx.vmap(lambda m: m.w[...], in_axes=None, axis_size=2)(_legacy(nnx))
    return a, b


@program("H3")
def prog_h3_pytree_false_vmap_broadcast_mutation(nnx):
    def f(m, x):
        m.count[...] += 1.0  # the caller's object, not a copy: another trace level
        return m(x)

    nnx.vmap(f, in_axes=(None, 0))(_legacy(nnx), jnp.ones((3, 2)))


@program("H3", trace=True)
def prog_h3_pytree_false_vmap_mapped(nnx):
    nnx.vmap(lambda m, x: m(x), in_axes=(0, 0))(_legacy(nnx), jnp.ones((3, 2)))


@program("H3")
def prog_h3_pytree_false_vmap_kwarg_is_mapped(nnx):
    nnx.vmap(lambda x, m: m(x), in_axes=(0,))(jnp.ones((3, 2)), m=_legacy(nnx))


@program("H3")
def prog_h3_pytree_false_vmap_returned(nnx):
    nnx.vmap(lambda m, x: m, in_axes=(None, 0))(_legacy(nnx), jnp.ones((3, 2)))


@program("H3")
def prog_h3_pytree_false_static_and_nondiff_pass_through(nnx):
    x = jnp.ones(2)
    a = nnx.jit(lambda m, x: m(x), static_argnums=0)(_legacy(nnx), x)
    b = nnx.jit(lambda x, m: m(x), static_argnames="m")(x, m=_legacy(nnx))
    c = nnx.grad(lambda x, m: m(x).sum())(x, _legacy(nnx))
    d = nnx.grad(lambda x, m=None: m(x).sum())(x, m=_legacy(nnx))
    return a, b, c, d


@program("H3")
def prog_h3_pytree_false_jit_returned(nnx):
    nnx.jit(lambda m: m, static_argnums=0)(_legacy(nnx))


@program("H3")
def prog_h3_pytree_false_remat(nnx):
    nnx.remat(lambda m: m.w[...])(_legacy(nnx))


@program("H3")
def prog_h3_pytree_false_cond(nnx):
    nnx.cond(True, lambda m: m.w[...], lambda m: m.w[...], _legacy(nnx))


@program("H3")
def prog_h3_pytree_false_eval_shape(nnx):
    nnx.eval_shape(lambda m: m.w[...], _legacy(nnx))


@program("H3")
def prog_h3_pytree_false_state_and_iter_modules(nnx):
    outcomes = []
    for use in (lambda m: nnx.state(m), lambda m: list(nnx.iter_modules(m)), lambda m: m.eval()):
        try:
            use(_legacy(nnx))
            outcomes.append("ok")
        except Exception as exc:  # noqa: BLE001 - the category is the observation
            outcomes.append(error_category(exc))
    return outcomes


@program("H3")
def prog_h3_non_jax_values_are_not_non_pytree(nnx):
    import functools

    outcomes = []
    for value in ("abc", functools.partial(print), object()):
        for transform in (nnx.grad, nnx.jit, nnx.vmap):
            try:
                transform(lambda v: 0.0)(value)
                outcomes.append("ok")
            except Exception as exc:  # noqa: BLE001
                outcomes.append(error_category(exc))
    return outcomes


@program("graph-api")
def prog_nnx_list_mutable_sequence(nnx):
    layers = nnx.List([nnx.Param(jnp.array(float(i))) for i in range(3)])
    layers.extend([nnx.Param(jnp.array(3.0)), nnx.Param(jnp.array(4.0))])
    layers.insert(0, nnx.Param(jnp.array(-1.0)))
    layers.insert(-1, nnx.Param(jnp.array(3.5)))
    layers.insert(100, nnx.Param(jnp.array(9.0)))
    popped = [layers.pop().get_value(), layers.pop(0).get_value()]
    layers.remove(layers[1])
    del layers[0]
    del layers[-2:]
    layers[0:1] = [nnx.Param(jnp.array(7.0))]
    try:
        layers[0:1] = []
        slice_resize = "ok"
    except ValueError:
        slice_resize = "ValueError"
    values = [p.get_value() for p in layers]
    layers.clear()
    return values, popped, slice_resize, len(layers), type(layers).__name__


@program("graph-api")
def prog_nnx_list_grown_then_transformed(nnx):
    layers = nnx.List([nnx.Param(jnp.array(1.0))])
    layers.extend([nnx.Param(jnp.array(2.0)), nnx.Param(jnp.array(3.0))])
    layers.insert(1, nnx.Param(jnp.array(1.5)))
    last = layers.pop().get_value()  # the last element: no shifting
    return last, nnx.jit(lambda l: [p[...] * 2 for p in l])(layers)


@program("List-del", deviation=Deviation(
    row="List-del",
    why="flax 0.12.8 nnx.List.__delitem__ of a non-last element shifts the elements down but leaves "
        "the old last attribute behind, so one Variable is stored twice and Tree Mode transforms "
        "raise aliasing; tree_runtime's List is a plain list (no stale element)",
    runtime=("ok", [2, 2.0]),
    flax=("raises", "aliasing"),
))
def prog_list_delete_middle_then_transform(nnx):
    layers = nnx.List([nnx.Param(jnp.array(float(i))) for i in range(3)])
    del layers[0]
    return [len(layers), float(nnx.jit(lambda l: l[1][...])(layers))]


@program("graph-api")
def prog_nnx_dict_mutable_mapping(nnx):
    d = nnx.Dict({"b": nnx.Param(jnp.array(2.0))}, a=nnx.Param(jnp.array(1.0)))
    d.update(c=nnx.Param(jnp.array(3.0)))
    d.update({"e": nnx.Param(jnp.array(5.0))})
    kept = d.setdefault("c", nnx.Param(jnp.array(0.0))).get_value()
    added = d.setdefault("f", nnx.Param(jnp.array(6.0))).get_value()
    first_key, _ = d.popitem()  # the mixin pops the first key in iteration order
    popped = d.pop("c").get_value()
    missing = d.pop("zzz", "default")
    del d["e"]
    try:
        del d["nope"]
        del_missing = "ok"
    except KeyError:
        del_missing = "KeyError"
    out = nnx.jit(lambda d: {k: v[...] for k, v in d.items()})(d)
    return (list(d.keys()), [v.get_value() for v in d.values()], [k for k, _ in d.items()], kept, added,
            first_key, popped, missing, del_missing, out, "a" in d, "c" in d, d.get("zzz", 0))


@program("A2")
def prog_a2_shared_submodule_eval(nnx):
    _shared_sub(nnx).eval()


@program("A2")
def prog_a2_shared_submodule_train_and_set_attributes(nnx):
    outcomes = []
    for use in (lambda m: m.train(), lambda m: m.set_attributes(deterministic=True, raise_if_not_found=False),
                lambda m: nnx.view(m, deterministic=True, raise_if_not_found=False)):
        try:
            use(_shared_sub(nnx))
            outcomes.append("ok")
        except Exception as exc:  # noqa: BLE001
            outcomes.append(error_category(exc))
    return outcomes


@program("A2")
def prog_a2_shared_submodule_iter_modules(nnx):
    list(nnx.iter_modules(_shared_sub(nnx)))


@program("A1")
def prog_a1_tied_variable_eval(nnx):
    _tied(nnx).eval()


@program("H7")
def prog_h7_shared_module_without_variables_iterated_twice(nnx):
    class Net(nnx.Module):
        def __init__(self):
            self.drop = nnx.Dropout(0.5)
            self.again = self.drop
            self.w = nnx.Param(jnp.ones(2))

    m = Net()
    m.eval()
    return [str(p) for p, _ in nnx.iter_modules(m)], m.drop.deterministic, m.again.deterministic


@program("graph-api")
def prog_variables_is_state(nnx):
    model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    everything = nnx.variables(model)
    params, stats = nnx.variables(model, nnx.Param, nnx.BatchStat)
    only = nnx.variables(model, nnx.BatchStat)
    return (sorted(everything), sorted(params), sorted(stats), sorted(only),
            everything["scale"] is model.scale, type(everything).__name__)


@program("graph-api")
def prog_state_methods(nnx):
    model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    state = nnx.state(model)
    pure = state.to_pure_dict()
    params, rest = state.split(nnx.Param, ...)
    one = params.split(nnx.Param)  # one filter: a State (it must cover every leaf)
    try:
        state.split(nnx.Param)
        non_exhaustive = "ok"
    except ValueError:
        non_exhaustive = "ValueError"
    merged = nnx.State.merge(params, rest)
    raw = state.raw_mapping
    filtered = nnx.filter_state(state, nnx.Param)
    f_params, f_stats = nnx.filter_state(state, nnx.Param, nnx.BatchStat)
    return (sorted(pure), pure["scale"], sorted(params), sorted(rest), sorted(one), sorted(merged),
            type(merged).__name__, type(raw).__name__, sorted(raw), sorted(filtered), sorted(f_params),
            sorted(f_stats), non_exhaustive, type(one).__name__)


@program("graph-api")
def prog_replace_by_pure_dict(nnx):
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    state = nnx.state(model)
    kernel = state["kernel"]
    pure = nnx.to_pure_dict(state)
    pure["bias"] = jnp.full(2, 5.0)
    nnx.replace_by_pure_dict(state, pure)
    state.replace_by_pure_dict({"kernel": jnp.zeros((2, 2))})
    try:
        nnx.replace_by_pure_dict(state, {"nope": 1.0})
        missing = "ok"
    except ValueError:
        missing = "ValueError"
    # The State's Variables are replaced by new ones: the model is untouched until nnx.update.
    before = model.bias[...]
    nnx.update(model, state)
    return (state["bias"][...], type(state["bias"]).__name__, state["kernel"] is kernel, missing, before,
            model.bias[...], model.kernel[...])


@program("graph-api")
def prog_replace_by_pure_dict_int_keys_from_checkpoint(nnx):
    layers = nnx.List([nnx.Linear(1, 1, rngs=nnx.Rngs(i)) for i in range(2)])
    state = nnx.state(layers)
    nnx.replace_by_pure_dict(state, {"1": {"bias": jnp.ones(1)}})  # string keys, as after a restore
    return state[1]["bias"][...], state[0]["bias"][...]


def _module_gradient(nnx):
    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)

        def __call__(self, x):
            return self.linear(x)

    model = Net(nnx.Rngs(0))
    return model, nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)


@program("C4")
def prog_c4_module_gradient_into_update(nnx):
    model, grads = _module_gradient(nnx)
    nnx.update(model, grads)  # both: AttributeError (a Module has no mapping)


@program("C4")
def prog_c4_module_gradient_into_to_flat_state(nnx):
    nnx.to_flat_state(_module_gradient(nnx)[1])


@program("C4")
def prog_c4_module_gradient_into_merge(nnx):
    model, grads = _module_gradient(nnx)
    graphdef, _ = nnx.split(model)
    nnx.merge(graphdef, grads)  # both: ValueError "Incorrect number of leaves"


@program("C4")
def prog_c4_module_gradient_into_merge_state(nnx):
    model, grads = _module_gradient(nnx)
    nnx.merge_state(nnx.state(model), grads)  # both: AssertionError


@program("C4")
def prog_c4_module_gradient_into_state_functions(nnx):
    _, grads = _module_gradient(nnx)
    outcomes = []
    for use in (nnx.to_pure_dict, lambda g: nnx.filter_state(g, nnx.Param),
                lambda g: nnx.split_state(g, nnx.Param), lambda g: nnx.replace_by_pure_dict(g, {})):
        try:
            use(grads)
            outcomes.append("ok")
        except Exception as exc:  # noqa: BLE001
            outcomes.append(error_category(exc))
    return outcomes


# ---------------------------------------------------------------- traversals over shared nodes (NNX111, NNX708)
def _variable_free_pair(nnx):
    class Foo(nnx.Pytree):
        def __init__(self, d):
            self.d = d

    foo = Foo(10)
    return Foo, [foo, Foo(20), foo]


@program("A12", trace=True)
def prog_recursive_map_visits_a_shared_node_once_per_path(nnx):
    foo_type, bar = _variable_free_pair(nnx)
    paths = []

    def visit(path, node):
        if isinstance(node, foo_type):
            paths.append(list(path))
            node.d += 1
        return node

    out = nnx.recursive_map(visit, bar)
    return paths, out[0] is out[2], [foo.d for foo in out], bar[0].d


@program("graph-api")
def prog_recursive_map_replaces_nodes_bottom_up(nnx):
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.scale = 3

    seen = []

    def swap(path, node):
        seen.append([str(p) for p in path])
        return nnx.Linear(2, 4, rngs=nnx.Rngs(1)) if isinstance(node, nnx.Linear) else node

    out = nnx.recursive_map(swap, [Block(nnx.Rngs(0))])
    return out[0].lin.kernel.shape, out[0].scale, type(out).__name__, seen[-1]


@program("graph-api", trace=True)
def prog_recursive_map_rejects_a_shared_variable(nnx):
    p = nnx.Param(jnp.ones(2))
    nnx.recursive_map(lambda path, x: x, [p, p])


@program("H11", trace=True)
def prog_map_ignores_recreate_variables_false(nnx):
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    zeros = nnx.map(lambda path, v: jnp.zeros_like(v[...]), model, recreate_variables=False)
    return type(zeros.kernel).__name__, zeros.kernel[...], model.kernel[...].shape


@program("A12", trace=True)
def prog_map_copies_a_shared_node_per_path(nnx):
    _, bar = _variable_free_pair(nnx)
    out = nnx.map(lambda path, v: v, bar)
    return out[0] is out[2], out[0] is bar[0], [foo.d for foo in out]


@program("H11", trace=True)
def prog_merge_pure_state_ignores_recreate_variables_false(nnx):
    model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    merged = nnx.merge(graphdef, nnx.to_pure_dict(state), recreate_variables=False)
    return type(merged.scale).__name__, type(merged.mean).__name__, merged.scale[...]


@program("A12", trace=True)
def prog_clone_and_iter_graph_of_a_shared_node(nnx):
    foo_type, bar = _variable_free_pair(nnx)
    copy = nnx.clone(bar)
    walked = [list(path) for path, node in nnx.iter_graph(bar) if isinstance(node, foo_type)]
    return copy[0] is copy[2], walked
