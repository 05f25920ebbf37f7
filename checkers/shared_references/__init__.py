"""NNX1xx: shared references and aliasing — catalogue patterns A1-A9.

Tree Mode forbids any Variable being reachable twice: every NNX transform checks its
inputs and outputs for Variable aliasing, and every graph API checks the object it
walks. Rules here see sharing statically, from the class model (``context.classes``):
which attributes a class stores during construction and what object each one is.

Opt-in policy (documented on every rule):

* **Class-level rules** (NNX101 aliased attributes, NNX102 a container holding one object
  twice, NNX105 one ``Rngs`` stored twice) report the *class*, at the second store: the
  class is what needs fixing, and the problem follows every instance into every NNX
  transform and graph API, in any file. They stay silent when the store sits in a scope
  that keeps graph mode (``set_graph_mode(True)`` + ``set_graph_updates(True)`` at module
  level, or around the code), or when this file uses instances of the class with NNX
  transforms / graph APIs / ``nnx.Optimizer`` / ``.eval()`` / ``.train()`` and *every* such
  use keeps graph mode (``graph=True``, ``nnx.compat.*``): the author has opted the class in;
  or every use already chooses Tree Mode (``graph=False``): that code raises today, so the
  flip changes nothing.
* **Call-site rules** (NNX103 duplicate arguments, NNX104 returned inputs, NNX106 a
  transformed constructor storing its argument, NNX107 an argument holding another
  argument, NNX108 tied models in ``fori_loop``/``while_loop``) respect the transform's own
  opt-in (flags, ``nnx.compat``, scope), like every other family. For aliasing the flag
  that matters is ``graph``: graph mode takes shared inputs and duplicate outputs also with
  ``graph_updates=False``, so ``graph_updates=False`` alone is no Tree Mode choice here
  (it is for returned inputs, which it rejects today already).

* **Store-site rules** (NNX112: one stateful object stored on every Module of a model by
  ``set_attributes`` or a loop over a walk) report the store; they stay silent in a scope
  that keeps graph mode and under a walk that keeps it (``graph=True``).

Where the type or identity of an object is not known statically, the rules stay silent.
"""
