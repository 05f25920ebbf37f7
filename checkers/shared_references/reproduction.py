"""Reproduction builders and program pieces shared by several shared references rules."""
from __future__ import annotations

import re
import textwrap

from nnx_lint.api import Facts, Reproduction, flax_table, programs


# ---------------------------------------------------------------------------------------
# Reproduction builders (nnx-lint --confirm): programs with the finding's shape
# ---------------------------------------------------------------------------------------
#
# Every program uses only names both `tree_runtime` and `flax.nnx` provide. A finding's
# attribute paths are rebuilt with `Box`, a plain Module whose constructor stores its
# keyword arguments, `nnx.List` for `[i]` positions and `nnx.Sequential` where the finding
# names one; the shared object is a flax layer of the finding's kind.
#
# Paths, keys and names come from the analysed code: they reach the program only through
# `nnx_lint.base.program_text` (safe names as names, other keys as `repr` literals, indices as
# validated ints); a fact it cannot place safely means no reproduction (`UnsafeFact`).

BOX = '''
class Box(nnx.Module):
    """A plain Module storing its keyword arguments: the finding's attribute paths."""

    def __init__(self, **children):
        for name, child in children.items():
            setattr(self, name, child)
'''


_PATH_TOKEN = re.compile(r"\.?([A-Za-z_]\w*)|\[(\d+)\]|\[(?:'([^']*)'|\"([^\"]*)\")\]")


#: Transforms the reproductions run as they are (both tree_runtime and flax implement
#: them); any other transform (pmap, shard_map, checkify, custom_vjp, ...) is reproduced
#: with nnx.jit: the input/output aliasing check is the same in every Tree Mode transform.
REPRO_TRANSFORMS = frozenset({"jit", "vmap", "grad", "value_and_grad", "remat", "eval_shape", "cond", "switch"})


#: Graph APIs the reproductions can pass a model through (both implementations reject
#: shared references there).
_REPRO_GRAPH_APIS = {
    "split": "nnx.split(model)",
    "state": "nnx.state(model)",
    "graphdef": "nnx.graphdef(model)",
    "clone": "nnx.clone(model)",
    "iter_graph": "list(nnx.iter_graph(model))",
}


def transform_stand_ins(transform: str | None, graph_apis: bool = False) -> tuple[str, ...]:
    """What a program that applies ``transform`` (via :func:`applied`, or a graph API when
    ``graph_apis``) puts in place of the finding's own use: ``nnx.jit`` for a transform
    the runtimes do not share, or for a use the file does not show."""
    if transform is None:
        return ("no use in a transform or graph API is known; the program passes it to `nnx.jit`",)
    if transform in REPRO_TRANSFORMS or (graph_apis and transform in _REPRO_GRAPH_APIS):
        return ()
    return ("`nnx.jit` stands for `nnx.%s`" % programs.identifier_or(transform, "?"),)


def aliasing_reproduction(body: str, control: str, transform: str | None, graph_apis: bool = False) -> Reproduction:
    """Tree Mode raises the aliasing error on ``body`` and runs ``control`` (the rewrite); a
    program that applies ``transform`` through :func:`applied` (or a graph API, with
    ``graph_apis``) names where ``nnx.jit`` stood in for the finding's own use."""
    return Reproduction(body, expect_error="aliasing", control=control,
                        stand_ins=transform_stand_ins(transform, graph_apis=graph_apis))


def path_parts(path: str | None) -> list:
    """``"blocks[0].stream"`` -> ``["blocks", 0, "stream"]`` (strings: attributes or keys;
    neither is checked here: :func:`nnx_lint.base.program_text.access` places them safely).
    A path of another shape is no path the program can rebuild: :class:`UnsafeFact`."""
    parts: list = []
    position = 0
    text = path or ""
    while position < len(text):
        match = _PATH_TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise programs.UnsafeFact("%s is not an attribute path" % programs.shown(path))
        name, number, key_a, key_b = match.groups()
        if number is not None:
            parts.append(programs.bounded_index(int(number), "the index in the path %s" % programs.shown(path)))
        else:
            parts.append(name if name is not None else (key_a or key_b or ""))
        position = match.end()
    return parts


def access_of(base: str, path: str | None) -> str:
    """Source text reaching ``path`` from ``base``."""
    return programs.access(base, path_parts(path))


def emit_tree(tree, container_type: str | None = None) -> str:
    """Source text building a nested tree: dict of str -> Box, of int -> List/Sequential."""
    if not isinstance(tree, dict):
        return tree
    if tree and all(isinstance(k, int) for k in tree):
        items = [emit_tree(tree[i], container_type) if i in tree else
                 ("nnx.relu" if container_type == "Sequential" else "Box()") for i in range(max(tree) + 1)]
        if container_type == "Sequential":
            return programs.call("nnx.Sequential", *items)
        return programs.call("nnx.List", programs.items(*items, kind="list"))
    if container_type == "Sequential" and list(tree) == ["layers"] and isinstance(tree["layers"], dict) \
            and tree["layers"] and all(isinstance(k, int) for k in tree["layers"]):
        return emit_tree(tree["layers"], container_type)
    return programs.call("Box", **{name: emit_tree(child, container_type) for name, child in tree.items()
                                   if isinstance(name, str)})


def tree_of(stores: list[tuple[str, str]]) -> dict:
    """``[(path, expression)]`` -> nested dict (later stores at one path win)."""
    tree: dict = {}
    for path, expression in stores:
        parts = path_parts(path)
        if not parts:
            continue
        node = tree
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = expression
    return tree


def shared_object(kind: str | None, parts: list[str | None], scalar: bool = False) -> str:
    """A fresh object of ``kind`` that has every attribute path in ``parts``."""
    wanted = [p for p in parts if p]
    if kind == "mutable array ref":  # a raw jax.new_ref, as the finding saw it (no Variable)
        return "jax.new_ref(jnp.ones(()))" if scalar else "jax.new_ref(jnp.ones(2))"
    if kind == "Rngs":
        streams = [path_parts(p)[0] for p in wanted if path_parts(p) and isinstance(path_parts(p)[0], str)]
        stream = programs.identifier(streams[0], "the Rngs stream") if streams else "default"
        return programs.call("nnx.Rngs", **{stream: "0"})
    if kind == "Variable" and not wanted:
        return "nnx.Param(jnp.ones(()))" if scalar else "nnx.Param(jnp.ones((2, 2)))"
    if not wanted or all(p in ("kernel", "bias") for p in wanted):
        return "Box(w=nnx.Param(jnp.ones(())))" if scalar else "nnx.Linear(2, 2, rngs=nnx.Rngs(0))"
    if all(p == "embedding" for p in wanted):
        return "nnx.Embed(4, 2, rngs=nnx.Rngs(0))"
    return emit_tree(tree_of([(p, "nnx.Linear(2, 2, rngs=nnx.Rngs(0))") for p in wanted]))


def viewed(expression: str, part: str | None, view: str | None) -> str:
    """``expression`` reached at ``part``, then seen through ``view`` (state / split group)."""
    text = access_of(expression, part)
    if view == "state":
        return programs.call("nnx.state", text)
    if view == "split":
        return programs.subscript(programs.call("nnx.split", text), 1)
    return text


def index_of(label: str | None) -> tuple[str, int | str]:
    """``"args[1]"`` -> ``("args", 1)``; ``"kwargs['x']"`` -> ``("kwargs", "x")``."""
    match = re.match(r"(\w+)\[(?:(\d+)|'([^']*)'|\"([^\"]*)\")\]", label or "")
    if match is None:
        return "args", 0
    group, number, key_a, key_b = match.groups()
    return group, programs.bounded_index(int(number), "the argument position") if number is not None else (key_a or key_b)


def applied(transform: str | None, placed: dict, function: str = "f", result: str = "None",
             differentiated: list[str] | None = None) -> tuple[str, str]:
    """``(definition, call)``: ``function`` taking the values in ``placed`` (label -> source)
    at their positions (free positions get an array), transformed by ``transform``.

    The function returns ``result`` (source over the parameters ``p0, p1, ...`` and
    keyword parameters), except for grad/value_and_grad, which return a scalar loss
    (and ``result`` as aux), differentiating the values at ``differentiated`` (default: all).
    """
    transform = transform if transform in REPRO_TRANSFORMS else "jit"
    positional: dict[int, str] = {}
    diff_indices: list[int] = []
    keywords: dict[str, str] = {}
    for label, source in placed.items():
        group, index = index_of(label)
        if group == "kwargs" and transform == "jit" and programs.is_identifier(index):
            keywords[index] = source
        else:
            position = index if isinstance(index, int) else len(positional)
            positional[position] = source
            if differentiated is None or label in differentiated:
                diff_indices.append(position)
    # vmap needs one mapped argument: an array after the others
    count = (max(positional) + 1) if positional else 0
    arguments = [positional.get(i, "jnp.ones(2)") for i in range(count)]
    parameters = ["p%d" % i for i in range(count)] + list(keywords)
    if transform == "vmap":
        arguments.append("jnp.ones(2)")
        parameters.append("x")
    body = "jnp.sum(jnp.ones(()))" if transform in flax_table.GRAD_TRANSFORMS else result
    if transform in flax_table.GRAD_TRANSFORMS and result != "None":
        body = programs.items("jnp.sum(jnp.ones(()))", result)
    definition = programs.lines(programs.function(function, parameters, programs.returning(body)))
    if transform == "vmap":
        axes = programs.items(*["None"] * (len(arguments) - 1), "0")
        out = {"out_axes": "None"} if result != "None" else {}  # a returned input is not mapped
        call = programs.call(programs.call("nnx.vmap", function, in_axes=axes, **out), *arguments, **keywords)
    elif transform in flax_table.GRAD_TRANSFORMS:
        # every object differentiated (graph mode rejects one object both differentiated and not)
        indices = sorted(diff_indices) or [0]
        argnums = programs.literal(indices[0] if len(indices) == 1 else tuple(indices))
        aux = {"has_aux": "True"} if result != "None" else {}
        call = programs.call(programs.call(programs.attribute("nnx", transform), function, argnums=argnums, **aux),
                             *arguments, **keywords)
    elif transform == "eval_shape":
        call = programs.call("nnx.eval_shape", function, *arguments, **keywords)
    elif transform == "cond":
        call = programs.call("nnx.cond", "True", function, function, *arguments, **keywords)
    elif transform == "switch":
        call = programs.call("nnx.switch", "0", programs.items(function, function, kind="list"), *arguments,
                             **keywords)
    else:
        call = programs.call(programs.call(programs.attribute("nnx", transform), function), *arguments, **keywords)
    return definition, call


def dedented(*blocks: str) -> str:
    """The ``blocks`` dedented, without surrounding blank lines, joined, ending in one newline."""
    return "\n".join(textwrap.dedent(block).strip("\n") for block in blocks if block) + "\n"


#: The finding's class, storing one ``SHARED`` object at the paths ``STORES`` writes.
_CLASS_WITH_SHARED = """
class CLASS(nnx.Module):
    def __init__(self):
        shared = SHARED
        STORES

model = CLASS()
"""


def class_storing(class_name: str, shared: str, tree: dict, container_type: str | None = None) -> str:
    """Class ``class_name`` whose ``__init__`` makes ``shared`` and stores the ``tree`` of
    attributes (:func:`tree_of`, string keys) built from it, then ``model``, an instance."""
    stores = [programs.set_attribute("self", name, emit_tree(child, container_type))
              for name, child in tree.items() if isinstance(name, str)]
    return programs.filled(_CLASS_WITH_SHARED, {"CLASS": class_name}, {"SHARED": shared},
                           {"STORES": programs.lines(*stores)})


def class_alias_reproduction(facts: Facts, tie_fix: str) -> Reproduction:
    """NNX101 / NNX102 / NNX105: the finding's class (or container), with one object
    stored at both paths, passed through the API the file uses it with (else nnx.jit).

    ``tie_fix`` is the control's Tree Mode rewrite: ``"once"`` (store it once, tie by
    use), ``"distinct"`` (a distinct object at the second path) or ``"fork"``.
    """
    kind = facts.kind
    first_part, second_part = facts.first_part, facts.second_part
    shared = shared_object(kind, [first_part, second_part])
    container_type = facts.container_type
    first, second = facts.first_path or "a", facts.second_path or "b"

    def build(second_value: str | None) -> str:
        stores = [(first, access_of("shared", first_part))]
        if second_value is not None:
            stores.append((second, second_value))
        tree = tree_of(stores)
        class_name = facts.class_name
        if programs.is_identifier(class_name) and all(isinstance(k, str) for k in tree):
            return class_storing(class_name, shared, tree, container_type)
        return programs.lines(programs.assign("shared", shared),
                              programs.assign("model", emit_tree(tree, container_type)))

    use = facts.used_with
    if use in _REPRO_GRAPH_APIS:
        apply = programs.lines(_REPRO_GRAPH_APIS[use], "return 'ran'")
    elif use in REPRO_TRANSFORMS:
        definition, call = applied(use, {"args[0]": "model"})
        apply = programs.lines(definition, call, "return 'ran'")
    else:  # no use in the file, or one reproduced by nnx.jit (see REPRO_TRANSFORMS)
        definition, call = applied("jit", {"args[0]": "model"})
        apply = programs.lines(definition, call, "return 'ran'")
    if tie_fix == "once":
        fixed = None
    elif tie_fix == "fork":
        fixed = access_of("shared.fork()", second_part)
    else:
        fixed = access_of(shared_object(kind, [first_part, second_part]), second_part)
    body = dedented(BOX, build(access_of("shared", second_part)), apply)
    control = dedented(BOX, build(fixed), apply)
    return aliasing_reproduction(body, control, use, graph_apis=True)
