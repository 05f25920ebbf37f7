"""The transform signatures of the flax table against ``inspect.signature`` of the installed flax,
and the one decoder that binds a transform call with them (issue 25, item 3)."""
from __future__ import annotations

import inspect

import astroid
import pytest

from nnx_lint.analysis.calls import match_nnx_call
from nnx_lint.analysis.mode import ModeContext
from nnx_lint.analysis.names import NameResolver
from nnx_lint.analysis.transform_types import NOT_LITERAL, decode_transform
from nnx_lint.flax_table import nnx_api
from nnx_lint.flax_table.signatures import TRACING_TRANSFORMS, TRANSFORM_SIGNATURES, traced_arguments

nnx = pytest.importorskip("flax.nnx")

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def test_every_transform_has_a_signature():
    assert set(TRANSFORM_SIGNATURES) == nnx_api.TRANSFORMS
    assert TRACING_TRANSFORMS <= nnx_api.TRANSFORMS


@pytest.mark.parametrize("name", sorted(TRANSFORM_SIGNATURES))
def test_the_signature_is_flax_s(name):
    table = TRANSFORM_SIGNATURES[name]
    parameters = inspect.signature(getattr(nnx, name)).parameters.values()
    assert table.positional == tuple(p.name for p in parameters if p.kind in _POSITIONAL)
    assert table.keyword_only == tuple(p.name for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY)
    assert table.variadic == next((p.name for p in parameters if p.kind == inspect.Parameter.VAR_POSITIONAL), None)
    assert set(table.traced) <= set(table.parameters)
    by_name = {p.name: p for p in parameters}
    for parameter, default in table.defaults.items():
        assert by_name[parameter].default == default, (name, parameter)


def test_traced_positions_follow_the_signature():
    assert traced_arguments("fori_loop") == ((2,), ("body_fun",))
    assert traced_arguments("while_loop") == ((0, 1), ("cond_fun", "body_fun"))
    assert traced_arguments("switch") == ((1,), ("branches",))


def _decoded(source: str):
    """The decoded transform of the last expression statement's call (or its factory)."""
    module = astroid.parse("from flax import nnx\nimport functools\n" + source)
    call = module.body[-1].value
    resolver = NameResolver(module)
    nnx_call = match_nnx_call(call, resolver) or match_nnx_call(call.func, resolver)
    return decode_transform(nnx_call, ModeContext(module, resolver))


def test_grad_arguments_are_decoded_with_their_defaults():
    plain = _decoded("nnx.grad(loss)")
    assert (plain.argnums, plain.argnums_is_tuple, plain.has_aux) == ((0,), False, False)
    assert plain.function.as_string() == "loss"
    tupled = _decoded("nnx.value_and_grad(loss, argnums=(0, 2), has_aux=True)")
    assert (tupled.argnums, tupled.argnums_is_tuple, tupled.has_aux) == ((0, 2), True, True)
    computed = _decoded("nnx.grad(loss, argnums=n, has_aux=aux)")
    assert (computed.argnums, computed.has_aux) == (None, None)
    # `DiffState(0, nnx.LoRAParam) if lora else 0`: the plain branch differentiates the argument
    either = _decoded("nnx.grad(loss, argnums=nnx.DiffState(0, nnx.LoRAParam) if lora else 1)")
    assert either.argnums == (1,)
    factory = _decoded("functools.partial(nnx.grad, argnums=1)(loss)")
    assert (factory.argnums, factory.function) == ((1,), None)


def test_a_transform_without_the_parameter_decodes_none():
    jit = _decoded("nnx.jit(step)")
    assert (jit.argnums, jit.has_aux, jit.nondiff_argnums) == (None, None, None)
    assert jit.function.as_string() == "step"


def test_custom_vjp_nondiff_argnums():
    assert _decoded("nnx.custom_vjp(f)").nondiff_argnums == frozenset()
    assert _decoded("nnx.custom_vjp(f, nondiff_argnums=(1, 2))").nondiff_argnums == frozenset({1, 2})
    assert _decoded("nnx.custom_vjp(nondiff_argnums=1)(f)").nondiff_argnums == frozenset({1})
    assert _decoded("nnx.custom_vjp(f, nondiff_argnums=k)").nondiff_argnums is None


def test_static_argnums():
    assert _decoded("nnx.jit(f)").static_argnums == frozenset()
    assert _decoded("nnx.jit(f, static_argnums=(0, 2))").static_argnums == frozenset({0, 2})
    assert _decoded("nnx.jit(static_argnums=1)(f)").static_argnums == frozenset({1})
    assert _decoded("nnx.jit(f, static_argnums=k)").static_argnums is None
    assert _decoded("nnx.vmap(f)").static_argnums is None  # not a parameter of vmap


def test_axes_are_decoded_as_literals():
    vmap = _decoded("nnx.vmap(f, in_axes=(None, 0), out_axes=1)")
    assert (vmap.in_axes, vmap.out_axes) == ((None, 0), 1)
    assert _decoded("nnx.vmap(f)").in_axes == 0
    assert _decoded("nnx.vmap(f, out_axes=-1)").out_axes == -1
    assert _decoded("nnx.vmap(f, in_axes=(nnx.StateAxes({...: 0}), 0))").in_axes == (NOT_LITERAL, 0)
    assert _decoded("nnx.vmap(f, in_axes=axes)").in_axes is NOT_LITERAL
    assert _decoded("nnx.scan(f)").in_axes is NOT_LITERAL  # (nnx.Carry, 0): not a literal


def test_mode_flags_given_on_the_call():
    pinned = _decoded("nnx.jit(f, graph=True, graph_updates=False)")
    assert (pinned.given_flags, pinned.flags.graph, pinned.flags.graph_updates) == (
        frozenset({"graph", "graph_updates"}), True, False)
    compat = _decoded("nnx.compat.vmap(f)")
    assert compat.is_compat and compat.flags.graph is True and compat.flags.graph_updates is True


def test_an_application_carries_its_decoded_transform(tmp_path):
    from _support import file_context
    from nnx_lint.analysis.transforms import transform_resolver

    context = file_context(tmp_path, "from flax import nnx\n"
                                     "def loss(m):\n    return m(1), 0\n"
                                     "g = nnx.value_and_grad(loss, has_aux=True, graph=True)\n"
                                     "out = g(model)\n")
    call = context.module.body[-1].value
    use = transform_resolver(context).application(call)
    assert use.decoded.has_aux is True and use.decoded.argnums == (0,)
    assert use.decoded.flags.graph is True and use.decoded.given_flags == {"graph"}
    assert use.decoded.applied_to.as_string() == "loss"


def test_transform_groups_name_transforms():
    from nnx_lint.flax_table import signatures

    groups = {name: value for name, value in vars(signatures).items()
              if name.isupper() and isinstance(value, frozenset) and name != "AHEAD_OF_TIME_METHODS"}
    assert {"CARRY_LOOPS", "MAPPING_TRANSFORMS", "ALIAS_CHECKING_WITHOUT_UPDATES"} <= set(groups)
    for name, group in groups.items():
        assert group and group <= nnx_api.TRANSFORMS, name
    assert signatures.AXES_TRANSFORMS == {"vmap", "pmap", "scan"}
    assert signatures.BRANCH_TRANSFORMS == {"cond", "switch"}


def test_eval_shape_checks_aliasing_without_graph_updates_and_jit_does_not():
    model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.jit(lambda a, b: None, graph=True, graph_updates=False)(model, model)
    with pytest.raises(ValueError):
        nnx.eval_shape(lambda a, b: None, model, model, graph=True, graph_updates=False)


def test_api_groups_name_flax_nnx_names():
    for name in ("CONTAINER_NAMES", "GRAPH_USE_APIS", "MODULE_USE_APIS", "GRAPHDEF_SOURCES", "GRAPHDEF_FIRST",
                 "GRAPHDEF_MERGES", "ONE_LEVEL_APIS", "MODULE_WALKS", "OPTIMIZER_CLASSES"):
        group = getattr(nnx_api, name)
        assert group <= nnx_api.PUBLIC_NAMES and all(hasattr(nnx, n) for n in group), name


def test_nnx703_reads_the_decoded_transform():
    """A list ``argnums`` and ``in_axes=-1`` decode like a tuple and an int: NNX703 sees them."""
    from nnx_lint.engine.registry import all_rules
    from nnx_lint.engine.walk import lint_bytes

    source = (b"from flax import nnx\n"
              b"def loss(m, x):\n    return m(x)\n"
              b"g = nnx.grad(loss, argnums=[0, 1])\n"
              b"v = nnx.vmap(lambda a, b: a, in_axes=-1)\n"
              b"def run(model, x):\n    g(model, x=x)\n    v(model, b=x)\n")
    rules = [rule for rule in all_rules() if rule.code == "NNX703"]
    codes = sorted((d.code, d.line) for d in lint_bytes(source, "m.py", rules))
    assert codes == [("NNX703", 7), ("NNX703", 8)]
