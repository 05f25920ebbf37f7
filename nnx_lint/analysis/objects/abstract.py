"""Abstract objects: one per creation site (and call-site context), the values of the object-flow model."""
from __future__ import annotations

import zlib

from dataclasses import dataclass

from astroid import nodes

#: What an abstract object is, as the rules ask it.
MODULE = "module"            #: an instance of an NNX Module / Pytree class (project or flax layer)
PLAIN = "plain"              #: an instance of a plain Python class (static to NNX: never a tree node)
DATACLASS = "dataclass"      #: an instance of a project dataclass / struct (a pytree when registered)
RNGS = "rngs"                #: an ``nnx.Rngs``
STREAM = "stream"            #: a stream of an ``Rngs`` (``rngs.dropout``): shares its owner's state
OPTIMIZER = "optimizer"      #: an ``nnx.Optimizer`` / ``nnx.ModelAndOptimizer``
CONTAINER = "container"      #: list, tuple, dict, set, ``nnx.List`` / ``nnx.Dict`` / ``nnx.Sequential``
FUNCTION = "function"        #: a function or lambda of the project
CLASS = "class"              #: a class object of the project
BOUND = "bound"              #: a method bound to its receiver (``model.step``)
TRANSFORMED = "transformed"  #: ``nnx.jit(f)`` and the other transforms: calling it calls ``f``
PARTIAL = "partial"          #: ``functools.partial(f, *args)``
VARIABLE = "variable"        #: an ``nnx.Variable`` (``nnx.Param(...)``, ``nnx.BatchStat(...)``)
CONSTANT = "constant"        #: a literal ``None`` / bool / number / string
LIBRARY = "library"          #: any other library value (an array, a flax layer's method, ...)
OUTSIDE = "outside"          #: a value from outside the project or the analysed calls (unproven)

#: Objects whose fields are children in NNX's tree (a path runs through them).
TREE_NODES = frozenset({MODULE, DATACLASS, OPTIMIZER, CONTAINER})


@dataclass(frozen=True, eq=False)
class AbstractObject:
    """The objects created at one site, in one call-site context.

    ``site`` is the node that creates it (a call, a literal, a ``def``); ``context`` the call
    that entered the function holding the site (one level: a factory called twice makes two
    objects). ``proven`` is False for objects the model did not see created (a parameter no
    analysed caller reaches, a library result): their class, if any, comes from an annotation.
    """

    kind: str
    site: nodes.NodeNG | None
    context: object = None
    #: The class's qualified name (``flax.nnx.Rngs``, ``pkg.models.Block``), if known.
    class_name: str | None = None
    #: The project class, function or constant value the object is (kind-dependent).
    definition: object = None
    proven: bool = True
    #: The object this one is a fresh copy of (a loop's carry in Tree Mode), or the owner of a stream.
    copy_of: AbstractObject | None = None
    #: For bound methods and partials: the receiver / the callable they wrap.
    target: AbstractObject | None = None
    #: For partials: the number of positional arguments prepended (they are fields ``[0]`` ...).
    prepended: int = 0

    def __post_init__(self) -> None:
        # Positions, never ids or string hashes (both change from run to run): the solve iterates
        # sets of objects and adds new ones in ``order_text`` order, so past the context bound the
        # same calls get a context of their own in every run. Computed once: hashed on every set
        # operation of the solve.
        site, context = order_text(self.site), order_text(self.context)
        definition = order_text(self.definition)
        held = _constant_text(self.definition) if self.kind == CONSTANT else definition
        object.__setattr__(self, "_hash", stable_hash("|".join((
            self.kind, site, context, held, order_text(self.target), order_text(self.copy_of)))))
        object.__setattr__(self, "order_text", "|".join((
            self.kind, site, context, definition, order_text(self.target), order_text(self.copy_of),
            str(self.prepended))))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractObject) and (self.kind, self.site, self.context, self.definition,
                                                     self.target, self.copy_of, self.class_name) \
            == (other.kind, other.site, other.context, other.definition, other.target, other.copy_of,
                other.class_name)

    @property
    def line(self) -> int | None:
        """The creation site's line (None for objects without a site)."""
        return getattr(self.site, "lineno", None)

    @property
    def is_tree_node(self) -> bool:
        """Whether NNX walks into this object's fields (a Module, pytree dataclass, optimizer or container)."""
        return self.kind in TREE_NODES

    def describe(self) -> str:
        """A short text for messages and tests: ``Rngs@12``, ``Block@30``."""
        name = (self.class_name or self.kind).rpartition(".")[2]
        if self.kind == CONSTANT:
            return repr(self.definition)
        return f"{name}@{self.line}" if self.line is not None else name


def constant(value: object) -> AbstractObject:
    """The one object for a literal value (all ``False`` literals are one object)."""
    return AbstractObject(CONSTANT, None, definition=value, class_name=type(value).__name__)


def is_falsy_constant(obj: AbstractObject) -> bool:
    """A literal that is false (``None``, ``False``, ``0``, ``""``)."""
    return obj.kind == CONSTANT and not obj.definition


def stable_hash(text: str) -> int:
    """A hash of ``text`` that is the same in every run. Python's ``hash`` of a string follows
    ``PYTHONHASHSEED``, and the order in which the solve walks its sets follows the hashes: with
    it, the step count of one file changed from run to run, so a file near the step bound could
    get NNX004 in one run and not in the next."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def _constant_text(value: object) -> str:
    """``value``'s part of a constant object's hash, equal for equal constants (``1``, ``1.0`` and
    ``True`` are equal, and their numeric hashes are equal and never seeded)."""
    if isinstance(value, (bool, int, float, complex)):
        return f"#{hash(value)}"
    return repr(value)


def order_text(value: object) -> str:
    """A text of ``value`` that sorts the same in every run (positions, never ids or hashes)."""
    if value is None:
        return ""
    if isinstance(value, (str, int, float, bool)):
        return repr(value)
    text = getattr(value, "order_text", None)
    if text is not None:
        return f"({text})"
    if isinstance(value, nodes.NodeNG):
        return f"{value.__class__.__name__}:{value.lineno}:{value.col_offset}:{getattr(value.root(), 'name', '')}"
    return value.__class__.__name__
