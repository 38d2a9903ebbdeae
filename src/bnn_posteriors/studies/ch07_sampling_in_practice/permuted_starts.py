"""Permuted warm starts ([SAP] §4.1, Figs. 3 and 10): chains started from random
permutations of the hidden units of one trained network, all computing the same function,
so that any functional diversity of their ensemble comes from the sampler; and chapter 7's
run of MILE from regular, permuted and dead-ReLU starts ([SAP] §3.4) with its test LPPDs.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bnn_posteriors.evaluation import diagnostics, metrics
from bnn_posteriors.inference import ensembles, mile
from bnn_posteriors.models import nets
from bnn_posteriors.models.symmetry import actions
from bnn_posteriors.site.settings_classes import SamplingInPracticeSettings
from bnn_posteriors.util.validate import positive_int


def permute_all_hidden(params: list[dict], rng_key) -> list[dict]:
    """g·θ for a random permutation g of every hidden layer of an MLP (same function).

    ``rng_key`` is split into one key per hidden layer; layer l is permuted with
    :func:`bnn_posteriors.models.actions.permute_hidden` by ``jax.random.permutation`` of its key.
    """
    for layer, k in enumerate(jax.random.split(rng_key, len(params) - 1)):
        perm = jax.random.permutation(k, params[layer]["W"].shape[1])
        params = actions.permute_hidden(params, layer, perm)
    return params


def permuted_groups(rng_key, members, num_groups: int, group_size: int) -> list[list]:
    """Groups of permuted warm starts: group g holds member g of the stacked ensemble
    ``members`` and ``group_size - 1`` random permutations of it.

    Group g uses ``fold_in(rng_key, g)``, split into one key per permutation. Returns
    ``num_groups`` lists of ``group_size`` parameter lists.
    """
    positive_int("num_groups", num_groups)
    positive_int("group_size", group_size, 2)
    groups = []
    for g in range(num_groups):
        member, k_g = ensembles.member(members, g), jax.random.fold_in(rng_key, g)
        keys = jax.random.split(k_g, group_size - 1)
        groups.append([member] + [permute_all_hidden(member, k) for k in keys])
    return groups


def chain_starts(members, groups, extra=()) -> dict:
    """MCMC start positions of one run: the stacked ensemble ``members`` (chains 1..K), then
    the starts of every group of :func:`permuted_groups` in order, then the ``extra`` starts
    (e.g. a dead-ReLU start); sites as :func:`bnn_posteriors.inference.mile.warm_start_positions`.
    """
    stack = jax.tree.map(lambda *a: jnp.stack(a), *(p for group in groups for p in group), *extra)
    return {
        k: jnp.concatenate([a, b])
        for (k, a), b in zip(
            mile.warm_start_positions(members).items(),
            mile.warm_start_positions(stack).values(),
            strict=True,
        )
    }


def ensemble_settings(cfg: SamplingInPracticeSettings) -> dict:
    """The warm starts' ensemble settings of chapter 7 (``de_*`` of ``profiles.settings``)."""
    return dict(
        learning_rate=cfg.de_learning_rate,
        weight_decay=cfg.de_weight_decay,
        max_epochs=cfg.de_max_epochs,
        batch_size=cfg.de_batch_size,
        patience=cfg.de_patience,
    )


def permuted_start_run(
    rng_keys,
    split,
    *,
    hidden: Sequence[int],
    n_chains: int,
    num_groups: int,
    ensemble: dict,
    **bde_kwargs,
) -> dict:
    """MILE from regular, permuted and dead-ReLU warm starts in one run ([SAP] §3.4, §4.1).

    ``rng_keys``: the keys of the ensemble, the permutations and the chains. A deep
    ensemble of ``n_chains`` ReLU MLPs (``hidden`` widths, ``ensemble``: the settings of
    :func:`ensembles.train_ensemble`) gives the regular starts; :func:`permuted_groups`
    gives ``num_groups`` groups of ``n_chains`` permuted starts; the last start is member 0
    with a dead first hidden layer (:func:`nets.dead_relu_start`). ``bde_kwargs`` go to
    :func:`mile.run_bde`. Returns ``starts``, the chain indices ``regular``, ``groups``
    (one index array per group) and ``dead``, ``f_gap`` (the largest |f(permuted start) −
    f(its member)| on the test set: 0 up to round-off), the run ``bde``, its test-set
    predictive ``mean`` (chains, samples, n) and ``sigma`` (chains, samples), and ``seconds``.
    """
    key_de, key_perm, key_bde = rng_keys
    widths = (split.x_train.shape[1], *hidden, 1)
    members, _ = ensembles.train_ensemble(
        key_de,
        split.x_train,
        split.y_train,
        split.x_val,
        split.y_val,
        widths=widths,
        n_members=n_chains,
        **ensemble,
    )
    groups = permuted_groups(key_perm, members, num_groups, n_chains)
    dead = nets.dead_relu_start(ensembles.member(members, 0), layer=0, x=split.x_train)
    starts = chain_starts(members, groups, (dead,))
    x = split.x_test
    test_gap = [
        float(jnp.max(jnp.abs(nets.mlp_apply(p, x) - nets.mlp_apply(g[0], x))))
        for g in groups
        for p in g[1:]
    ]
    start = time.perf_counter()
    bde = mile.run_bde(key_bde, split.x_train, split.y_train, starts, widths=widths, **bde_kwargs)
    seconds = time.perf_counter() - start
    mean, sigma = (np.asarray(a) for a in mile.predict(bde["samples"], split.x_test))
    return {
        "starts": starts,
        "regular": np.arange(n_chains),
        "groups": [n_chains * (1 + g) + np.arange(n_chains) for g in range(num_groups)],
        "dead": n_chains * (1 + num_groups),
        "f_gap": max(test_gap),
        "bde": bde,
        "mean": mean,
        "sigma": sigma,
        "seconds": seconds,
    }


def ensemble_lppds(y, run: dict) -> dict:
    """Test LPPDs of a :func:`permuted_start_run` ([SAP] Figs. 3, 10; eq. 18).

    Returns ``single`` (one per chain), ``regular`` (the ensemble of the regular chains),
    ``permuted`` and ``best_permuted`` (per group: its ensemble and its best single chain).
    """
    mean, sigma = run["mean"], run["sigma"]
    single = np.array(
        [float(metrics.lppd(y, m, s[:, None])) for m, s in zip(mean, sigma, strict=True)]
    )

    def ensemble(idx):
        return float(metrics.lppd(y, mean[idx], sigma[idx][..., None]))

    return {
        "single": single,
        "regular": ensemble(run["regular"]),
        "permuted": np.array([ensemble(idx) for idx in run["groups"]]),
        "best_permuted": np.array([float(single[idx].max()) for idx in run["groups"]]),
    }


def dead_start_summary(run: dict, single, x_train) -> dict:
    """The dead-ReLU chain against the regular ones ([SAP] §3.4, C7.5).

    ``single``: the chains' test LPPDs (:func:`ensemble_lppds`). Returns the LPPD of the
    dead chain (``dead``) and the mean of the regular chains (``warm``), and the active
    units of the first hidden layer (:func:`diagnostics.active_units`) at the start, the
    first kept sample and the last one.
    """
    k = run["dead"]
    samples = jax.tree.map(operator.itemgetter(k), run["bde"]["samples"])
    positions = (
        jax.tree.map(operator.itemgetter(k), run["starts"]),
        jax.tree.map(operator.itemgetter(0), samples),
        jax.tree.map(operator.itemgetter(-1), samples),
    )
    active = [diagnostics.active_units(p, x_train) for p in positions]
    return {
        "dead": float(single[k]),
        "warm": float(np.mean(single[run["regular"]])),
        "active_start": active[0],
        "active_first": active[1],
        "active_last": active[2],
    }
