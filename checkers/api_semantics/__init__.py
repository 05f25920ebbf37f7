"""NNX7xx: other API semantics that change in Tree Mode — catalogue G2, H1-H8.

In-place RNG splitting, keyword arguments into transformed functions, objects that are
not pytrees, Python scalars and dtypes in data containers, graph-only APIs, and when the mode is
fixed (decoration time, per thread).
"""
