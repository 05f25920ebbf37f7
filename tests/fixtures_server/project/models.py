"""Models of the fixture project: one ties its embeddings."""
from flax import nnx


class TiedLM(nnx.Module):
    def __init__(self, vocab, dim, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, dim, rngs=rngs)
        self.head = nnx.Linear(dim, vocab, use_bias=False, rngs=rngs)
        self.head.kernel = self.embed.embedding  # tie input and output embeddings

    def __call__(self, tokens):
        return self.head(self.embed(tokens))


class Counter(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.linear = nnx.Linear(2, 2, rngs=rngs)
        self.steps = 0
