"""Reproduction builders and program pieces shared by several graph updates rules, and NNX301's builder."""
from __future__ import annotations

import textwrap

from nnx_lint.api import Facts, Reproduction, flax_table, programs


# -- reproduction helpers -------------------------------------------------------------------

#: Names a reproduction must not reuse as attribute names (Module API, the fixtures' own).
RESERVED_NAMES = frozenset(
    "eval train sow perturb set_attributes iter_modules iter_children w change read lin drop "
    "layers init_cache".split()
)


def dedented(text: str) -> str:
    """``text`` dedented, without surrounding blank lines, ending in one newline."""
    return textwrap.dedent(text).strip("\n") + "\n"


def under(transform: str | None, fn: str, args: str = "m", loss: str = "m.w[...].sum()") -> tuple[str, str]:
    """``(statement, note)``: a statement running ``fn(args)`` under the flagged transform.

    Transforms the reference runtime lacks, or that cannot carry the change in graph mode
    either, run the same function under ``nnx.jit`` (the note says why). ``transform`` is a
    fact: only a known NNX transform's name reaches the program (in the note)."""
    t = programs.choice_or(transform or "jit", flax_table.TRANSFORMS, "another transform")
    parameters = [part.strip() for part in args.split(",")]

    def run(function: str) -> str:
        return programs.call(function, *parameters)

    if t == "cond":
        return programs.call("nnx.cond", "True", fn, fn, *parameters), ""
    if t == "switch":
        return programs.call("nnx.switch", "0", programs.items(fn, fn, kind="list"), *parameters), ""
    vmapped = run(programs.call("nnx.vmap", fn, in_axes="None", axis_size="2"))
    if t == "vmap":
        return vmapped, ""
    if t == "pmap":
        return vmapped, "# nnx.pmap: the same per-call copy; vmap stands in for it on one CPU device\n"
    if t in flax_table.GRAD_TRANSFORMS:
        loss_of = programs.lambda_function(parameters, programs.subscript(programs.items(run(fn), loss), 1))
        return run(programs.call(programs.attribute("nnx", t), loss_of)), ""
    if t == "remat":
        return run(programs.call("nnx.remat", fn)), ""
    if t == "eval_shape":
        return programs.call("nnx.eval_shape", fn, *parameters), ""
    jitted = run(programs.call("nnx.jit", fn))
    # The notes are comments: they name only a transform of TRANSFORMS (``choice_or`` above).
    if t in ("scan", "fori_loop", "while_loop"):
        return (jitted, "# found under nnx.%s: a loop carry cannot change structure in graph mode either, so the\n"
                        "# same change runs under nnx.jit\n" % t)
    found = "nnx." + t if t in flax_table.TRANSFORMS else t
    return jitted, ("" if t == "jit" else "# found under %s: the same change under nnx.jit\n" % found)


# -- NNX301 ------------------------------------------------------------------------------------

def _attribute(facts: Facts, default: str) -> str:
    """The flagged attribute name, when it can be used in a generated program."""
    name = facts.attribute
    if programs.is_identifier(name) and not name.startswith("_") and name not in RESERVED_NAMES:
        return name
    return default


#: The reproduction's Module: INIT sets the flagged attribute, METHOD changes it (when the
#: finding was reached through a method call).
_MODEL = """
class M(nnx.Module):
    def __init__(self):
        self.w = nnx.Param(jnp.ones(2))
        INIT
    METHOD

m = M()
"""
#: What the control runs under the transform: a read only.
_READ = """
def read(m):
    return m.w[...].sum()
"""

#: How each container method is reproduced (on a list / a dict of one Linear).
_LIST_CHANGES = {
    "append": "OBJ.ATTR.append(nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
    "extend": "OBJ.ATTR.extend([nnx.Linear(2, 2, rngs=nnx.Rngs(1))])",
    "insert": "OBJ.ATTR.insert(0, nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
    "pop": "OBJ.ATTR.pop()",
    "remove": "OBJ.ATTR.remove(OBJ.ATTR[0])",
    "clear": "OBJ.ATTR.clear()",
}
_DICT_CHANGES = {
    "update": "OBJ.ATTR.update({'b': nnx.Linear(2, 2, rngs=nnx.Rngs(1))})",
    "setdefault": "OBJ.ATTR.setdefault('b', nnx.Linear(2, 2, rngs=nnx.Rngs(1)))",
    "popitem": "OBJ.ATTR.popitem()",
}


#: NNX301's augmented assignments by operator (the ``op`` fact picks one).
_AUGMENTED = {"+=": "TARGET += AMOUNT", "-=": "TARGET -= AMOUNT", "*=": "TARGET *= AMOUNT"}


def _augmented(op: str, target: str, amount: str) -> str:
    """``target op amount`` for one of :data:`_AUGMENTED`'s operators."""
    return programs.filled(_AUGMENTED[op], expressions={"TARGET": target, "AMOUNT": amount})


def graph_update_reproduction(facts: Facts) -> Reproduction | str:
    """NNX301's reproduction: what it runs is said by
    :meth:`checkers.graph_updates.nnx301_graph_update_in_transform.GraphUpdateInTransform.reproduce`."""
    kind = facts.change_kind or "assign"
    if kind == "lazy-init":
        return ("`nnx.bridge.ToNNX` wraps a Linen module; tree_runtime has no Linen bridge, so no program "
                "runs under both Tree Mode implementations (the fixture runs it with flax in both modes)")
    setter = (facts.change or "").startswith(("Setting", "Deleting")) and "`" not in (facts.change or "")
    attr = _attribute(facts, {"augment": "count", "add-attribute": "extra", "assign-variable": "extra",
                              "rebind-variable": "w2", "rebind-container": "tags", "container-mutation": "layers",
                              "container-item": "layers"}.get(kind, "training"))
    one_linear = "nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])"
    op = facts.op if facts.op in ("+=", "-=", "*=") else "+="
    graph_count = {"+=": 3, "-=": -1, "*=": 2}[op]
    control_change = None
    if kind == "augment":
        init, change = "1", _augmented(op, "OBJ.ATTR", "2")
        observe, tree, graph = "m.ATTR", 1, graph_count
        control_init, control_change = "nnx.Variable(jnp.array(1))", _augmented(op, "OBJ.ATTR[...]", "2")
        control_observe = "int(m.ATTR[...])"
    elif kind == "rebind-variable" and facts.op:
        # `m.v += 1` on a Variable: flax 0.12.8 raises in graph mode too (no in-place Variable ops)
        init, change = "nnx.Param(jnp.ones(2))", _augmented(op, "OBJ.ATTR", "1")
        observe = "list(m.ATTR.shape)"
        tree = graph = None
        control_init, control_change, control_observe = init, _augmented(op, "OBJ.ATTR[...]", "1"), \
            "list(m.ATTR.shape)"
    elif kind == "rebind-variable":
        init, change = "nnx.Param(jnp.ones(2))", "OBJ.ATTR = nnx.Param(jnp.zeros(3))"
        observe, tree, graph = "list(m.ATTR.shape)", [2], [3]
        control_init, control_change, control_observe = init, "OBJ.ATTR.value = jnp.zeros(3)", observe
    elif kind in ("add-attribute", "assign-variable"):
        init = None
        change = ("setattr(OBJ, 'ATTR', nnx.Param(jnp.zeros(3)))" if setter
                  else "OBJ.ATTR = nnx.Param(jnp.zeros(3))")
        observe, tree, graph = "hasattr(m, 'ATTR')", False, True
    elif kind == "delete":
        init, change = "True", "delattr(OBJ, 'ATTR')" if setter else "del OBJ.ATTR"
        observe, tree, graph = "hasattr(m, 'ATTR')", True, False
    elif kind == "rebind-container" or (kind == "assign" and facts.value_shape in ("tuple", "list")):
        init, change = "('a',)", "OBJ.ATTR = OBJ.ATTR + ('b',)"
        observe, tree, graph = "list(m.ATTR)", ["a"], ["a", "b"]
    elif kind == "container-mutation" and facts.method in _DICT_CHANGES:
        init = "nnx.Dict({'a': nnx.Linear(2, 2, rngs=nnx.Rngs(0))})"
        change = _DICT_CHANGES[facts.method]
        observe, tree = "sorted(m.ATTR)", ["a"]
        graph = [] if facts.method == "popitem" else ["a", "b"]
    elif kind == "container-mutation":
        method = facts.method if facts.method in _LIST_CHANGES else "append"
        init, change = one_linear, _LIST_CHANGES[method]
        observe, tree = "len(m.ATTR)", 1
        graph = 2 if method in ("append", "extend", "insert") else 0
    elif kind == "container-item" and facts.statement == "delete":
        init, change = one_linear, "del OBJ.ATTR[0]"
        observe, tree, graph = "len(m.ATTR)", 1, 0
    elif kind == "container-item":
        init, change = one_linear, "OBJ.ATTR[0] = nnx.Linear(2, 5, rngs=nnx.Rngs(1))"
        observe, tree, graph = "m.ATTR[0].out_features", 2, 5
    else:  # assign: a static flag
        init = "True"
        change = "setattr(OBJ, 'ATTR', False)" if setter else "OBJ.ATTR = False"
        observe, tree, graph = "m.ATTR", True, False
    if control_change is None:  # the rewrite: the same change outside the transform, which only reads
        control_init, control_observe = init, observe
    in_method = len(facts.call_chain or []) > 1

    def program(init_value, change_text, observation, outside=False, transform=facts.transform):
        # built on syntax trees: the placeholders OBJ and ATTR are whole names, so no other
        # name changes with them (an attribute `OBJECTS` stays `OBJECTS`)
        names = {"ATTR": attr}
        init_line = (programs.filled("self.ATTR = VALUE", names, {"VALUE": init_value})
                     if init_value is not None else "")
        method = ""
        if in_method and not outside:
            method = programs.filled("def change(self):\n    CHANGE", statements={
                "CHANGE": programs.filled(change_text, {**names, "OBJ": "self"})})
            change_call = "m.change()"
        else:
            change_call = programs.filled(change_text, {**names, "OBJ": "m"})
        header = programs.filled(_MODEL, statements={"INIT": init_line, "METHOD": method})
        function = programs.filled("def FUNCTION(m):\n    CHANGE", {"FUNCTION": "change_outside" if outside else "change"},
                          statements={"CHANGE": change_call})
        if outside:
            statement, note = under(transform, "read")
            run = "".join([function, "# the change, outside the transform\n", programs.lines("change_outside(m)"),
                           programs.lines(_READ), note, programs.lines(statement)])
        else:
            statement, note = under(transform, "change")
            run = "".join([function, note, programs.lines(statement)])
        return header + run + programs.filled("return OBSERVATION", expressions={
            "OBSERVATION": programs.filled(observation, names)})

    main = program(init, change, observe)
    if control_change is not None:
        control = program(control_init, control_change, control_observe, transform="jit")
        if kind == "augment":  # a Variable's value is abstract under the trace: evaluate it concretely
            control = "with jax.ensure_compile_time_eval():\n" + textwrap.indent(control, "    ")
    else:
        control = program(control_init, change, control_observe, outside=True)
    if tree is None:
        return Reproduction(main, expect_error="variable-inplace", control=control)
    return Reproduction(main, expect_tree=tree, expect_graph=graph, control=control)
