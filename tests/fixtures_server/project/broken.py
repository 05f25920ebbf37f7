from flax import nnx

def f(:
    return nnx.jit(f)
