"""The rules of a claim check: whether a value satisfies its expectation, and by how much.

A rule is ``approx`` (within ``tol``/``rtol`` of ``expect``), ``greater``/``less`` (than the
bound ``expect``), one of the monotone rules over a sequence, or ``true`` (booleans).
:func:`bnn_posteriors.claims.checking.check` validates a rule (:func:`validate`), decides it
(:func:`evaluate`, with a one-line reason) and records its :func:`margin`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

RULES = (
    "approx",
    "greater",
    "less",
    "non-increasing",
    "non-decreasing",
    "increasing",
    "decreasing",
    "true",
)
_MONOTONE = {
    "non-increasing": (np.less_equal, "≤"),
    "non-decreasing": (np.greater_equal, "≥"),
    "increasing": (np.greater, ">"),
    "decreasing": (np.less, "<"),
}


def _numeric(value: Any, what: str) -> np.ndarray:
    array = np.asarray(value)
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise TypeError(f"{what} must be a number or an array of numbers, got {value!r}")
    if array.size == 0:
        raise ValueError(f"{what} is empty")
    return array.astype(float)


def fmt(x: float) -> str:
    return f"{x:.4g}"


def validate(rule: str, expect: Any, tol: float | None, rtol: float | None) -> None:
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; the rules are {', '.join(RULES)}")
    if rule == "approx":
        if expect is None:
            raise ValueError("rule 'approx' needs expect=")
        if tol is None and rtol is None:
            raise ValueError("rule 'approx' needs tol= (absolute) or rtol= (relative)")
    elif tol is not None or rtol is not None:
        raise ValueError(f"tol/rtol apply to rule 'approx' only, not to {rule!r}")
    if rule in ("greater", "less") and expect is None:
        raise ValueError(f"rule {rule!r} needs expect= (the bound)")
    if rule in (*_MONOTONE, "true") and expect is not None:
        raise ValueError(f"rule {rule!r} takes no expect= (the rule is the expectation)")
    for name, bound in (("tol", tol), ("rtol", rtol)):
        if bound is not None and not (math.isfinite(bound) and bound >= 0):
            raise ValueError(f"{name} must be a finite number ≥ 0, got {bound!r}")


def evaluate(rule: str, value: Any, expect: Any, tol: float | None, rtol: float | None):
    """Whether ``value`` satisfies ``rule``, and a one-line message saying why (or why not)."""
    if rule == "true":
        array = np.asarray(value)
        if array.dtype != np.bool_:
            raise TypeError(f"rule 'true' needs a bool or an array of bools, got {value!r}")
        if array.size == 0:
            raise ValueError("value is empty")
        false = np.flatnonzero(~array.ravel())
        if false.size == 0:
            return True, f"all {array.size} true" if array.ndim else "true"
        return False, f"{false.size} of {array.size} false (first at flat index {false[0]})"

    array = _numeric(value, "value")
    if np.isnan(array).any():
        return False, f"value contains NaN ({int(np.isnan(array).sum())} of {array.size})"

    if rule in _MONOTONE:
        return _monotone(rule, array)

    bound = _numeric(expect, "expect")
    if np.isnan(bound).any():
        raise ValueError(f"expect contains NaN: {expect!r}")
    try:
        array, bound = np.broadcast_arrays(array, bound)
    except ValueError:
        raise ValueError(
            f"value of shape {np.shape(array)} does not match expect of shape {np.shape(bound)}"
        ) from None
    if rule == "approx":
        allowed = np.maximum(tol or 0.0, (rtol or 0.0) * np.abs(bound))
        gap = np.abs(array - bound)
        ok = gap <= allowed
        worst = int(np.argmax(gap - allowed))
        where = f" at index {np.unravel_index(worst, gap.shape)}" if gap.ndim else ""
        sign = "≤" if ok.all() else ">"
        detail = f"|value − expect| = {fmt(gap.flat[worst])} {sign} {fmt(allowed.flat[worst])}"
        return bool(ok.all()), f"{'max ' if gap.ndim else ''}{detail}{where}"
    op, sign = (np.greater, ">") if rule == "greater" else (np.less, "<")
    ok = op(array, bound)
    if ok.all():
        return True, f"all {array.size} values {sign} bound" if array.ndim else "holds"
    bad = int(np.flatnonzero(~ok.ravel())[0])
    return False, (
        f"{int((~ok).sum())} of {array.size} fail; value {fmt(array.flat[bad])} is not "
        f"{sign} {fmt(bound.flat[bad])}" + (f" at flat index {bad}" if array.ndim else "")
    )


def margin(
    rule: str, value: Any, expect: Any = None, tol: float | None = None, rtol: float | None = None
) -> float | None:
    """How far a check's value is inside (> 0) or outside (< 0) its bound, in its own units.

    ``approx``: min of max(tol, rtol·|expect|) − |value − expect|; ``greater``/``less``: min of
    value − bound / bound − value; the monotone rules: the smallest step in the required
    direction. None for rule ``true`` (a boolean has no distance) and for values with NaN.
    Elementwise checks report their worst element, so a margin ≤ 0 is a failed check
    (a strict rule fails at 0).
    """
    if rule == "true":
        return None
    array = _numeric(value, "value")
    if np.isnan(array).any():
        return None
    if rule in _MONOTONE:
        steps = np.diff(array)
        return float(np.min(-steps if rule in ("non-increasing", "decreasing") else steps))
    bound = _numeric(expect, "expect")
    array, bound = np.broadcast_arrays(array, bound)
    if rule == "approx":
        allowed = np.maximum(tol or 0.0, (rtol or 0.0) * np.abs(bound))
        return float(np.min(allowed - np.abs(array - bound)))
    return float(np.min(array - bound if rule == "greater" else bound - array))


def _monotone(rule: str, array: np.ndarray) -> tuple[bool, str]:
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"rule {rule!r} needs a 1-D sequence of ≥ 2 values, got {array.shape}")
    op, sign = _MONOTONE[rule]
    ok = op(array[1:], array[:-1])
    if ok.all():
        return True, f"{rule} over {array.size} values"
    i = int(np.flatnonzero(~ok)[0])
    return False, (
        f"not {rule}: {int((~ok).sum())} of {array.size - 1} steps fail, first "
        f"value[{i + 1}] = {fmt(array[i + 1])} is not {sign} value[{i}] = {fmt(array[i])}"
    )
