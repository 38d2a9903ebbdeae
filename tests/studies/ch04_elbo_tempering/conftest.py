"""Small synthetic results of chapter 4's fits, built by hand, for the evidence and figures.

The tests take them from the ``toy`` fixture (``toy.fake_fits()``, ``toy.PS``, ...).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bnn_posteriors.studies.ch04_elbo_tempering import regression

WIDTHS = (4, 8, 16)
PS = np.array([5, 10, 20])
FAMILY = (4, 16, 64)
NAMES = ("syn_set", "con_set")
D = 3  # padded inputs: one input, the constant one and a zero column


def fake_fits(kl_untempered=(10.0, 1.0, 0.1), gap=lambda n: 2.0 / n, splits: int = 3):
    """``{(name, r): fit}`` as :func:`regression.fit_over_widths` returns it, p = 20.

    Untempered: KL ``kl_untempered`` per width, RMSE that of the prior mean (1.0); tempered:
    KL 0.5 N, D = 5, RMSE 0.5, gap ``gap(N)``; each split scales its terms by 1 + 0.01 r.
    """
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=(20, 1)), np.ones((20, 1)), np.zeros((20, 1))], axis=1)
    fits = {}
    for r in range(splits):
        for k, name in enumerate(NAMES):
            s, rows = 1 + 0.01 * r * (k + 1), []
            for n, kl_1 in zip(WIDTHS, kl_untempered, strict=True):
                for tempered in (False, True):
                    rows.append(
                        {
                            "N": n,
                            "tempered": tempered,
                            "eta": 0.1 * 20 / n if tempered else 1.0,
                            "kl": 0.5 * n * s if tempered else kl_1 * s,
                            "expected_loss": 5.0 * s,
                            "gap": gap(n) * s,
                            "expected_log_lik": -20.0,
                            "elbo": -10.0,
                            "max_loc": 1.0 + n / 100,
                            "rmse": 0.5 if tempered else 1.0,
                            "q": regression.prior_q(D, n) if r == 0 else None,
                        }
                    )
            fits[name, r] = {
                "rows": rows,
                "p": 20,
                "rmse_prior": 1.0,
                "x": x,
                "y": x[:, 0],
                "x_test": x[:8],
                "y_test": x[:8, 0],
                "d_in": 2,
            }
    return fits


def fake_by_p(fits, d_over_p=lambda m: 0.25 * m):
    """``{(name, r): {m: terms}}`` as :func:`regression.fit_over_p` returns it: D = ``d_over_p``."""
    return {
        key: {
            int(m): {
                "kl": 1.0 + 0.001 * key[1],
                "expected_loss": d_over_p(m) * (1 + 0.01 * key[1]),
                "gap": m / 100,
            }
            for m in PS
        }
        for key in fits
    }


def fake_fam():
    """Terms for neurons from a fixed ν: KL ∝ N, D flat in N, D ∝ p, gap ∝ 1/N."""
    fw = np.array(FAMILY, dtype=float)
    return {
        "kl": 2 * fw,
        "expected_loss": np.full(3, 4.0),
        "gap": 1 / fw,
        "expected_loss_p": PS * 1.0,
        "gap_p": PS / 100,
    }


def fake_splits():
    """The split 0 of each set, with the fields :func:`evidence.fits_overview` reads."""
    split = SimpleNamespace(y_test=np.zeros(4), x_train=np.zeros((20, 8)))
    return {(name, 0): split for name in NAMES}


@pytest.fixture
def toy():
    """This module's builders and constants."""
    return SimpleNamespace(
        WIDTHS=WIDTHS,
        PS=PS,
        FAMILY=FAMILY,
        NAMES=NAMES,
        D=D,
        fake_fits=fake_fits,
        fake_by_p=fake_by_p,
        fake_fam=fake_fam,
        fake_splits=fake_splits,
    )
