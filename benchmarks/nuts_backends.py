"""NUTS backends side by side: BlackJAX vs NumPyro on the book's narrow network.

Prints iterations per second (warm-up + sampling, all chains, compile excluded
by timing a second run with a new key) and their ratio.
Run: ``python benchmarks/nuts_backends.py``.
"""

import time

import jax
import numpy as np

from bnn_posteriors import data, models
from bnn_posteriors.inference import mcmc


def timed(fn, key):
    jax.block_until_ready(fn(jax.random.PRNGKey(0))[0])  # compile and first run
    t0 = time.perf_counter()
    samples, _ = fn(key)
    jax.block_until_ready(samples)
    return time.perf_counter() - t0, samples


def main(depth=4, n=20, chains=4, warmup=1000, draws=1000, repeats=3):
    x, y = data.load_dataset("synthetic_regression_1x")
    idx = np.random.default_rng(0).choice(len(y), n, replace=False)
    kw = dict(x=x[idx, 0], y=y[idx], depth=depth, sigma=1.0, tau=1.0)
    budget = dict(num_chains=chains, num_warmup=warmup, num_samples=draws)
    backends = {
        "blackjax": lambda k: mcmc.nuts(k, models.narrow_network, kw, **budget),
        "numpyro": lambda k: mcmc.nuts_numpyro(k, models.narrow_network, kw, **budget),
    }
    iters = chains * (warmup + draws)
    rate = {}
    for name, fn in backends.items():
        times = [timed(fn, jax.random.PRNGKey(r + 1))[0] for r in range(repeats)]
        rate[name] = iters / min(times)
        print(f"{name:9s} {rate[name]:10.0f} iterations/s (best of {repeats}, {iters} iterations)")
    print(f"ratio blackjax/numpyro: {rate['blackjax'] / rate['numpyro']:.2f}")


if __name__ == "__main__":
    main()
