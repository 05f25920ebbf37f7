"""The flax table (``nnx_lint/flax_table/nnx_api.py``) against the installed flax, by introspection.

The linter never imports flax; these tests do, so that a flax release that adds a
Variable type, a transform or a compat partial shows up here as a failing row rather than
as silent misses in the rules.
"""
from __future__ import annotations

import inspect

import pytest

from _support import resolve_dotted
from nnx_lint.flax_table import names, nnx_api
from nnx_lint.flax_table.flax_layers import FLAX_LAYERS, FLAX_SUBMODULE_ATTRIBUTES, FLAX_VARIABLE_ATTRIBUTES

nnx = pytest.importorskip("flax.nnx")


def _public(namespace) -> set[str]:
    return {name for name in dir(namespace) if not name.startswith("_")}


def _class(name: str):
    value = getattr(nnx, name)
    return value if inspect.isclass(value) else None


def test_public_names_are_flax_nnx_exactly():
    assert nnx_api.PUBLIC_NAMES == _public(nnx)


@pytest.mark.parametrize("name", sorted(nnx_api.BINDING_APIS))
def test_binding_apis_take_a_function_then_the_arguments_they_bind(name):
    """``nnx.jit_partial(f, *args)``: what follows the function is bound to its first parameters."""
    parameters = list(inspect.signature(getattr(nnx, name)).parameters.values())
    assert parameters[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameters[1].kind is inspect.Parameter.VAR_POSITIONAL


def test_compat_names_are_the_graph_mode_partials():
    partials = {name for name in _public(nnx.compat) if callable(getattr(nnx.compat, name))
                and not inspect.ismodule(getattr(nnx.compat, name))}
    assert nnx_api.COMPAT_NAMES == partials - {"partial"}


def test_every_variable_type_is_listed_with_its_category():
    found = {name for name in _public(nnx) if (cls := _class(name)) and issubclass(cls, nnx.Variable)}
    assert set(nnx_api.VARIABLE_TYPES) == found
    for name, category in nnx_api.VARIABLE_TYPES.items():
        cls = getattr(nnx, name)
        assert issubclass(cls, nnx.Param) == (category == "param"), name
        assert issubclass(cls, nnx.RngState) == (category == "rng"), name


def test_rng_objects_and_module_classes_are_flax_classes():
    for name in nnx_api.RNG_OBJECTS:
        assert issubclass(_class(name), nnx.Pytree) and not issubclass(_class(name), nnx.Variable), name
    for name in nnx_api.MODULE_CLASSES:
        assert issubclass(_class(name), nnx.Pytree), name
        assert nnx_api.holds_variables(f"flax.nnx.{name}"), name


def test_metric_classes_hold_metric_state():
    for name in nnx_api.METRIC_CLASSES:
        metric = getattr(nnx.metrics, name)()
        leaves = nnx.to_flat_state(nnx.state(metric))
        assert leaves and all(isinstance(v, nnx.metrics.MetricState) for _path, v in leaves), name
        assert nnx_api.holds_variables(f"flax.nnx.metrics.{name}"), name


@pytest.mark.parametrize("name", sorted(nnx_api.TRANSFORMS))
def test_transforms_take_both_mode_flags(name):
    parameters = inspect.signature(getattr(nnx, name)).parameters
    assert {"graph", "graph_updates"} <= set(parameters)


@pytest.mark.parametrize("name", sorted(nnx_api.GRAPH_APIS))
def test_graph_apis_take_only_the_graph_flag(name):
    parameters = inspect.signature(getattr(nnx, name)).parameters
    assert "graph" in parameters and "graph_updates" not in parameters


@pytest.mark.parametrize("name", sorted(nnx_api.TRANSFORMS | nnx_api.GRAPH_APIS))
def test_the_pin_keyword_releases_agree_with_the_installed_flax(name):
    """A keyword the table dates at or before the installed release is in the signature, and
    one it dates later is not (``tests/test_old_flax.py`` does the same on 0.12.5 and 0.12.6)."""
    from importlib.metadata import version

    installed = nnx_api.version_key(version("flax"))
    parameters = inspect.signature(getattr(nnx, name)).parameters
    for keyword in ("graph", "graph_updates"):
        since = nnx_api.keyword_since(name, keyword)
        claimed = since is not None and nnx_api.version_key(since) <= installed
        assert (keyword in parameters) == claimed, (name, keyword, since)


def test_mode_setters_exist_and_set_their_flag():
    for qualified_name, flag in nnx_api.MODE_SETTERS.items():
        setter = getattr(nnx, qualified_name.rpartition(".")[2])
        assert callable(setter) and flag in qualified_name


def test_layer_table_names_flax_modules():
    for qualified_name in FLAX_LAYERS:
        cls = _class(qualified_name.rpartition(".")[2])
        assert cls is not None and issubclass(cls, nnx.Module), qualified_name


def test_external_packages_hold_flax_and_jax():
    assert {"flax", "jax"} <= nnx_api.EXTERNAL_PACKAGES


def _instance(name: str):
    """One instance of a flax layer, built with small arguments."""
    rngs = nnx.Rngs(0)
    lin = lambda: nnx.Linear(2, 2, rngs=rngs)  # noqa: E731
    builders = {
        "Linear": lin, "LinearGeneral": lambda: nnx.LinearGeneral(2, 2, rngs=rngs),
        "Einsum": lambda: nnx.Einsum("ab,bc->ac", (2, 2), (2,), rngs=rngs),
        "LoRALinear": lambda: nnx.LoRALinear(2, 2, lora_rank=1, rngs=rngs),
        "Conv": lambda: nnx.Conv(2, 2, (3,), rngs=rngs), "ConvTranspose": lambda: nnx.ConvTranspose(2, 2, (3,), rngs=rngs),
        "Embed": lambda: nnx.Embed(4, 2, rngs=rngs), "LayerNorm": lambda: nnx.LayerNorm(2, rngs=rngs),
        "RMSNorm": lambda: nnx.RMSNorm(2, rngs=rngs), "BatchNorm": lambda: nnx.BatchNorm(2, rngs=rngs),
        "GroupNorm": lambda: nnx.GroupNorm(2, num_groups=1, rngs=rngs),
        "InstanceNorm": lambda: nnx.InstanceNorm(2, rngs=rngs), "LoRA": lambda: nnx.LoRA(2, 1, 2, base_module=lin(), rngs=rngs),
        "PReLU": lambda: nnx.PReLU(), "Sequential": lambda: nnx.Sequential(lin()),
        "ModelAndOptimizer": None, "WeightNorm": lambda: nnx.WeightNorm(lin(), rngs=rngs),
        "SpectralNorm": lambda: nnx.SpectralNorm(lin(), rngs=rngs),
        "RNN": lambda: nnx.RNN(nnx.LSTMCell(2, 2, rngs=rngs), rngs=rngs),
        "Bidirectional": lambda: nnx.Bidirectional(nnx.RNN(nnx.LSTMCell(2, 2, rngs=rngs), rngs=rngs),
                                                   nnx.RNN(nnx.LSTMCell(2, 2, rngs=rngs), rngs=rngs)),
        "MultiHeadAttention": lambda: nnx.MultiHeadAttention(2, 2, decode=False, rngs=rngs),
    }
    builder = builders.get(name)
    return builder() if builder is not None else None


@pytest.mark.parametrize("name", sorted(FLAX_VARIABLE_ATTRIBUTES))
def test_variable_attribute_table_names_variables_flax_stores(name):
    layer = _instance(name)
    for attribute in FLAX_VARIABLE_ATTRIBUTES[name]:
        value = getattr(layer, attribute, None)
        assert value is None or isinstance(value, nnx.Variable), (name, attribute, type(value))
    assert any(isinstance(getattr(layer, a, None), nnx.Variable) for a in FLAX_VARIABLE_ATTRIBUTES[name]), name


@pytest.mark.parametrize("name", sorted(set(FLAX_SUBMODULE_ATTRIBUTES) - {"ModelAndOptimizer"}))
def test_submodule_attribute_table_names_modules_flax_stores(name):
    layer = _instance(name)
    for attribute in FLAX_SUBMODULE_ATTRIBUTES[name]:
        value = getattr(layer, attribute)
        assert isinstance(value, (nnx.Module, list, nnx.List)), (name, attribute, type(value))



def _alias_checking_call(name: str, value):
    """Graph API ``name`` on ``value`` with ``graph=False`` (Tree Mode)."""
    api = getattr(nnx, name)
    if name in ("map", "recursive_map"):
        return api(lambda path, x: x, value, graph=False)
    result = api(value, graph=False)
    return list(result) if name == "iter_graph" else result


@pytest.mark.parametrize("name", sorted(nnx_api.ALIAS_CHECKING_GRAPH_APIS))
def test_alias_checking_graph_apis_reject_shared_variables_in_tree_mode(name):
    layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    _alias_checking_call(name, (layer, nnx.Linear(2, 2, rngs=nnx.Rngs(1))))  # no sharing: runs
    with pytest.raises(ValueError, match="Duplicate"):
        _alias_checking_call(name, (layer, layer))


def test_graph_apis_left_out_of_the_alias_table_take_shared_variables():
    layer = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
    nnx.to_tree((layer, layer))
    assert nnx.find_duplicates((layer, layer))


def _table_names() -> list[tuple[str, str]]:
    """``(module, name)`` for every dotted flax/jax/optax name the table writes as a string
    constant (docstrings aside; a prefix such as ``"flax.nnx."`` names its package)."""
    import ast
    import re
    from pathlib import Path

    dotted = re.compile(r"^(flax|jax|optax)\.[A-Za-z_][\w.]*$")
    found = []
    for module in _table_modules():
        tree = ast.parse(Path(module.__file__).read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found += [(module.__name__, node.value.rstrip(".")) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and dotted.match(node.value)]
    return found


def _table_modules() -> list:
    """Every module of the flax table package."""
    import importlib
    import importlib.util
    import pkgutil

    import nnx_lint.flax_table as package

    return [importlib.import_module(f"{package.__name__}.{info.name}") for info in pkgutil.iter_modules(package.__path__)]


#: Spellings the table keeps for older releases only (``canonical`` maps ``flax.experimental.nnx`` to today's).
_OLD_SPELLINGS = names.OLDER_RELEASE_NAMES


def test_the_table_finds_its_names():
    assert ("nnx_lint.flax_table.flax_layers", "flax.nnx.BatchNorm") in _table_names()
    assert ("nnx_lint.flax_table.nnx_api", "flax.nnx.compat") in _table_names()
    assert ("nnx_lint.flax_table.names", "optax.apply_updates") in _table_names()


@pytest.mark.parametrize("name", sorted({name for _module, name in _table_names()} - _OLD_SPELLINGS))
def test_every_dotted_name_of_the_table_resolves_in_the_installed_flax(name):
    """Each dotted name the table writes is a module, or an attribute of one, in the installed
    flax/jax/optax (importlib, then getattr down the rest of the path)."""
    resolve_dotted(name)


def test_rng_shape_positions_are_every_random_method_with_a_shape():
    """Each random method of ``nnx.Rngs`` forwards to ``jax.random``: the table lists exactly
    those whose ``jax.random`` function takes ``shape``, at its position after the key."""
    import jax
    from nnx_lint.flax_table.static_arguments import RNG_SHAPE_POSITIONS

    expected = {}
    for name, _method in inspect.getmembers(nnx.Rngs, inspect.isfunction):
        function = getattr(jax.random, name, None)
        if name.startswith("_") or function is None or not callable(function):
            continue
        parameters = list(inspect.signature(function).parameters)
        if "shape" in parameters:
            expected[name] = parameters.index("shape") - 1
    assert RNG_SHAPE_POSITIONS == expected
    assert set(expected) <= {name for name, _ in inspect.getmembers(nnx.RngStream, inspect.isfunction)}


def test_layer_bool_flags_are_call_keywords_of_the_layers():
    from nnx_lint.flax_table.static_arguments import LAYER_BOOL_FLAGS

    for layer, flags in LAYER_BOOL_FLAGS.items():
        assert set(flags) <= set(inspect.signature(getattr(nnx, layer).__call__).parameters), layer


def test_tabulate_options_are_its_keywords_besides_the_method_arguments():
    from nnx_lint.flax_table.static_arguments import TABULATE_OPTIONS

    parameters = inspect.signature(nnx.tabulate).parameters
    named = {name for name, parameter in parameters.items()
             if parameter.kind is inspect.Parameter.KEYWORD_ONLY}
    assert TABULATE_OPTIONS == named


# -- the short name tables the rules kept until issue 43 --------------------------------------

@pytest.mark.parametrize("name", sorted(nnx_api.MODE_SWITCH_METHODS))
def test_mode_switch_methods_are_module_methods(name):
    assert callable(getattr(nnx.Module, name))


@pytest.mark.parametrize("name", sorted(nnx_api.POSITIONAL_ARGUMENT_TRANSFORMS))
def test_positional_argument_transforms_address_arguments_by_position(name):
    assert name in nnx_api.TRANSFORMS
    parameters = inspect.signature(getattr(nnx, name)).parameters
    assert "in_axes" in parameters or "argnums" in parameters


def test_state_methods_are_states_and_not_modules():
    for name in nnx_api.STATE_METHODS:
        assert hasattr(nnx.State, name) and not hasattr(nnx.Module, name), name


@pytest.mark.parametrize("name", sorted(names.DTYPE_NAMES))
def test_dtype_names_are_jax_numpy_dtypes(name):
    jnp = pytest.importorskip("jax.numpy")
    assert jnp.dtype(getattr(jnp, name)).name


def test_the_rules_namespace_holds_the_table_only():
    """``nnx_lint.api.flax_table`` re-exports table names (the one it computes is the Variable types)."""
    from nnx_lint.flax_table import table

    assert table.VARIABLE_TYPES == nnx_api.qualified(nnx_api.VARIABLE_TYPES)
    for name in table.__all__:
        assert getattr(table, name) is not None, name
