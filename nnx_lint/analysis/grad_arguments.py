"""What each grad application differentiates, and where its gradient goes: the grad analysis every
NNX4xx rule asks (``nnx_lint.api.gradients``).

For each call applying ``nnx.grad`` / ``nnx.value_and_grad`` (however it is spelled, through the
one transform resolver), the differentiated arguments with what is known of their class (its
Variables, from :mod:`nnx_lint.analysis.variables`), and the places the gradient flows to
(:mod:`nnx_lint.analysis.gradient_flow`) with what its consumers do there
(:mod:`nnx_lint.analysis.gradient_consumers`)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from astroid import nodes

from nnx_lint.analysis.annotations import parameter_annotation
from nnx_lint.analysis.call_sites import where
from nnx_lint.analysis.flow import bound_values, lookup
from nnx_lint.analysis.gradient_consumers import (
    STATE_FUNCTIONS,
    GradientConsumers,
    StateTypeCheck,
    tree_mode_value,
)
from nnx_lint.analysis.gradient_flow import GradApplication, GradientFlow, GradientUse
from nnx_lint.analysis.objects import object_model
from nnx_lint.analysis.pin_sites import pin_sites_in
from nnx_lint.analysis.transforms import transform_resolver
from nnx_lint.analysis.values import value_model
from nnx_lint.analysis.variables import Holdings, variable_model
from nnx_lint.base import program_syntax as programs
from nnx_lint.flax_table import table as flax_table

__all__ = [
    "grad_analysis", "Differentiated", "unknown_argument", "UNKNOWN_ARGUMENT_EVIDENCE", "grad_pin_sites",
    "STATE_FUNCTIONS", "StateTypeCheck", "tree_mode_value", "GradApplication", "GradientFlow", "GradientUse",
    "holding_facts", "describe_holdings",
]


@dataclass
class Differentiated:
    """What is known about one differentiated argument of an application."""

    position: int
    argument: nodes.NodeNG
    class_name: str | None
    qualified_name: str | None
    holdings: Holdings | None
    #: "class" (constructor/annotation of the argument), "loss-annotation", "called-in-loss",
    #: or "call site line N" (one of several classes the callers pass)
    evidence: str
    #: attribute names the class defines (methods), to avoid State-method false positives
    class_attributes: frozenset[str]
    #: For call-site evidence: the call (maybe in another file) that passes this class.
    call: nodes.Call | None = None
    #: Values stored onto the argument after its construction (``model.set_attributes(
    #: rngs=nnx.Rngs(0))``), already counted in ``holdings``.
    later_stores: tuple = ()
    #: An ``nnx.Dict`` / ``nnx.List`` / ``nnx.Sequential``: its Tree Mode gradient is that
    #: container, which indexes and iterates like the graph-mode State did (not NNX403's).
    container: bool = False

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "argument": self.argument.as_string(),
            "position": self.position,
            "class": self.class_name,
            "class_qualified_name": self.qualified_name,
            "class_evidence": self.evidence,
            "confidence": "heuristic" if self.evidence == "called-in-loss" else "static",
        }
        if self.holdings is not None:
            facts["variable_types"] = self.holdings.variable_types()
            if self.holdings.unknown:
                facts["unknown_parts"] = sorted(set(self.holdings.unknown))[:10]
        return facts


class _Analysis(GradientConsumers):
    """Per-file analysis of grad applications, shared by the NNX4xx rules."""

    def __init__(self, context) -> None:
        self.context = context
        self.variables = variable_model(context)
        self.values = value_model(context)
        self.transforms = transform_resolver(context)
        self.flow = GradientFlow(context)
        self._memo: dict[int, tuple[GradApplication, list[list[Differentiated]]] | None] = {}
        #: Each call's grad application (asked for every call by the proven and the unproven paths).
        self._applications: dict[int, GradApplication | None] = {}

    def application(self, call: nodes.Call) -> tuple[GradApplication, list[list[Differentiated]]] | None:
        """The grad application ``call`` is, with the candidates for each differentiated argument."""
        key = id(call)
        if key not in self._memo:
            self._memo[key] = self._analyse(call)
        return self._memo[key]

    def differentiated_at(self, call: nodes.Call, breaks: Callable[[Differentiated], bool] | None = None,
                          *, containers: bool = False) -> Iterator[tuple[GradApplication, Differentiated]]:
        """``(application, argument)`` for each differentiated argument if ``call`` applies a grad.

        When several classes reach an argument (callers of an unannotated parameter that
        disagree), each is a candidate: with ``breaks`` the first candidate for which it holds
        is yielded (the rule flags if one of them breaks, and names it), else the first one.
        ``containers``: also flax's container Modules (``nnx.Dict(...)``, ``nnx.List([...])``),
        whose gradients index like a State but still differ from one.
        """
        analysed = self.application(call)
        if analysed is None:
            return
        application, arguments = analysed
        for candidates in arguments:
            chosen = next((c for c in candidates if (containers or not c.container)
                           and (breaks is None or breaks(c))), None)
            if chosen is not None:
                yield application, chosen

    def unresolved_at(self, call: nodes.Call) -> Iterator[tuple[GradApplication, Differentiated, str]]:
        """``(application, argument, reason)`` for each differentiated argument of ``call``
        that is (taken to be) a Module whose contents the analysis could not resolve, with
        why: what audit mode (``--strict``) reports instead of staying silent. An argument
        with at least one resolved candidate is left to the proven rules."""
        analysed = self.application(call)
        if analysed is None:
            return
        application, arguments = analysed
        for candidates in arguments:
            unresolved = [c for c in candidates if not c.container]
            if unresolved and all(c.holdings is None for c in unresolved):
                yield application, unresolved[0], _why_unresolved(unresolved[0])

    def unresolved_gradient_uses(self, call: nodes.Call) -> Iterator[tuple[GradApplication, GradientUse, str]]:
        """``(application, use, reason)`` for each place the gradient of ``call`` flows to when
        ``call`` applies a grad whose differentiated arguments the analysis cannot name: the
        arguments are passed as ``*args``, or ``argnums`` is not a literal while an argument may be
        a Module. What audit mode (``--strict``) reports instead of staying silent (NNX403)."""
        application = self._application(call)
        if application is None or application.keeps_graph or application.has_aux is None:
            return
        starred = next((a for a in call.args if isinstance(a, nodes.Starred)), None)
        if starred is not None:
            reason = f"the arguments are passed as `{programs.clipped(starred.as_string(), 30)}`"
        elif application.argnums is None and not _argnums_call(application) and any(
                self._candidates(application, position, argument) for position, argument in enumerate(call.args)):
            reason = "its `argnums` is not a literal, and an argument may be a Module"
        else:
            return  # resolved: the proven rules decide
        if application.argnums is not None:
            paths = [application.gradient_path(position) for position in application.argnums]
        else:
            # The gradient is the result (an int argnums) or one element of it (a tuple): both.
            base = [1] if application.transform == "value_and_grad" else [0] if application.has_aux else []
            paths = [base] + [[*base, index] for index in range(_MAX_UNPACKED)]
        seen: set[int] = set()
        for path in paths:
            for use in self.flow.uses_at(call, path or []) if path is not None else ():
                if id(use.name) in seen or (application.argnums is None and path == paths[0] and _indexed(use.name)):
                    continue  # `grads[0]` on the whole result is the tuple's element, followed by its own path
                seen.add(id(use.name))
                yield application, use, reason

    def gradient_uses(self, call: nodes.Call, breaks: Callable[[Differentiated], bool] | None = None
                      ) -> Iterator[tuple[GradApplication, Differentiated, GradientUse]]:
        """``(application, argument, use)`` for each place the gradient of a differentiated
        argument of ``call`` flows to (:meth:`differentiated_at` with ``containers``, then
        :meth:`nnx_lint.analysis.variables.GradientFlow.uses`): what NNX402-NNX404 each inspect."""
        for application, differentiated in self.differentiated_at(call, breaks, containers=True):
            for use in self.flow.uses(application, differentiated.position):
                yield application, differentiated, use

    def use_facts(self, application: GradApplication, differentiated: Differentiated, use: GradientUse,
                  call: nodes.Call) -> dict[str, Any]:
        """The facts NNX403 and NNX404 report for a use of the gradient (after their own):
        the transform and how it was applied, the flow that led to the use, the argument."""
        return {
            "type_name": differentiated.class_name or "Module",
            "transform": application.transform,
            "argnums": list(application.argnums or ()),
            "has_aux": application.has_aux,
            "argnums_is_tuple": application.argnums_is_tuple,
            "gradient_via": use.via,
            "application_line": call.lineno,
            **differentiated.facts(),
            "pin": grad_pin_sites(self.context, application),
        }

    # -- which calls apply a grad-transformed function ------------------------------------
    def _analyse(self, call: nodes.Call) -> tuple[GradApplication, list[Differentiated]] | None:
        application = self._application(call)
        if application is None or application.keeps_graph or application.argnums is None:
            return None
        if any(isinstance(a, nodes.Starred) for a in call.args):
            return None
        found = []
        for position in application.argnums:
            if position < len(call.args):
                candidates = self._candidates(application, position, call.args[position])
                if candidates:
                    found.append(candidates)
        return application, found

    def _candidates(self, application: GradApplication, position: int, argument: nodes.NodeNG) -> list[Differentiated]:
        """What the argument may be: the one known class, or every class the callers of an
        unannotated parameter pass (evidence ``call site line N``). A State is not a Module."""
        if self.is_state_value(argument):
            return []
        single = self._differentiated(application, position, argument)
        context = self.context
        several = [_with_call(self._of_class(position, argument, candidate.ref, "call site %s" % where(
                       candidate.call, context.module, context.path, context.project.roots)), candidate.call)
                   for candidate in self.values.candidates(argument) if candidate.evidence == "call site"]
        several = [d for d in several if d is not None]
        if len(several) > 1 or (several and single is not None and single.evidence == "class"):
            found = several  # the class comes from the callers: name the call that passes it
        else:
            found = [single] if single is not None else []
        later = self.variables.holdings_stored_onto(argument)
        if later is None:
            return found
        return [_with_later_stores(d, position, argument, *later) for d in found or [None]]

    def _application(self, call: nodes.Call) -> GradApplication | None:
        key = id(call)
        if key not in self._applications:
            self._applications[key] = self._resolve_application(call)
        return self._applications[key]

    def _resolve_application(self, call: nodes.Call) -> GradApplication | None:
        """The grad application ``call`` is, through the one transform resolver: an inline
        ``nnx.grad(loss)(m)``, a name bound to one, a decorated function (also imported), a
        ``partial(nnx.grad, ...)`` factory, a stored ``self._grad_fn``; its argnums and has_aux
        as the resolver decodes them."""
        found = self.transforms.decoded(call.func)
        if found is None or found.name not in flax_table.GRAD_TRANSFORMS:
            return None
        if found.argnums is None:
            found = self._grad_on_another_branch(call, found) or self._literal_argnums_arm(found) or found
        function = found.applied_to
        if isinstance(function, nodes.FunctionDef) and function.decorators and found.node in function.decorators.nodes:
            loss = function  # @nnx.grad / @nnx.grad(argnums=...): the decorated function
        else:
            loss = self._function_of(found.function)
        return GradApplication(call, found.name, found.node, found.keeps_graph, found.argnums,
                               found.argnums_is_tuple, found.has_aux, loss)

    def _grad_on_another_branch(self, call: nodes.Call, found):
        """A grad with literal argnums that the callee may also hold, when the one the resolver
        chose has none (a ``DiffState``, NNX202's): the object-flow model keeps both arms of
        ``nnx.grad(f, argnums=nnx.DiffState(0, ...)) if lora else nnx.grad(f)`` as may flows, and
        the rules here ask about the arm that differentiates whole arguments."""
        for obj in sorted(object_model(self.context).objects(call.func), key=lambda o: o.line or 0):
            if obj.kind != "transformed" or obj.site is found.node or not isinstance(obj.site, nodes.Call):
                continue
            other = self.transforms.decoded(obj.site)
            if other is not None and other.name in flax_table.GRAD_TRANSFORMS and other.argnums is not None:
                return other
        return None

    def _literal_argnums_arm(self, found):
        """``found`` with the one literal int its ``argnums`` may hold besides a prefix filter
        (tunix's ``argnums=nnx.DiffState(0, nnx.LoRAParam) if lora else 0``): the object-flow
        model's constants of the expression; None when there is no single one."""
        transform = found.call
        argnums = transform.keywords.get("argnums") or (transform.args[1] if len(transform.args) > 1 else None)
        if argnums is None:
            return None
        held = object_model(self.context).objects(argnums)
        literal = {o.definition for o in held if o.kind == "constant" and type(o.definition) is int}
        if len(literal) != 1:
            return None
        return dataclasses.replace(found, argnums=(literal.pop(),), argnums_is_tuple=False)

    def _function_of(self, node: nodes.NodeNG | None) -> nodes.NodeNG | None:
        """The one loss function ``node`` denotes (a lambda, a def, a name bound to either,
        a ``partial``), through the transform resolver; None when it denotes several."""
        functions = self.transforms.functions_of(node)
        return functions[0] if len(functions) == 1 else None

    # -- what the differentiated argument is -----------------------------------------------
    def _differentiated(self, application: GradApplication, position: int, argument: nodes.NodeNG) -> Differentiated | None:
        """The argument's one known class (or the loss's annotation, or the heuristic that the
        loss calls it); the caller has ruled out a State."""
        classes = self.context.classes
        ref = classes.class_of(argument)
        evidence = "class"
        if ref is None:
            ref = self._loss_annotation(application.loss, position)
            evidence = "loss-annotation"
        if ref is not None:
            return self._of_class(position, argument, ref, evidence)
        if _is_called_in(application.loss, position):
            return Differentiated(position, argument, None, None, None, "called-in-loss", frozenset())
        if self._merged(argument):
            return Differentiated(position, argument, None, None, None, "merge", frozenset())
        return None

    def _merged(self, argument: nodes.NodeNG) -> bool:
        """Whether ``argument`` is (a name bound only to) ``nnx.merge(...)``: an NNX object of
        some class, never a State or an array."""
        values = bound_values(argument) if isinstance(argument, nodes.Name) else [argument]
        return bool(values) and all(isinstance(v, nodes.Call) and self.context.qualified_name(v.func) == flax_table.NNX_MERGE
                                    for v in values)

    def _of_class(self, position: int, argument: nodes.NodeNG, ref, evidence: str) -> Differentiated | None:
        """The argument as an instance of ``ref``, when that class is (or may be) a Module."""
        classes = self.context.classes
        if ref.qualified_name in flax_table.CONTAINER_MODULES:
            # What it holds comes from its construction (`nnx.Dict(a=nnx.List([...]), b=...)`).
            return Differentiated(position, argument, ref.short_name, ref.qualified_name,
                                  self.variables.holdings_of_value(argument), evidence, frozenset(), container=True)
        if ref.qualified_name in flax_table.STATE_CLASSES or ref.qualified_name.startswith(flax_table.NEVER_MODULE_PREFIXES):
            return None
        if ref.definition is not None:
            if not classes.info(ref.definition).is_nnx_module:
                return None
            holdings = self.variables.holdings(ref.definition)
            attributes = frozenset(_class_attributes(ref.definition, classes))
        else:
            holdings = self.variables.holdings_of_ref(ref, argument if isinstance(argument, nodes.Call) else None)
            if holdings is None and classes.class_kind(ref) != "module":
                return None  # an external class: not known to be a Module
            attributes = frozenset()  # (holdings None: a Module, contents unknown, as `model: nnx.Module`)
        return Differentiated(position, argument, ref.short_name, ref.qualified_name, holdings, evidence, attributes)

    def _loss_annotation(self, loss: nodes.NodeNG | None, position: int):
        if not isinstance(loss, nodes.FunctionDef):
            return None
        if position >= len(loss.args.args):
            return None
        return self.context.classes.annotated_class(parameter_annotation(loss, loss.args.args[position].name))

    # -- State values -----------------------------------------------------------------------
    def is_state_value(self, expression: nodes.NodeNG, on_some_path: bool = False) -> bool:
        """Whether ``expression`` is an ``nnx.State`` (:meth:`nnx_lint.analysis.values.ValueModel.is_state`)."""
        return self.values.is_state(expression, on_some_path=on_some_path)


#: How many elements of an unpacked gradient tuple an unresolved application is followed into.
_MAX_UNPACKED = 8

#: A differentiated argument the analysis could not name (audit mode's NNX403): no class, no holdings.
UNKNOWN_ARGUMENT_EVIDENCE = "unresolved"


def _indexed(use: nodes.NodeNG) -> bool:
    """Whether ``use`` is indexed by an integer (``grads[0]``): an element of a tuple result."""
    parent = use.parent
    return (isinstance(parent, nodes.Subscript) and parent.value is use and isinstance(parent.slice, nodes.Const)
            and isinstance(parent.slice.value, int))


def _argnums_call(application: GradApplication) -> bool:
    """Whether the transform's ``argnums`` holds a call (``nnx.DiffState(0, ...)``): a prefix filter,
    which the prefix-filter rules report (Tree Mode rejects it before any gradient is used)."""
    transform = application.transform_node
    keywords = transform.keywords or [] if isinstance(transform, nodes.Call) else []
    argnums = next((keyword.value for keyword in keywords if keyword.arg == "argnums"), None)
    return argnums is not None and any(True for _ in argnums.nodes_of_class(nodes.Call))


def unknown_argument(call: nodes.Call) -> Differentiated:
    """The differentiated argument of ``call`` when the analysis cannot say which it is."""
    return Differentiated(-1, call, None, None, None, UNKNOWN_ARGUMENT_EVIDENCE, frozenset())


def grad_analysis(context) -> _Analysis:
    """The file's grad analysis, shared by the NNX4xx rules (one per FileContext)."""
    return context.service(_Analysis)


def _is_called_in(loss: nodes.NodeNG | None, position: int) -> bool:
    """Whether the loss function calls its parameter ``position`` (``m(x)``): a Module, not a State."""
    if not isinstance(loss, (nodes.FunctionDef, nodes.Lambda)):
        return False
    arguments = loss.args.args or []
    if position >= len(arguments):
        return False
    parameter = arguments[position]
    for call in loss.nodes_of_class(nodes.Call):
        if isinstance(call.func, nodes.Name) and call.func.name == parameter.name:
            _scope, assignments = lookup(call.func)
            if parameter in assignments:
                return True
    return False


def _class_attributes(classdef: nodes.ClassDef, classes, depth: int = 0) -> set[str]:
    names = set(classdef.locals)
    if depth < 6:
        for base in classes.info(classdef).bases:
            if base.definition is not None:
                names |= _class_attributes(base.definition, classes, depth + 1)
    return names


def _why_unresolved(differentiated: Differentiated) -> str:
    """Why what ``differentiated`` holds is unknown, for an unproven finding's message."""
    if differentiated.evidence == "merge":
        return "it is rebuilt by `nnx.merge` from a state whose class is unknown"
    if differentiated.class_name is None:
        return "the loss calls it, so it is a Module, but nothing in the project says which class"
    if differentiated.qualified_name in flax_table.NNX_MODULE_BASES:
        return f"it is annotated only as `nnx.{differentiated.class_name}`, and no call in the project passes a class"
    return f"its class `{differentiated.class_name}` is defined where the analysis cannot read it"


def holding_facts(holdings: Holdings, categories) -> list[dict]:
    """The holdings of ``categories`` as facts (at most twelve)."""
    return [h.as_fact() for h in holdings.of(categories)][:12]


def describe_holdings(holdings: Holdings, categories) -> str:
    """The first four holdings of ``categories`` as ``path: Type (dtype)``, for a message."""
    parts = []
    for holding in holdings.of(categories)[:4]:
        dtype = {"integer": " (int)", "float": " (float)", "unknown-dtype": " (dtype unknown)"}.get(holding.category, "")
        parts.append(f"{holding.path or '<self>'}: {holding.variable_type}{dtype}")
    more = len(holdings.of(categories)) - 4
    return ", ".join(parts) + (f", +{more} more" if more > 0 else "")


def grad_pin_sites(context, application: GradApplication) -> list[dict[str, Any]]:
    """Where a pin fix keeps graph mode: the grad transform applied here."""
    return pin_sites_in(context, (application.transform_node, application.transform))


def _with_call(differentiated: Differentiated | None, call: nodes.Call | None) -> Differentiated | None:
    return dataclasses.replace(differentiated, call=call) if differentiated is not None else None


def _with_later_stores(differentiated: Differentiated | None, position: int, argument: nodes.NodeNG,
                       stored: Holdings, stores: list) -> Differentiated:
    """``differentiated`` also holding what was stored onto it after its construction; for
    an argument of unknown class, what is known of it is only those stores (the rest is unknown)."""
    holdings = Holdings()
    if differentiated is not None and differentiated.holdings is not None:
        holdings.extend(differentiated.holdings, "")
    else:
        holdings.unknown.append("")
    holdings.extend(stored, "")
    if differentiated is None:
        return Differentiated(position, argument, None, None, holdings, "stored later", frozenset(),
                              later_stores=tuple(stores))
    return dataclasses.replace(differentiated, holdings=holdings, later_stores=tuple(stores))
