"""NNX2xx: prefix filters (``StateAxes``, ``DiffState``, ``StateSharding``) — catalogue B1-B3.

Tree Mode transforms reject prefix filters when the transform is *created* (decoration
time, often import time). A filter is reported where it reaches a transform's prefix
argument (``in_axes``, ``argnums``, ``in_shardings``, ...), or, when it reaches none in
this file, where it is constructed. Transforms that keep graph mode (``graph=True,
graph_updates=True``, ``nnx.compat.*``, a graph-mode scope) stay silent.
"""
