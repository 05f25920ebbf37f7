"""NNX9xx: advisory, off by default — code that still opts into graph mode (catalogue G1)."""
