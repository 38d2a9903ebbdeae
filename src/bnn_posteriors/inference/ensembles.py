"""Deep ensembles: many MLPs trained at once with AdamW and early stopping.

The warm starts of MILE ([SAP] §3.2, App. D.1; Sommer et al. 2025): ``n_members``
networks, each from its own random initialisation and its own minibatch order, trained
by AdamW on the Gaussian negative log-likelihood with σ fixed (σ = 1 for standardised
targets), or, for the heteroscedastic model of
:func:`bnn_posteriors.models.numpyro_models.mlp_regression`
(two outputs, the authors' ``regr`` task), with σ(x) = clip(exp f_1(x), 1e-6, 1e6) learned
by the network; or, ``likelihood="categorical"``, classifiers trained on the categorical NLL
of their softmax. Training stops for a member when its validation NLL has not improved for
``patience`` epochs, and the member's parameters of its best epoch are kept.

All members train in one program: the single-member loop (a ``jax.lax.while_loop``
over epochs, a ``jax.lax.scan`` over minibatches) is ``jax.vmap``-ed over members, and
the vectorised loop keeps running until every member has stopped, freezing the members
that stopped (masking), so no Python loop over members is needed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bnn_posteriors.inference import optim
from bnn_posteriors.models import nets
from bnn_posteriors.models import numpyro_models as models
from bnn_posteriors.util import validate
from bnn_posteriors.util.validate import positive, positive_int


def check_xy(
    x, y, label: str, n_features: int | None = None, likelihood: str | None = None
) -> tuple[jax.Array, jax.Array]:
    """Regression data as float32 arrays: ``x`` (n, d), ``y`` (n,), finite (:mod:`.validate`);
    ``likelihood="categorical"``: ``y`` integer class labels, kept as integers."""
    x, y = validate.check_xy(
        x, y, where=label, n_features=n_features, likelihood=likelihood, ndim=(2,), dtype=np.float32
    )
    return jnp.asarray(x), jnp.asarray(y)


def gaussian_nll(
    params, x, y, noise_scale: float | None, activation: str = "relu", heteroscedastic: bool = False
):
    """Mean Gaussian negative log-likelihood −(1/n) Σ_i log N(y_i | f(x_i), σ_i²).

    σ_i = ``noise_scale`` (mean regression, one output), or, ``heteroscedastic`` (two outputs,
    ``noise_scale`` ignored), f(x_i) = f_0(x_i) and σ_i = clip(exp f_1(x_i), 1e-6, 1e6)
    (:func:`bnn_posteriors.models.numpyro_models.heteroscedastic_outputs`). ``x`` (n, d), ``y``
    (n,).
    """
    out = nets.mlp_apply(params, x, activation)
    if heteroscedastic:
        mean, scale = models.heteroscedastic_outputs(out)
    else:
        mean, scale = out[:, 0], noise_scale
    return models.neg_log_likelihood(mean, y, "gaussian", scale) / y.shape[0]


@functools.lru_cache(maxsize=32)
def _compiled_train(
    widths,
    n_train,
    learning_rate,
    weight_decay,
    max_epochs,
    batch_size,
    patience,
    noise_scale,
    act,
    heteroscedastic=False,
    likelihood="gaussian",
):
    """One jitted, member-vectorised training program per configuration."""
    optimiser = optax.adamw(learning_rate, weight_decay=weight_decay)
    n_batches = max(n_train // batch_size, 1)
    size = min(batch_size, n_train)

    def loss(params, xb, yb):
        if likelihood == "categorical":
            logits = nets.mlp_apply(params, xb, act)
            return models.neg_log_likelihood(logits, yb, "categorical") / yb.shape[0]
        return gaussian_nll(params, xb, yb, noise_scale, act, heteroscedastic)

    def one_member(key, x, y, x_val, y_val):
        key_init, key_order = jax.random.split(key)
        params = nets.mlp_init(key_init, widths, scheme="glorot")
        state0 = {
            "params": params,
            "opt": optimiser.init(params),
            "best": params,
            "best_val": jnp.asarray(jnp.inf, jnp.float32),
            "best_epoch": jnp.asarray(0),
            "wait": jnp.asarray(0),
            "epoch": jnp.asarray(0),
        }

        def epoch_body(state):
            order = jax.random.permutation(jax.random.fold_in(key_order, state["epoch"]), n_train)
            batches = order[: n_batches * size].reshape(n_batches, size)

            params, opt, _ = optim.minimise(
                lambda p, idx: loss(p, x[idx], y[idx]),
                state["params"],
                optimiser,
                xs=batches,
                state=state["opt"],
            )
            val = loss(params, x_val, y_val)
            better = val < state["best_val"]
            return {
                "params": params,
                "opt": opt,
                "best": jax.tree.map(lambda a, b: jnp.where(better, a, b), params, state["best"]),
                "best_val": jnp.where(better, val, state["best_val"]),
                "best_epoch": jnp.where(better, state["epoch"] + 1, state["best_epoch"]),
                "wait": jnp.where(better, 0, state["wait"] + 1),
                "epoch": state["epoch"] + 1,
            }

        def running(state):
            return (state["epoch"] < max_epochs) & (state["wait"] < patience)

        final = jax.lax.while_loop(running, epoch_body, state0)
        return final["best"], {
            "val_nll": final["best_val"],
            "best_epoch": final["best_epoch"],
            "epochs": final["epoch"],
        }

    return jax.jit(jax.vmap(one_member, in_axes=(0, None, None, None, None)))


def train_ensemble(
    rng_key,
    x_train,
    y_train,
    x_val,
    y_val,
    *,
    widths: Sequence[int],
    n_members: int,
    learning_rate: float = 0.01,
    weight_decay: float = 0.005,
    max_epochs: int = 200,
    batch_size: int = 64,
    patience: int = 10,
    noise_scale: float | None = None,
    activation: str = "relu",
    heteroscedastic: bool = False,
    likelihood: str = "gaussian",
):
    """Train a deep ensemble of ``n_members`` MLPs at once ([SAP] App. D.1, MILE warm starts).

    ``widths`` = (d_in, hidden..., 1), e.g. (d, 16, 16, 16, 1). Each member: Glorot-normal
    kernels and zero biases from its own key, AdamW(``learning_rate``, ``weight_decay``) on
    the Gaussian NLL (:func:`gaussian_nll`) with σ = ``noise_scale`` (default 1) over minibatches
    of ``batch_size`` (reshuffled every epoch; the last incomplete minibatch is dropped),
    early stopping on the validation NLL with ``patience`` epochs, at most ``max_epochs``;
    the parameters of the best validation epoch are returned. ``x_*`` (n, d), ``y_*`` (n,).
    ``heteroscedastic``: members of the two-output model of
    :func:`bnn_posteriors.models.numpyro_models.mlp_regression`, ``widths`` = (d_in, hidden...,
    2), trained
    (and early-stopped) on its NLL with σ(x) = clip(exp f_1(x), 1e-6, 1e6); ``noise_scale`` must
    then be None. ``likelihood="categorical"``: classifiers, ``widths`` = (d_in, hidden...,
    classes), trained and early-stopped on the mean categorical NLL of their softmax
    (:func:`bnn_posteriors.models.numpyro_models.neg_log_likelihood`), ``y_*`` integer labels;
    ``noise_scale`` must then be None.

    Returns ``(params, info)``: ``params`` a parameter list of :mod:`bnn_posteriors.models.nets`
    whose arrays have a leading member axis, ``W`` (members, d_in, d_out), ``b``
    (members, d_out); ``info`` holds per-member arrays (members,) ``val_nll`` (best
    validation NLL), ``best_epoch`` and ``epochs`` (epochs run).
    """
    validate.check_likelihood(likelihood, where="train_ensemble")
    categorical = likelihood == "categorical"
    if categorical:
        widths = models.classification_widths(widths)
        if heteroscedastic or noise_scale is not None:
            raise ValueError(
                "train_ensemble: classifiers have no noise scale: heteroscedastic must be False "
                f"and noise_scale None, got {heteroscedastic!r} and {noise_scale!r}"
            )
    else:
        widths = models.regression_widths(widths, heteroscedastic)
    if heteroscedastic and noise_scale is not None:
        raise ValueError(
            "train_ensemble: heteroscedastic members learn their noise scale σ(x): "
            f"noise_scale must be None, got {noise_scale!r}"
        )
    nets.activation(activation)
    labels = likelihood if categorical else None
    x, y = check_xy(x_train, y_train, "train_ensemble (training data)", widths[0], labels)
    xv, yv = check_xy(x_val, y_val, "train_ensemble (validation data)", widths[0], labels)
    n_members = positive_int("n_members", n_members)
    learning_rate = positive("learning_rate", learning_rate, where="train_ensemble")
    fixed_noise: float | None = None  # heteroscedastic members learn σ(x); classifiers have none
    if not heteroscedastic and not categorical:
        fixed_noise = float(
            positive(
                "noise_scale", 1.0 if noise_scale is None else noise_scale, where="train_ensemble"
            )
        )
    validate.non_negative("weight_decay", weight_decay, where="train_ensemble")
    run = _compiled_train(
        widths,
        int(x.shape[0]),
        float(learning_rate),
        float(weight_decay),
        positive_int("max_epochs", max_epochs),
        positive_int("batch_size", batch_size),
        positive_int("patience", patience),
        fixed_noise,
        activation,
        bool(heteroscedastic),
        likelihood,
    )
    return run(jax.random.split(rng_key, n_members), x, y, xv, yv)


def member(params: list[dict], i: int) -> list[dict]:
    """Member ``i`` of stacked ensemble parameters (leading member axis removed)."""
    return jax.tree.map(lambda a: a[i], params)


def predict(params: list[dict], x, activation: str = "relu", heteroscedastic: bool = False):
    """Predictions of every member: stacked ``params`` and ``x`` (n, d).

    Mean regression: the means (members, n). ``heteroscedastic`` (two-output members):
    the pair ``(mean, scale)``, each (members, n), with scale σ(x) = clip(exp f_1(x),
    1e-6, 1e6) (:func:`bnn_posteriors.models.numpyro_models.heteroscedastic_outputs`).
    """
    if heteroscedastic:
        models.regression_widths(
            [params[0]["W"].shape[-2], *(p["W"].shape[-1] for p in params)], True
        )
        out = jax.vmap(lambda p: nets.mlp_apply(p, x, activation))(params)
        return models.heteroscedastic_outputs(out)
    return jax.vmap(lambda p: nets.mlp_apply(p, x, activation)[:, 0])(params)
