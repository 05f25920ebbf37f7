"""No nnx here: never analysed."""
x = 1
