"""What every approximation of chapter 10 returns: its predictive at the problem's points, in
the reference's format with one draw axis, and its cost."""

from __future__ import annotations

import dataclasses

import numpy as np

from bnn_posteriors.inference import reference


class DoesNotApply(ValueError):
    """A method that does not apply to a problem (e.g. one limited to one hidden layer on a
    two-layer network): the scoreboard shows the reason instead of a score."""


@dataclasses.dataclass(frozen=True)
class MethodFit:
    """One method's fit on a problem.

    ``predictive``: for every set of points of the problem (``"test"``, ``"grid"``), the
    predictive of S draws: regression ``{"f": (S, n), "noise_scale": (S,) or (S, n)}``,
    classification ``{"probs": (S, n, C)}``. ``gradient_evaluations``: full-batch gradients
    of the log joint spent (the cost's unit, :func:`bnn_posteriors.evaluation.cost.
    gradient_flops` each); ``extra_flops``: dense linear algebra on top.
    """

    predictive: dict[str, dict[str, np.ndarray]]
    gradient_evaluations: float
    extra_flops: float = 0.0

    def __post_init__(self):
        if not self.predictive:
            raise ValueError("MethodFit: the predictive names no set of points")
        for name, pred in self.predictive.items():
            if "probs" in pred:
                probs = np.asarray(pred["probs"])
                if probs.ndim != 3:
                    raise ValueError(
                        f"MethodFit: {name} probs must be (S, n, C), got {probs.shape}"
                    )
            elif {"f", "noise_scale"} <= set(pred):
                f, s = np.asarray(pred["f"]), np.asarray(pred["noise_scale"])
                if f.ndim != 2 or s.shape not in (f.shape[:1], f.shape):
                    raise ValueError(
                        f"MethodFit: {name} needs f (S, n) and noise_scale (S,) or (S, n), "
                        f"got {f.shape} and {s.shape}"
                    )
            else:
                raise ValueError(
                    f"MethodFit: {name} holds 'probs' or 'f' and 'noise_scale', got {sorted(pred)}"
                )
        if not self.gradient_evaluations >= 0 or not self.extra_flops >= 0:
            raise ValueError("MethodFit: costs must be non-negative")


def draws_predictive(prob, sites) -> dict[str, dict[str, np.ndarray]]:
    """The predictive of parameter draws ``sites`` (the model's sample sites, each with one
    leading draw axis S) at every set of points of ``prob`` (a :class:`.problems.Problem`), in
    the reference's format (:func:`bnn_posteriors.inference.reference.predictive`) without
    its chain axis, float32."""
    chain = {k: np.asarray(v)[None] for k, v in sites.items()}  # one chain
    out = {}
    for name, x in prob.points().items():
        pred = reference.predictive(prob.spec, chain, np.asarray(x, np.float32))
        out[name] = {k: np.asarray(v[0], dtype=np.float32) for k, v in pred.items()}
    return out
