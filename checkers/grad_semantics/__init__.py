"""NNX4xx: ``nnx.grad`` / ``nnx.value_and_grad`` semantics — catalogue D1, D2.

Graph mode differentiates only the ``Param``s of the differentiated argument (an integer
``argnums`` means ``DiffState(i, nnx.Param)``) and returns an ``nnx.State``. Tree Mode
differentiates the whole argument and returns the argument's own type. The rules look
at each *application* of a grad-transformed function (``nnx.grad(loss)(model)``,
``grad_fn = nnx.value_and_grad(loss, has_aux=True)`` ... ``grad_fn(model, batch)``, a
function decorated with ``@nnx.grad``), decide what the differentiated argument is (its
class, from constructors and annotations, else the loss function's parameter annotation;
the Variables that class holds come from :mod:`nnx_lint.analysis.variables`), and follow the
gradient value to where it is consumed. Calls that keep graph mode (``nnx.compat.grad``,
``graph=True, graph_updates=True``, a graph-mode scope) are silent; ``DiffState``
``argnums`` are NNX202's.
"""
