"""MILE benchmarks, each measured side by side in one run on the same machine.

- ``grad``: MCLMC sampling throughput x gradient evaluations per step (2 for the
  ``isokinetic_mclachlan`` integrator) against the raw rate of the jitted, chain-vectorised
  gradient of the same log density (10 chains, airfoil, 3x16). Goal: ratio >= 0.85.
- ``devices``: 10 chains sharded over all devices vs the same chains vmapped on one device
  (run with ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` on a CPU). Goal >= 1.3x.
- ``nuts``: MILE vs NUTS-BDE (BlackJAX window adaptation + NUTS) from the same 10 warm
  starts on airfoil: wall time and test LPPD of each.
- ``full``: BDE(10) at MILE's settings (50 000 tuning, 10 000 sampling steps, thinning 10)
  on airfoil, end to end with warm starts. Goal <= 5 min.
- ``flops``: the physical limit. The FLOPs of one gradient of the log density (XLA's cost
  analysis) times the measured gradient rate, against the machine's peak as measured by a
  large jitted float32 matmul in the same run; and MILE's gradient rate against the raw one.
  Use ``--dataset bikesharing`` for [SAP]'s largest data set (random starts: a rate does
  not depend on where the chains are).

Throughputs come from the difference of two compiled runs that differ only in the number of
sampling steps, so compilation and tuning cancel out. Run:
``XLA_FLAGS=--xla_force_host_platform_device_count=2 python benchmarks/mile.py grad devices``
(default: ``grad devices nuts``; ``full`` on request). Progress goes to stderr.
"""

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import cost, metrics
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.models import nets

GRADS_PER_STEP = 2  # isokinetic McLachlan: two force evaluations per step (FSAL)


DATASET = "airfoil"  # set by --dataset


def setup(n_chains=10, hidden=(16, 16, 16), seed=0, warm=True):
    """The split, the widths and 10 chain positions: DE warm starts, or Glorot draws."""
    split = data.load_split(DATASET, 1)
    widths = (split.x_train.shape[1], *hidden, 1)
    key = jax.random.PRNGKey(seed)
    if warm:
        params, _ = ensembles.train_ensemble(
            key,
            split.x_train,
            split.y_train,
            split.x_val,
            split.y_val,
            widths=widths,
            n_members=n_chains,
        )
    else:
        draws = [nets.mlp_init(k, widths, scheme="glorot") for k in jax.random.split(key, n_chains)]
        params = jax.tree.map(lambda *a: jnp.stack(a), *draws)
    return split, widths, mile.warm_start_positions(params)


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    jax.block_until_ready(jax.tree.leaves(out))
    return time.perf_counter() - t0, out


def sampling_rate(split, widths, starts, devices=None, steps=(500, 2500), tuning=100):
    """Chain-steps per second of the sampling phase (compiled; tuning cancels)."""
    n = starts["log_sigma"].shape[0]
    times = {}
    for s in steps:
        run = lambda s=s: mile.run_bde(  # noqa: E731
            jax.random.PRNGKey(1),
            split.x_train,
            split.y_train,
            starts,
            widths=widths,
            tuning_steps=tuning,
            sampling_steps=s,
            thinning=10,
            devices=devices,
        )
        timed(run)  # compile
        times[s] = min(timed(run)[0] for _ in range(2))
    return n * (steps[1] - steps[0]) / (times[steps[1]] - times[steps[0]])


def gradient_rate(split, widths, starts, n_evals=(1000, 5000)):
    """Gradient evaluations per second of the same log density, vmapped over chains."""
    x, y = jnp.asarray(split.x_train), jnp.asarray(split.y_train)
    z0 = jax.vmap(lambda p: jax.flatten_util.ravel_pytree(p)[0])(starts)
    logdensity = mile._flat_logdensity(x, y, 1.0, widths, "relu")
    grad = jax.vmap(jax.grad(logdensity))

    def many(z, k):
        def body(z, _):
            return z + 1e-12 * grad(z), None  # data dependence: no hoisting

        return jax.lax.scan(body, z, None, length=k)[0]

    times = {}
    for k in n_evals:
        f = jax.jit(lambda z, k=k: many(z, k))
        timed(lambda f=f: f(z0))
        times[k] = min(timed(lambda f=f: f(z0))[0] for _ in range(2))
    return z0.shape[0] * (n_evals[1] - n_evals[0]) / (times[n_evals[1]] - times[n_evals[0]])


def bench_grad():
    split, widths, starts = setup()
    rate = sampling_rate(split, widths, starts, devices=jax.devices()[:1])
    grads = gradient_rate(split, widths, starts)
    print(
        f"[grad] MCLMC {rate:.0f} chain-steps/s x {GRADS_PER_STEP} = "
        f"{rate * GRADS_PER_STEP:.0f} grads/s; raw jitted gradient {grads:.0f} grads/s; "
        f"ratio {rate * GRADS_PER_STEP / grads:.2f} (goal >= 0.85)"
    )


def bench_devices():
    split, widths, starts = setup()
    one = sampling_rate(split, widths, starts, devices=jax.devices()[:1])
    every = sampling_rate(split, widths, starts)
    print(
        f"[devices] {jax.device_count()} devices {every:.0f} chain-steps/s, one device "
        f"{one:.0f} chain-steps/s; speed-up {every / one:.2f}x (goal >= 1.3x)"
    )


def bench_nuts(tuning=5000, sampling=2000, warmup=500, draws=200, doublings=8):
    split, widths, starts = setup()
    t_m, out = timed(
        lambda: mile.run_bde(
            jax.random.PRNGKey(2),
            split.x_train,
            split.y_train,
            starts,
            widths=widths,
            tuning_steps=tuning,
            sampling_steps=sampling,
            thinning=10,
        )
    )
    m, s = mile.predict(out["samples"], split.x_test)
    lppd_m = float(metrics.lppd(split.y_test, m, s[..., None]))
    t_n, (samples, _) = timed(
        lambda: mile.run_nuts_bde(
            jax.random.PRNGKey(3),
            split.x_train,
            split.y_train,
            starts,
            widths=widths,
            num_warmup=warmup,
            num_samples=draws,
            max_num_doublings=doublings,
        )
    )
    m, s = mile.predict(samples, split.x_test)
    lppd_n = float(metrics.lppd(split.y_test, m, s[..., None]))
    print(
        f"[nuts] MILE ({tuning}+{sampling} steps) {t_m:.0f} s, test LPPD {lppd_m:.3f}; "
        f"NUTS ({warmup}+{draws}, depth <= {doublings}) {t_n:.0f} s, test LPPD {lppd_n:.3f}; "
        f"time ratio NUTS/MILE {t_n / t_m:.2f}"
    )


def bench_full():
    t0 = time.perf_counter()
    split, widths, starts = setup()
    t_de = time.perf_counter() - t0
    t_s, out = timed(
        lambda: mile.run_bde(
            jax.random.PRNGKey(4),
            split.x_train,
            split.y_train,
            starts,
            widths=widths,
            tuning_steps=50_000,
            sampling_steps=10_000,
            thinning=10,
            progress=True,
        )
    )
    m, s = mile.predict(out["samples"], split.x_test)
    lppd = float(metrics.lppd(split.y_test, m, s[..., None]))
    print(
        f"[full] BDE(10) airfoil: warm starts {t_de:.0f} s + MILE {t_s:.0f} s = "
        f"{t_de + t_s:.0f} s (goal <= 300 s); test LPPD {lppd:.3f} (paper 0.665 +- 0.062)"
    )


def matmul_peak(n=2048, repeats=5):
    """The machine's float32 FLOP rate on a large jitted matmul: 2 n³ FLOPs per product."""
    a = jax.random.normal(jax.random.PRNGKey(0), (n, n))
    f = jax.jit(lambda a: a @ a)
    timed(lambda: f(a))
    return 2 * n**3 / min(timed(lambda: f(a))[0] for _ in range(repeats))


def bench_flops():
    split, widths, starts = setup(warm=False)
    x, y = jnp.asarray(split.x_train), jnp.asarray(split.y_train)
    logdensity = mile._flat_logdensity(x, y, 1.0, widths, "relu")
    z = jax.flatten_util.ravel_pytree(jax.tree.map(lambda a: a[0], starts))[0]
    flops = cost.xla_flops(jax.grad(logdensity), z)
    grads = gradient_rate(split, widths, starts)
    rate = sampling_rate(split, widths, starts, devices=jax.devices()[:1])
    peak = matmul_peak()
    achieved = grads * flops
    print(
        f"[flops] {DATASET} (n = {x.shape[0]}, widths {widths}): {flops:.3g} FLOPs per "
        f"gradient; raw jitted gradient {grads:.0f} grads/s = {achieved / 1e9:.2f} GFLOP/s; "
        f"matmul peak {peak / 1e9:.1f} GFLOP/s; gradient / peak {achieved / peak:.2f}; "
        f"MILE {rate * GRADS_PER_STEP:.0f} grads/s, MILE / raw gradient "
        f"{rate * GRADS_PER_STEP / grads:.2f}"
    )


BENCHES = {
    "flops": bench_flops,
    "grad": bench_grad,
    "devices": bench_devices,
    "nuts": bench_nuts,
    "full": bench_full,
}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", default=["grad", "devices", "nuts"], choices=BENCHES)
    parser.add_argument("--dataset", default=DATASET, help="UCI data set (default: airfoil)")
    args = parser.parse_args()
    DATASET = args.dataset
    print(f"devices: {jax.devices()}; numpy {np.__version__}, jax {jax.__version__}")
    for name in args.which:
        BENCHES[name]()
