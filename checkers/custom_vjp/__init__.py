"""NNX5xx: ``nnx.custom_vjp`` semantics — catalogue E1-E4.

In graph mode (``graph=True, graph_updates=True``) the backward function of an
``nnx.custom_vjp`` receives ``g == (input_updates_g, out_g)`` and returns ``nnx.State``
tangents for Module inputs. In Tree Mode the protocol is ``jax.custom_vjp``'s: ``g`` is
the output cotangent and the tangents have the inputs' own types; Variable updates
inside the function are disallowed by the FLIP (flax 0.12.8 drops their cotangents
unless the bwd declares an ``updates_g`` keyword).

A rule finds each registration ``f.defvjp(fwd, bwd)`` whose ``f`` is an
``nnx.custom_vjp`` function of this file (decorator, decorator factory,
``functools.partial``, or ``f = nnx.custom_vjp(fn)``) and whose ``fwd`` / ``bwd`` are
functions of this file. Graph-mode opt-ins (``nnx.compat.custom_vjp``, both flags True,
a graph-mode scope) and code that branches on the protocol (``isinstance(g, tuple)``,
``nnx.set_graph_updates.current_value()``) are silent.
"""
