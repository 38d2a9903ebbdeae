"""Chapter 5's fits from its settings: plain and symmetrised MFVI over the widths, paired by
seed, on the regression toy set and on pooled MNIST (:func:`.fits.fit_width`).

``cfg`` is the chapter's settings object (:func:`bnn_posteriors.site.profiles.settings`);
each function names the fields it reads.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.site.settings_classes import SymmetrisedVISettings
from bnn_posteriors.site.tables import Overview
from bnn_posteriors.studies.ch05_symmetrised_vi import fits as sx
from bnn_posteriors.studies.ch05_symmetrised_vi.evidence import mi_words
from bnn_posteriors.util.validate import positive_int


def toy_model_kw(cfg: SymmetrisedVISettings) -> dict:
    """The toy set's model: Gaussian likelihood with ``cfg.noise_scale``, ``cfg.prior_scale``,
    ``cfg.activation``."""
    return dict(
        prior_scale=cfg.prior_scale,
        likelihood="gaussian",
        noise_scale=cfg.noise_scale,
        activation=cfg.activation,
    )


def paired_runs(rng_key, n_seeds: int):
    """Keys and weights of I for ``n_seeds`` plain runs (λ = 0) followed by as many
    symmetrised ones (λ = 1) that share their initialisation and Monte-Carlo keys:
    ((2n,) keys, (2n,) weights)."""
    n_seeds = positive_int("n_seeds", n_seeds)
    seed_keys = jax.random.split(rng_key, n_seeds)
    return jnp.concatenate([seed_keys, seed_keys]), jnp.repeat(jnp.array([0.0, 1.0]), n_seeds)


def toy_runs(key_data, key_fit, key_eval, cfg: SymmetrisedVISettings) -> dict:
    """The toy set (``cfg.toy_n_train``, ``cfg.toy_n_test`` points, noise ``cfg.toy_noise``;
    train and test from the two halves of ``key_data``) and, per width of ``cfg.widths``,
    ``cfg.n_seeds`` paired plain/symmetrised fits (``svi_steps``, ``learning_rate``,
    ``svi_particles``, ``init_scale``, ``eval_samples``), predicted on the test points and a
    grid of 200 x in [−2.5, 2.5] (its draws in each fit's ``extra``).

    Returns ``x_train``, ``y_train``, ``x_test``, ``y_test``, ``x_grid``, ``fits`` (width →
    :func:`.fits.fit_width`) and ``overview``, an :class:`~bnn_posteriors.site.tables.Overview`
    of the sizes the prose cites and the fits' means over seeds.
    """
    k_train, k_test = jax.random.split(key_data)
    x_tr, y_tr = sx.toy_regression(k_train, cfg.toy_n_train, cfg.toy_noise)
    x_te, y_te = sx.toy_regression(k_test, cfg.toy_n_test, cfg.toy_noise)
    run_keys, run_lambda = paired_runs(key_fit, cfg.n_seeds)
    x_grid = jnp.linspace(-2.5, 2.5, 200)[:, None]  # for the figure: predicted with the test points
    settings = dict(
        num_steps=cfg.svi_steps,
        learning_rate=cfg.learning_rate,
        num_particles=cfg.svi_particles,
        init_scale=cfg.init_scale,
    )
    fits = {
        w: sx.fit_width(
            run_keys,
            run_lambda,
            x_tr,
            y_tr,
            jnp.concatenate([x_te, x_grid]),
            y_te,
            key_eval,
            width=w,
            fit=settings,
            eval_samples=cfg.eval_samples,
            **toy_model_kw(cfg),
        )
        for w in cfg.widths
    }
    glue = dict(toy_n_train=cfg.toy_n_train, toy_n_test=cfg.toy_n_test, n_seeds=cfg.n_seeds)
    table = "Per width, mean over seeds (test log-likelihood per point):\n\n" + sx.fits_table(fits)
    return dict(
        x_train=x_tr,
        y_train=y_tr,
        x_test=x_te,
        y_test=y_te,
        x_grid=x_grid,
        fits=fits,
        overview=Overview(table, glue),
    )


def mnist_runs(key_fit, key_eval, arrays, cfg: SymmetrisedVISettings) -> dict:
    """Paired plain/symmetrised fits on MNIST per width of ``cfg.mnist_widths``.

    ``arrays``: ``(x_train, y_train, x_test, y_test)`` of
    :func:`bnn_posteriors.data.loaders.load_mnist_subset` (images (n, 784)); the first
    ``cfg.mnist_n_train`` training images are used, every image averaged over
    ``cfg.mnist_pool`` pixel blocks. ``cfg.mnist_seeds`` paired seeds, ``mnist_steps``,
    ``mnist_learning_rate``, ``mnist_particles``, ``mnist_init_scale``, ``mnist_perms`` (None:
    the exact I; K: [SYM]'s Î_K), ``mnist_chunk``, ``cache``, ``eval_samples`` // 4.

    Returns ``fits`` (width → :func:`.fits.fit_width`) and ``overview``, an
    :class:`~bnn_posteriors.site.tables.Overview` of what the prose cites about the data and
    the objective and the fits' means over seeds.
    """
    xm_tr, ym_tr, xm_te, ym_te = arrays
    if len(xm_tr) < cfg.mnist_n_train:
        raise ValueError(
            f"mnist_runs: {len(xm_tr)} training images, fewer than mnist_n_train = "
            f"{cfg.mnist_n_train}"
        )
    n_pool = len(ym_tr) + len(ym_te)
    xm_tr, ym_tr = (
        sx.pool_images(xm_tr[: cfg.mnist_n_train], cfg.mnist_pool),
        ym_tr[: cfg.mnist_n_train],
    )
    xm_te = sx.pool_images(xm_te, cfg.mnist_pool)
    model_kw = dict(
        prior_scale=cfg.prior_scale, likelihood="categorical", activation=cfg.activation
    )
    run_keys, run_lambda = paired_runs(key_fit, cfg.mnist_seeds)
    settings = dict(
        num_steps=cfg.mnist_steps,
        learning_rate=cfg.mnist_learning_rate,
        num_particles=cfg.mnist_particles,
        init_scale=cfg.mnist_init_scale,
        num_perms=cfg.mnist_perms,  # None: the exact I (H <= 16); K: [SYM]'s bound Î_K
    )
    fits = {
        w: sx.fit_width(
            run_keys,
            run_lambda,
            xm_tr,
            ym_tr,
            xm_te,
            ym_te,
            key_eval,
            width=w,
            fit=settings,
            eval_samples=cfg.eval_samples // 4,
            chunk=cfg.mnist_chunk,
            cache=bool(cfg.cache),  # resumable groups of fits in the full profile
            **model_kw,
        )
        for w in cfg.mnist_widths
    }
    words = mi_words(cfg.mnist_perms)
    side = 28 // cfg.mnist_pool
    glue = dict(
        mnist_n_train=cfg.mnist_n_train,
        mnist_n_test=cfg.mnist_n_test,
        mnist_seeds=cfg.mnist_seeds,
        mnist_widths=", ".join(map(str, cfg.mnist_widths)),
        mnist_mi_text=words["mnist_mi_text"],
        mnist_mi_short=words["mnist_mi_short"],
        mnist_n_pool=f"{n_pool:,}".replace(",", " "),
        mnist_block=f"{cfg.mnist_pool}×{cfg.mnist_pool}",
        mnist_inputs=side * side,
        mnist_side=f"{side}×{side}",
    )
    table = f"Per width, mean over seeds ({words['mi_name']}):\n\n" + sx.fits_table(fits)
    return dict(fits=fits, overview=Overview(table, glue))


def plain_q(fit: dict, n_seeds: int) -> dict:
    """The plain runs' q (the first ``n_seeds`` of :func:`.fits.fit_width`'s runs)."""
    n_runs = len(np.asarray(fit["elbo"]))
    if not (isinstance(n_seeds, int) and 1 <= n_seeds <= n_runs):
        raise ValueError(f"plain_q: n_seeds must be an integer in [1, {n_runs}], got {n_seeds!r}")
    return jax.tree.map(lambda v: v[:n_seeds], fit["q"])
