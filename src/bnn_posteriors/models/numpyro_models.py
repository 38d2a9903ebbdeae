"""NumPyro models. One definition per model family, used by every inference method.

NUTS and MFVI both consume these functions: NUTS through their log joint
(:func:`numpyro.infer.util.initialize_model`), MFVI through NumPyro SVI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from bnn_posteriors.models import nets
from bnn_posteriors.util.validate import check_likelihood, positive, positive_array, positive_int


def narrow_network(
    x,
    y=None,
    *,
    depth,
    sigma: float = 1.0,
    tau=1.0,
    max_depth: int | None = None,
    prior_loc=None,
):
    """Narrow Bayesian network of [SAP] §2.1, eq. (24).

    w_l ~ N(0, τ²) for l = 1..L, β = ∏_l w_l, y_i ~ N(β x_i, σ²).
    ``x``: (n,), ``y``: (n,) or None. Sample sites ``w`` (L,), ``beta`` (deterministic), ``y``.

    ``tau`` may also be a sequence of L per-weight scales and ``prior_loc`` a
    sequence of L prior means: the adjusted prior N(θ₀, Σ) of [SAP] Prop. B.5.

    With ``max_depth`` the site ``w`` has ``max_depth`` entries and only the first
    ``depth`` enter the product; the others keep their prior and never touch the
    data. Depth may then be an array, so one compiled sampler serves all depths.
    """
    sigma = positive("sigma", sigma)
    tau = positive("tau", tau) if np.ndim(tau) == 0 else positive_array("tau", tau)
    loc = 0.0 if prior_loc is None else jnp.asarray(prior_loc)
    if max_depth is None:
        depth = positive_int("depth", depth)
        size, active = depth, None
    else:
        max_depth = positive_int("max_depth", max_depth)
        if not isinstance(depth, jax.core.Tracer) and not 1 <= int(depth) <= max_depth:
            raise ValueError(f"depth must lie in 1..max_depth={max_depth}, got {depth}")
        size, active = max_depth, jnp.arange(max_depth) < depth
    if np.ndim(tau) or np.ndim(loc):
        shapes = {np.shape(tau), np.shape(loc)} - {()}
        if shapes != {(size,)}:
            raise ValueError(f"tau and prior_loc must be scalars or of shape ({size},): {shapes}")
    w = numpyro.sample("w", dist.Normal(loc, tau).expand([size]).to_event(1))
    beta = numpyro.deterministic(
        "beta", jnp.prod(w if active is None else jnp.where(active, w, 1.0))
    )
    numpyro.sample("y", dist.Normal(beta * x, sigma).to_event(1), obs=y)


def mlp_prior(widths: Sequence[int], prior_scale: float, bias: bool = True) -> list[dict]:
    """Sample sites ``W{i}`` (and ``b{i}``) with every entry ~ N(0, prior_scale²).

    Returns the MLP parameter list of :mod:`bnn_posteriors.models.nets` (inside a model).
    """
    params = []
    for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:], strict=True)):
        W = numpyro.sample(f"W{i}", dist.Normal(0.0, prior_scale).expand([d_in, d_out]).to_event(2))
        layer = {"W": W}
        if bias:
            layer["b"] = numpyro.sample(
                f"b{i}", dist.Normal(0.0, prior_scale).expand([d_out]).to_event(1)
            )
        params.append(layer)
    return params


# the clip of the heteroscedastic output scale, as the authors' likelihood (MILE's `regr` task)
SCALE_CLIP = (1e-6, 1e6)


def heteroscedastic_outputs(out):
    """Two network outputs → ``(mean, scale)``: f_0(x) and σ(x) = clip(exp f_1(x), 1e-6, 1e6).

    The authors' heteroscedastic Gaussian likelihood ([SAP] Figs. 1, 5, 7; MILE's
    ``scale_regr_mile.yaml``): y ~ N(f_0(x), σ(x)²). ``out``: (..., 2) → two arrays (...).
    """
    return out[..., 0], jnp.clip(jnp.exp(out[..., 1]), *SCALE_CLIP)


def regression_widths(widths: Sequence[int], heteroscedastic: bool = False) -> tuple:
    """Checked ``widths`` of a regression MLP, as a tuple (:func:`.nets.check_widths`): one
    output, or two (mean, log scale) if ``heteroscedastic``."""
    widths = nets.check_widths(widths)
    if heteroscedastic and widths[-1] != 2:
        raise ValueError(
            f"heteroscedastic regression needs two outputs (mean, log scale), got widths {widths}"
        )
    if not heteroscedastic and widths[-1] != 1:
        raise ValueError(f"mean regression needs one output, got widths {widths}")
    return widths


def neg_log_likelihood(outputs, y, likelihood: str, noise_scale=1.0):
    """−log p(y | f) summed over points: the likelihoods of :func:`mlp_regression` and
    :func:`mlp_classification` on network outputs ``f``, for methods that train or evaluate
    on the likelihood alone (MAP, Laplace, ensembles, MetricBNN).

    ``"gaussian"``: Σ −log N(y; f, σ²) with σ = ``noise_scale``, a number or one per point
    (the heteroscedastic model's σ(x)); ``outputs`` and ``y`` of one shape. ``"categorical"``:
    Σ −log softmax(f)_y, ``outputs`` (n, C) logits and ``y`` (n,) integer labels.
    """
    if likelihood == "gaussian":
        r = (y - outputs) / noise_scale
        return jnp.sum(0.5 * r**2 + jnp.log(noise_scale) + 0.5 * jnp.log(2 * jnp.pi))
    logp = jax.nn.log_softmax(outputs, axis=-1)
    return -jnp.sum(jnp.take_along_axis(logp, y[:, None], axis=-1))


def check_noise(noise_scale, heteroscedastic: bool) -> None:
    """A heteroscedastic model learns σ(x), so it takes no ``noise_scale``."""
    if heteroscedastic and noise_scale is not None:
        raise ValueError(
            f"heteroscedastic regression learns its noise scale σ(x): noise_scale must be None, "
            f"got {noise_scale!r}"
        )


def classification_widths(widths: Sequence[int]) -> tuple:
    """Checked ``widths`` of a classifier, as a tuple: at least two outputs (classes)."""
    widths = nets.check_widths(widths)
    if widths[-1] < 2:
        raise ValueError(f"classification needs at least two outputs, got widths {widths}")
    return widths


def mlp_regression(
    x,
    y=None,
    *,
    widths: Sequence[int],
    activation: str = "relu",
    prior_scale: float = 1.0,
    noise_scale: float | None = None,
    output_scale: float = 1.0,
    bias: bool = True,
    heteroscedastic: bool = False,
):
    """Bayesian MLP for regression ([SAP] §5, App. D).

    Every weight and bias ~ N(0, prior_scale²) (no biases if ``bias`` is false, as the
    two-layer nets of [SAP] App. E).

    - Mean regression (default): ``widths`` = (d_in, hidden..., 1), y_i ~ N(f(x_i), σ²)
      with σ fixed to ``noise_scale`` or, if ``noise_scale`` is None, log σ ~ N(0, 1) sampled (site
      ``log_sigma``).
    - ``heteroscedastic``: ``widths`` = (d_in, hidden..., 2), y_i ~ N(f_0(x_i), σ(x_i)²)
      with σ(x) = clip(exp f_1(x), 1e-6, 1e6) (:func:`heteroscedastic_outputs`; the
      authors' ``regr`` task of [SAP] Figs. 1, 5, 7); no noise parameter (``noise_scale`` must
      be None).

    ``x``: (n, d_in), ``y``: (n,). Deterministic sites ``mean`` (n,) and, heteroscedastic,
    ``scale`` (n,).
    """
    widths = regression_widths(widths, heteroscedastic)
    check_noise(noise_scale, heteroscedastic)
    prior_scale = positive("prior_scale", prior_scale)
    params = mlp_prior(widths, prior_scale, bias)
    if heteroscedastic:
        out = nets.mlp_apply(params, x, activation, output_scale)
        mean, sigma = heteroscedastic_outputs(out)
        numpyro.deterministic("mean", mean)
        numpyro.deterministic("scale", sigma)
        numpyro.sample("y", dist.Normal(mean, sigma).to_event(1), obs=y)
        return
    if noise_scale is None:
        sigma = jnp.exp(numpyro.sample("log_sigma", dist.Normal(0.0, 1.0)))
    else:
        sigma = positive("noise_scale", noise_scale)
    mean = nets.mlp_apply(params, x, activation, output_scale)[..., 0]
    numpyro.deterministic("mean", mean)
    numpyro.sample("y", dist.Normal(mean, sigma).to_event(1), obs=y)


def mlp_classification(
    x,
    y=None,
    *,
    widths: Sequence[int],
    activation: str = "relu",
    prior_scale: float = 1.0,
    output_scale: float = 1.0,
    bias: bool = True,
    subsample_size: int | None = None,
):
    """Bayesian MLP classifier: softmax of the network's logits ([TEMP] experiments).

    Every weight and bias ~ N(0, prior_scale²) (sites ``W{i}``, ``b{i}``; no biases if
    ``bias`` is false); y_i ~ Categorical(softmax(f(x_i))). ``x``: (n, d_in), ``y``: (n,)
    integer labels in 0..d_out−1. ``widths`` = (d_in, hidden..., d_out). With
    ``subsample_size`` the likelihood sees a random minibatch per call, rescaled by
    n / subsample_size (``numpyro.plate`` subsampling), as in Bayes by Backprop.
    """
    widths = classification_widths(widths)
    prior_scale = positive("prior_scale", prior_scale)
    params = mlp_prior(widths, prior_scale, bias)
    x = jnp.asarray(x)
    n = x.shape[0]
    if y is not None and jnp.shape(y) != (n,):
        raise ValueError(f"y must have shape ({n},), got {jnp.shape(y)}")
    with numpyro.plate("data", n, subsample_size=subsample_size) as idx:
        logits = nets.mlp_apply(params, x[idx], activation, output_scale)
        numpyro.sample("y", dist.Categorical(logits=logits), obs=None if y is None else y[idx])


@dataclass(frozen=True)
class MLP:
    """The specification of a Bayesian MLP: one frozen, hashable value for every method.

    ``widths`` (d_in, hidden..., d_out), ``likelihood`` "gaussian" (:func:`mlp_regression`)
    or "categorical" (:func:`mlp_classification`), the hidden ``activation``, ``bias``,
    the prior's ``prior_scale``, the Gaussian likelihood's ``noise_scale`` (None: log σ ~
    N(0, 1) sampled; ignored by the categorical one), ``output_scale`` and, Gaussian only,
    ``heteroscedastic`` (two outputs, σ(x) learned: no ``noise_scale``). Checked when
    made; :attr:`model` is the NumPyro model and :meth:`kwargs` its keyword arguments, so
    ``numpyro.infer.util.log_density(spec.model, (), spec.kwargs(x, y), sites)`` is the
    log joint. Hashable, so a spec can be a static argument of a jitted function.
    """

    widths: tuple[int, ...]
    likelihood: str = "gaussian"
    activation: str = "relu"
    bias: bool = True
    prior_scale: float = 1.0
    noise_scale: float | None = None
    output_scale: float = 1.0
    heteroscedastic: bool = False

    def __post_init__(self):
        object.__setattr__(self, "widths", nets.check_widths(self.widths))
        check_likelihood(self.likelihood)
        nets.activation(self.activation)
        object.__setattr__(self, "prior_scale", positive("prior_scale", self.prior_scale))
        object.__setattr__(self, "output_scale", positive("output_scale", self.output_scale))
        if self.likelihood == "categorical":
            classification_widths(self.widths)
            if self.heteroscedastic:
                raise ValueError("heteroscedastic needs the gaussian likelihood")
            return
        regression_widths(self.widths, self.heteroscedastic)
        check_noise(self.noise_scale, self.heteroscedastic)
        if self.noise_scale is not None:
            object.__setattr__(self, "noise_scale", positive("noise_scale", self.noise_scale))

    @property
    def model(self):
        """The NumPyro model of this likelihood."""
        return mlp_regression if self.likelihood == "gaussian" else mlp_classification

    def kwargs(self, x, y=None) -> dict:
        """Keyword arguments of :attr:`model` for data ``x`` (n, d_in) and ``y`` (n,)."""
        kwargs = dict(
            x=x,
            y=y,
            widths=self.widths,
            activation=self.activation,
            bias=self.bias,
            prior_scale=self.prior_scale,
            output_scale=self.output_scale,
        )
        if self.likelihood == "gaussian":
            kwargs["noise_scale"] = self.noise_scale
        if self.heteroscedastic:
            kwargs["heteroscedastic"] = True
        return kwargs
