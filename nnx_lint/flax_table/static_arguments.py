"""Arguments of flax.nnx methods that must be concrete Python values, as data: part of the flax table.

A method of an ``nnx.Rngs`` / ``nnx.RngStream`` that draws random numbers forwards its
arguments to the ``jax.random`` function of the same name, whose ``shape`` must be a tuple of
concrete ints. Some layers read a call flag as a Python ``bool`` (``if deterministic: return``).
Both are fine when the caller passes Python values, and raise when something has turned those
values into tracers first (Tree Mode's ``nnx.tabulate`` splits every wrapped method's arguments
into leaves; :data:`TABULATE_OPTIONS` tells its own keywords from the method's).
``tests/test_flax_table.py`` checks these tables against the installed flax and jax.
"""
from __future__ import annotations

#: Random methods of ``nnx.Rngs`` / ``nnx.RngStream`` (flax 0.12.8) -> the position of ``shape``
#: among the method's arguments (the ``jax.random`` signature without its ``key``).
RNG_SHAPE_POSITIONS: dict[str, int] = {
    "ball": 2, "bernoulli": 1, "beta": 2, "binomial": 2, "bits": 0, "categorical": 2, "cauchy": 0,
    "chisquare": 1, "choice": 1, "dirichlet": 1, "double_sided_maxwell": 2, "exponential": 0, "f": 2,
    "gamma": 1, "generalized_normal": 1, "geometric": 1, "gumbel": 0, "laplace": 0, "loggamma": 1,
    "logistic": 0, "lognormal": 1, "maxwell": 0, "multinomial": 2, "multivariate_normal": 2, "normal": 0,
    "orthogonal": 1, "pareto": 1, "poisson": 1, "rademacher": 0, "randint": 0, "rayleigh": 1, "t": 1,
    "triangular": 3, "truncated_normal": 2, "uniform": 0, "wald": 1, "weibull_min": 2,
}

#: Layers whose ``__call__`` tests a keyword as a Python ``bool`` (flax 0.12.8: ``Dropout``
#: returns early ``if ... or deterministic``, ``BatchNorm`` picks its statistics ``if
#: use_running_average``). Measured: a traced value there raises ``TracerBoolConversionError``.
LAYER_BOOL_FLAGS: dict[str, tuple[str, ...]] = {
    "Dropout": ("deterministic",),
    "BatchNorm": ("use_running_average",),
}

#: ``nnx.tabulate``'s own keywords (flax 0.12.8); every other argument goes to the tabulated method.
TABULATE_OPTIONS: frozenset[str] = frozenset({
    "depth", "method", "row_filter", "table_kwargs", "column_kwargs", "console_kwargs", "compute_flops",
    "compute_vjp_flops",
})
