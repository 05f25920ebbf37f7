"""NNX6xx: the ``transform_metadata=`` keyword of vmap/scan/pmap — catalogue F1."""
