"""NUTS backends side by side: BlackJAX (``mcmc.nuts``) vs NumPyro (``mcmc.nuts_numpyro``).

Same model (the narrow network of chapter 1, depth 4, 20 observations), same
number of chains, warm-up and draws. Two figures per backend, measured in one
run on the same machine:

- sampling throughput: NUTS iterations per second after warm-up, from the
  difference of two runs that differ only in the number of draws (compilation
  and warm-up cancel out);
- end-to-end wall time of one call as a chapter makes it (compilation included).

Run: ``python benchmarks/nuts_backends.py`` (prints the ratios BlackJAX/NumPyro).
"""

import argparse
import time

import jax
import jax.numpy as jnp

from bnn_posteriors.data import loaders as data
from bnn_posteriors.inference import mcmc
from bnn_posteriors.models import numpyro_models as models

BACKENDS = {"blackjax": mcmc.nuts, "numpyro": mcmc.nuts_numpyro}


def wall(fn, key, kwargs, **budget):
    t0 = time.perf_counter()
    samples, _ = fn(key, models.narrow_network, kwargs, **budget)
    jax.block_until_ready(samples)
    return time.perf_counter() - t0


def main(depth=4, n=20, chains=4, warmup=500, draws=(1000, 5000), repeats=3):
    x, y = data.load_dataset("synthetic_regression_1x")
    rows = jax.random.choice(jax.random.PRNGKey(0), y.shape[0], (n,), replace=False)
    kwargs = dict(x=jnp.asarray(x[rows, 0]), y=jnp.asarray(y[rows]), depth=depth, sigma=0.5)
    print(f"narrow network L={depth}, n={n}, {chains} chains, {warmup} warm-up")
    results = {}
    for name, fn in BACKENDS.items():
        budget = dict(num_chains=chains, num_warmup=warmup)
        first = wall(fn, jax.random.PRNGKey(1), kwargs, num_samples=draws[0], **budget)
        times = {
            d: min(
                wall(fn, jax.random.PRNGKey(2 + r), kwargs, num_samples=d, **budget)
                for r in range(repeats)
            )
            for d in draws
        }
        rate = chains * (draws[1] - draws[0]) / (times[draws[1]] - times[draws[0]])
        results[name] = {"rate": rate, "first": first}
        print(f"{name:9s} {rate:10.0f} iterations/s sampling, first call {first:6.1f} s")
    b, n_ = results["blackjax"], results["numpyro"]
    print(
        f"ratio blackjax/numpyro: throughput {b['rate'] / n_['rate']:.2f}x, "
        f"first-call time {b['first'] / n_['first']:.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=4, help="hidden layers of the network")
    parser.add_argument("--chains", type=int, default=4, help="chains per backend")
    parser.add_argument("--repeats", type=int, default=3, help="timings per figure (best kept)")
    args = parser.parse_args()
    main(depth=args.depth, chains=args.chains, repeats=args.repeats)
