"""NNX0xx: the file itself could not be analysed (reported by the engine, never a crash),
and the off-by-default check of the file's ``# noqa`` comments (NNX009)."""
