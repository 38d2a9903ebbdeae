"""The rules of a claim check: whether a value satisfies its expectation, and by how much.

A rule is ``approx`` (within ``tol``/``rtol`` of ``expect``), ``greater``/``less`` (than the
bound ``expect``, strictly), ``at-least``/``at-most`` (the bound itself allowed: "no evidence
of harm" reads as an interval's lower end at most 0), one of the monotone rules over a
sequence, or ``true`` (booleans).
:func:`bnn_posteriors.claims.checking.check` validates a rule (:func:`validate`), decides it
(:func:`evaluate`, with a sentence in words: the measured values, named by their labels,
against the bound and by how much) and records its :func:`margin`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

RULES = (
    "approx",
    "greater",
    "less",
    "at-least",
    "at-most",
    "non-increasing",
    "non-decreasing",
    "increasing",
    "decreasing",
    "true",
)
_BOUNDS = {  # rule → (value above the bound?, strict?, its word)
    "greater": (True, True, "above"),
    "less": (False, True, "below"),
    "at-least": (True, False, "at least"),
    "at-most": (False, False, "at most"),
}
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
    if rule in _BOUNDS and expect is None:
        raise ValueError(f"rule {rule!r} needs expect= (the bound)")
    if rule in (*_MONOTONE, "true") and expect is not None:
        raise ValueError(f"rule {rule!r} takes no expect= (the rule is the expectation)")
    for name, bound in (("tol", tol), ("rtol", rtol)):
        if bound is not None and not (math.isfinite(bound) and bound >= 0):
            raise ValueError(f"{name} must be a finite number ≥ 0, got {bound!r}")


def validate_labels(value: Any, labels: Sequence[str] | None) -> tuple[str, ...] | None:
    """The element labels of a value as a tuple of strings (ValueError when their number
    is not the value's number of elements); None where none are given."""
    if labels is None:
        return None
    if isinstance(labels, str):
        raise TypeError(f"labels must be a sequence of strings, one per element, got {labels!r}")
    labels = tuple(str(label) for label in labels)
    size = np.asarray(value).size
    if len(labels) != size:
        raise ValueError(f"labels name {len(labels)} elements but the value has {size}: {labels!r}")
    return labels


def evaluate(
    rule: str,
    value: Any,
    expect: Any,
    tol: float | None,
    rtol: float | None,
    labels: Sequence[str] | None = None,
) -> tuple[bool, str]:
    """Whether ``value`` satisfies ``rule``, and a sentence saying why (or why not) in words:
    the measured values against the bound and by how much, each element of a vector named
    by its label ("H = 64: 0.6667, not above 1"), or as "value 2 of 4" where none is given.
    """
    labels = validate_labels(value, labels)
    if rule == "true":
        array = np.asarray(value)
        if array.dtype != np.bool_:
            raise TypeError(f"rule 'true' needs a bool or an array of bools, got {value!r}")
        if array.size == 0:
            raise ValueError("value is empty")
        flat = array.ravel()
        false = np.flatnonzero(~flat)
        if not array.ndim:
            return bool(flat[0]), "it holds" if flat[0] else "it does not hold"
        if false.size == 0:
            return True, f"all {array.size} hold"
        return False, (
            f"{false.size} of {array.size} do not hold: {_names(false, labels, array.size)}"
        )

    array = _numeric(value, "value")
    if np.isnan(array).any():
        nan = np.flatnonzero(np.isnan(array.ravel()))
        if not array.ndim:
            return False, "the value is NaN (no number was measured)"
        return False, f"NaN (no number) at {_names(nan, labels, array.size)}"

    if rule in _MONOTONE:
        return _monotone(rule, array, labels)

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
        ok = (gap <= allowed).ravel()
        items = [
            f"{fmt(v)}, {'within' if good else 'not within'} {fmt(a)} of {fmt(b)} (off by {fmt(g)})"
            for v, b, a, g, good in zip(
                array.ravel(), bound.ravel(), allowed.ravel(), gap.ravel(), ok, strict=True
            )
        ]
    else:
        upper, strict, word = _BOUNDS[rule]
        other = "below" if upper else "above"
        diff = (array - bound if upper else bound - array).ravel()
        ok = diff > 0 if strict else diff >= 0
        items = [
            f"{fmt(v)}, {word} {fmt(b)} by {fmt(d)}"
            if good and d > 0
            else f"{fmt(v)}, {word} {fmt(b)} (equal to it)"
            if good
            else f"{fmt(v)}, not {word} {fmt(b)}"
            + (f" ({fmt(-d)} {other} it)" if d < 0 else " (equal to it)")
            for v, b, d, good in zip(array.ravel(), bound.ravel(), diff, ok, strict=True)
        ]
    if not array.ndim:
        return bool(ok.all()), items[0]
    return bool(ok.all()), _elementwise(items, ok, labels)


def _name(i: int, labels: tuple[str, ...] | None, size: int) -> str:
    return labels[i] if labels is not None else f"value {i + 1} of {size}"


def _names(indices, labels: tuple[str, ...] | None, size: int, limit: int = 6) -> str:
    names = [_name(int(i), labels, size) for i in indices[:limit]]
    return ", ".join(names) + (f" and {len(indices) - limit} more" if len(indices) > limit else "")


def _elementwise(items: list[str], ok: np.ndarray, labels, limit: int = 8) -> str:
    """'all 4 hold: H = 8: 1.06, above 1 by 0.06; …' or '1 of 4 fail: H = 64: …; the others:
    …', the failing elements first, at most ``limit`` elements named."""
    size = len(items)
    bad = [i for i in range(size) if not ok[i]]
    good = [i for i in range(size) if ok[i]]

    def listed(indices: list[int]) -> str:
        shown = [f"{_name(i, labels, size)}: {items[i]}" for i in indices[:limit]]
        more = len(indices) - limit
        return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")

    if not bad:
        return f"all {size} hold: {listed(good)}"
    text = f"{len(bad)} of {size} fail: {listed(bad)}"
    return text + (f"; the others hold: {listed(good)}" if good else "")


def margin(
    rule: str, value: Any, expect: Any = None, tol: float | None = None, rtol: float | None = None
) -> float | None:
    """How far a check's value is inside (> 0) or outside (< 0) its bound, in its own units.

    ``approx``: min of max(tol, rtol·|expect|) − |value − expect|; ``greater``/``at-least``
    and ``less``/``at-most``: min of value − bound / bound − value; the monotone rules: the
    smallest step in the required direction. None for rule ``true`` (a boolean has no
    distance) and for values with NaN. Elementwise checks report their worst element, so a
    margin < 0 is a failed check (a strict rule fails at 0 too; ``at-least``/``at-most``
    hold there).
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
    upper = _BOUNDS[rule][0]
    return float(np.min(array - bound if upper else bound - array))


def _monotone(rule: str, array: np.ndarray, labels) -> tuple[bool, str]:
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"rule {rule!r} needs a 1-D sequence of ≥ 2 values, got {array.shape}")
    op, sign = _MONOTONE[rule]
    ok = op(array[1:], array[:-1])
    size = array.size
    span = f"({fmt(array[0])} → {fmt(array[-1])})"
    if labels is not None:
        span = f"{labels[0]} to {labels[-1]} {span}"
    steps = np.abs(np.diff(array))
    if ok.all():
        return True, f"{rule} over {size} values, {span}; the smallest step {fmt(steps.min())}"
    i = int(np.flatnonzero(~ok)[0])
    return False, (
        f"not {rule} over {span}: {int((~ok).sum())} of {size - 1} steps fail, the first "
        f"from {_name(i, labels, size)} ({fmt(array[i])}) to {_name(i + 1, labels, size)} "
        f"({fmt(array[i + 1])}), which is not {sign} it"
    )
