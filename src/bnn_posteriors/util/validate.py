"""Validation of inputs at the public entry points: one rule per idea, one message style.

Checks run on concrete values at Python level, before any ``jit``, and only read their
inputs (dtypes change only where a caller asks for ``dtype``). Traced values
(``jax.core.Tracer``) get their shapes checked, not their values. A message names the
function (``where``), the argument and the problem, e.g.
``"nuts: y contains 1 NaN values (it must be finite)"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

LIKELIHOODS = ("gaussian", "categorical")  # of every model and method
_SHAPES = {1: "(n,)", 2: "(n, d)"}


def _pre(where: str | None) -> str:
    return f"{where}: " if where else ""


def check_likelihood(likelihood, *, where: str | None = None) -> str:
    """``likelihood`` if it is one of :data:`LIKELIHOODS`; a ``ValueError`` naming them if not."""
    if likelihood not in LIKELIHOODS:
        choices = ", ".join(LIKELIHOODS)
        raise ValueError(f"{_pre(where)}unknown likelihood {likelihood!r}; choose one of {choices}")
    return likelihood


def _traced(value) -> bool:
    return isinstance(value, jax.core.Tracer)


def _array(value):
    """``value`` as a NumPy array, or the tracer itself."""
    return value if _traced(value) else np.asarray(value)


def _number(name: str, value, where: str | None) -> float:
    kind = type(value).__name__
    if isinstance(value, bool | str | bytes):  # float() would accept True and "0.1"
        raise TypeError(f"{_pre(where)}{name} must be a number, got {kind}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{_pre(where)}{name} must be a number, got {kind}") from None


def positive(name: str, value, *, where: str | None = None) -> float:
    """A scale or precision: a finite number > 0, returned as ``float`` (traced values pass)."""
    if _traced(value):
        return value
    value = _number(name, value, where)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{_pre(where)}{name} must be a positive number, got {value}")
    return value


def non_negative(name: str, value, *, where: str | None = None) -> float:
    """A rate or decay that may be 0: a finite number ≥ 0, returned as ``float``."""
    value = _number(name, value, where)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{_pre(where)}{name} must be a non-negative number, got {value}")
    return value


def positive_array(name: str, value, *, where: str | None = None):
    """An array of scales: non-empty, finite and > 0 everywhere; a JAX array (traced pass)."""
    if _traced(value):
        return value
    array = np.asarray(value, dtype=float)
    if array.size == 0 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"{_pre(where)}{name} must be positive everywhere, got {value}")
    return jnp.asarray(array)


def positive_int(name: str, value, minimum: int = 1, *, where: str | None = None) -> int:
    """A count: an integer (not a bool) ≥ ``minimum``; returned as ``int``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer ≥ {minimum}"
        raise ValueError(f"{_pre(where)}{name} must be {what}, got {value!r}")
    return int(value)


def finite(name: str, array, *, where: str | None = None):
    """``array`` unchanged if numeric and free of NaN/inf (counted in the message)."""
    a = _array(array)
    if _traced(a) or a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        return array
    if not np.issubdtype(a.dtype, np.inexact):
        raise ValueError(f"{_pre(where)}{name} must be numeric, got dtype {a.dtype}")
    for count, what in ((int(np.isnan(a).sum()), "NaN"), (int(np.isinf(a).sum()), "infinite")):
        if count:
            message = f"{name} contains {count} {what} values (it must be finite)"
            raise ValueError(_pre(where) + message)
    return array


def check_x(x, *, where: str, n_features: int | None = None, ndim=(1, 2), dtype=None):
    """Inputs ``x``: shape (n,) or (n, d) (the ranks in ``ndim``), n ≥ 1, finite.

    With ``n_features``: shape (n, n_features). Returns a NumPy array, cast to ``dtype``
    if given (a traced ``x`` comes back unchanged).
    """
    pre, x = _pre(where), _array(x)
    ranks = (2,) if n_features is not None else tuple(ndim)
    if x.ndim not in ranks:
        want = f"(n, {n_features})" if n_features is not None else None
        want = want or " or ".join(_SHAPES.get(k, f"{k}-D") for k in ranks)
        raise ValueError(f"{pre}x must have shape {want}, got shape {x.shape}")
    if x.shape[0] == 0:
        raise ValueError(f"{pre}x has no rows")
    if n_features is not None and x.shape[1] != n_features:
        raise ValueError(f"{pre}x has {x.shape[1]} columns (features), expected {n_features}")
    finite("x", x, where=where)
    return x if dtype is None or _traced(x) else x.astype(dtype)


def check_xy(
    x, y, *, where: str, n_features=None, likelihood=None, ndim=(1, 2), y_ndim=1, dtype=None
):
    """Data ``x`` (as :func:`check_x`) and targets ``y`` of shape (n,) (``y_ndim=2``: (n, k)).

    ``likelihood`` "categorical": y integer class labels ≥ 0; otherwise
    (None or "gaussian") y numeric and finite. Returns NumPy arrays ``(x, y)``,
    cast to ``dtype`` if given (class labels keep their integer dtype).
    """
    pre = _pre(where)
    if likelihood is not None:
        check_likelihood(likelihood, where=where)
    x = check_x(x, where=where, n_features=n_features, ndim=ndim, dtype=dtype)
    y, labels = _array(y), likelihood == "categorical"
    if labels:
        _labels(y, pre)
    else:
        finite("y", y, where=where)
    if y.ndim != y_ndim:
        want = "(n,)" if y_ndim == 1 else "(n, k)"
        raise ValueError(f"{pre}y must have shape {want}, got shape {y.shape}")
    if y.shape[0] != x.shape[0]:
        raise ValueError(
            f"{pre}x has {x.shape[0]} rows but y has {y.shape[0]} (they need the same number)"
        )
    return x, y if dtype is None or labels or _traced(y) else y.astype(dtype)


def _labels(y, pre: str):
    """Class labels: integer dtype, ≥ 0."""
    if not jnp.issubdtype(y.dtype, jnp.integer):
        raise ValueError(f"{pre}class labels y must be integers ≥ 0, got dtype {y.dtype}")
    if not _traced(y) and y.size and y.min() < 0:
        raise ValueError(f"{pre}class labels y must be integers ≥ 0, got {y.min()}")


# keyword arguments of the models that are standard deviations
SCALE_ARGUMENTS = ("prior_scale", "noise_scale", "sigma", "tau")


def check_model_data(model_kwargs, *, where: str) -> None:
    """The data among a NumPyro model's keyword arguments: ``x`` and ``y`` (unless None);
    ``x`` must have ``widths[0]`` columns when the model is an MLP (``widths`` given), and
    the scales among them (:data:`SCALE_ARGUMENTS`) must be positive."""
    if not isinstance(model_kwargs, Mapping):
        raise TypeError(f"{where}: model_kwargs must be a dict, got {type(model_kwargs).__name__}")
    for name in SCALE_ARGUMENTS:  # scalar scales; arrays are the model's to check
        if model_kwargs.get(name) is not None and np.ndim(model_kwargs[name]) == 0:
            positive(name, model_kwargs[name], where=where)
    if model_kwargs.get("x") is None:
        return
    widths = model_kwargs.get("widths")
    n_features = None if widths is None else int(widths[0])  # an MLP model's input width
    if model_kwargs.get("y") is None:
        check_x(model_kwargs["x"], where=where, n_features=n_features)
    else:
        check_xy(model_kwargs["x"], model_kwargs["y"], where=where, n_features=n_features)
