"""Known-answer tests of the classification metrics: accuracy, NLL, confidence and ECE."""

from __future__ import annotations

import numpy as np
import pytest

from bnn_posteriors.evaluation import metrics

PROBS = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
LABELS = np.array([0, 1, 1, 1])


def test_accuracy_nll_and_confidence_by_hand():
    assert metrics.accuracy(PROBS, LABELS) == pytest.approx(0.75)
    expected_nll = -np.mean(np.log([0.9, 0.4, 0.7, 0.8]))
    assert metrics.categorical_nll(PROBS, LABELS) == pytest.approx(expected_nll)
    assert metrics.mean_confidence(PROBS) == pytest.approx(np.mean([0.9, 0.6, 0.7, 0.8]))


def test_ece_by_hand_with_two_bins():
    # bins (0, 0.5], (0.5, 1]: every confidence (0.9, 0.6, 0.7, 0.8) falls in the second;
    # accuracy 3/4, mean confidence 0.75 → ECE 0.
    assert metrics.ece(PROBS, LABELS, n_bins=2) == pytest.approx(0.0, abs=1e-12)
    # ten bins: (0.5,0.6] holds the wrong 0.6 (gap 0.6), 0.7, 0.8, 0.9 each right (gaps .3 .2 .1)
    assert metrics.ece(PROBS, LABELS, n_bins=10) == pytest.approx((0.6 + 0.3 + 0.2 + 0.1) / 4)


def test_ece_extremes():
    one_hot = np.eye(3)[[0, 1, 2, 0]]
    assert metrics.ece(one_hot, np.array([0, 1, 2, 0])) == pytest.approx(0.0)  # certain, right
    assert metrics.ece(one_hot, np.array([1, 2, 0, 1])) == pytest.approx(1.0)  # certain, wrong
    uniform = np.full((6, 2), 0.5)
    # confidence 0.5 everywhere, accuracy of argmax (class 0) is 1/2 → calibrated
    assert metrics.ece(uniform, np.array([0, 1, 0, 1, 0, 1])) == pytest.approx(0.0)


def test_ece_of_a_calibrated_forecaster_is_small():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 200_000)
    labels = (rng.uniform(size=conf.size) > conf).astype(int)  # class 0 right w.p. conf
    probs = np.stack([conf, 1 - conf], axis=1)
    assert metrics.ece(probs, labels) < 0.01


@pytest.mark.parametrize(
    "probs, labels, match",
    [
        (np.array([0.5, 0.5]), np.array([0]), "shape"),
        (PROBS, LABELS[:3], "labels must have shape"),
        (PROBS, np.array([0, 1, 2, 1]), "labels must lie"),
        (PROBS, LABELS.astype(float), "integers"),
        (PROBS * 2, LABELS, "sum to 1"),
        (-PROBS, LABELS, "non-negative"),
    ],
)
def test_bad_input_is_rejected(probs, labels, match):
    with pytest.raises(ValueError, match=match):
        metrics.ece(probs, labels)


def test_ece_rejects_bad_bins():
    with pytest.raises(ValueError, match="n_bins"):
        metrics.ece(PROBS, LABELS, n_bins=0)
