"""Cost of calling a small model through ``tree_runtime.jit`` vs flax's
Tree Mode ``nnx.jit``, measured in the same run.  Prints ratios (runtime/flax);
no absolute assertions.

    python bench/runtime_jit_ratio.py [--calls 2000] [--traces 20]

* steady call: a jitted train-ish step (forward + BatchNorm stat update) whose
  trace is cached; measures the Python wrapper (alias check, flatten, write-back).
* first call: a fresh ``jit`` object called once (trace + compile + run).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import jax
import jax.numpy as jnp

warnings.filterwarnings("ignore", category=DeprecationWarning)


def build(nnx):
    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(16, 32, rngs=rngs)
            self.bn = nnx.BatchNorm(32, rngs=rngs)
            self.l2 = nnx.Linear(32, 4, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.bn(self.l1(x))))

    return MLP(nnx.Rngs(0)), jnp.ones((8, 16))


def step_fn(m, x):
    return m(x).sum()


def steady_once(f, model, x, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        out = f(model, x)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def first_call_once(nnx, model, x, i: int) -> float:
    # A new function object each time defeats jax's trace cache.
    f = nnx.jit(lambda m, x, i=i: step_fn(m, x) + i)
    start = time.perf_counter()
    jax.block_until_ready(f(model, x))
    return time.perf_counter() - start


def measure(impls: dict, calls: int, traces: int) -> dict:
    """Interleave the implementations so machine load affects both alike;
    keep the best steady time and the median first-call time."""
    setup = {}
    for name, nnx in impls.items():
        model, x = build(nnx)
        f = nnx.jit(step_fn)
        jax.block_until_ready(f(model, x))
        setup[name] = (nnx, f, model, x)
    steady = {name: [] for name in impls}
    first = {name: [] for name in impls}
    for rep in range(max(5, traces)):
        for name, (nnx, f, model, x) in setup.items():
            if rep < 5:
                steady[name].append(steady_once(f, model, x, calls))
            if rep < traces:
                first[name].append(first_call_once(nnx, model, x, rep))
    return {name: (min(steady[name]), statistics.median(first[name])) for name in impls}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--traces", type=int, default=20)
    args = parser.parse_args()

    import tree_runtime
    from flax import nnx as flax_nnx

    with flax_nnx.set_graph_mode(False), flax_nnx.set_graph_updates(False):
        results = measure({"tree_runtime": tree_runtime, "flax": flax_nnx}, args.calls, args.traces)
    (rt_call, rt_first), (fx_call, fx_first) = results["tree_runtime"], results["flax"]
    print(f"jax {jax.__version__}, backend {jax.default_backend()}")
    print(f"steady jitted call : tree_runtime {rt_call * 1e6:8.1f} us   flax {fx_call * 1e6:8.1f} us   ratio {rt_call / fx_call:.2f}")
    print(f"first call (trace) : tree_runtime {rt_first * 1e3:8.2f} ms   flax {fx_first * 1e3:8.2f} ms   ratio {rt_first / fx_first:.2f}")


if __name__ == "__main__":
    main()
