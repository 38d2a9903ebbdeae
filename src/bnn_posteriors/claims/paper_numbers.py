"""The papers' reference numbers, read from the one data file ``paper_numbers.toml``.

:func:`load_references` returns the whole file (paper tag → table → values);
:func:`sap_table2` and :func:`sap_budgets` are the two tables chapter 8 compares with.
"""

from __future__ import annotations

import functools
import importlib.resources
import tomllib
from types import MappingProxyType


@functools.cache
def _text() -> str:
    return (
        importlib.resources.files("bnn_posteriors.claims")
        .joinpath("paper_numbers.toml")
        .read_text("utf-8")
    )


def load_references(*path: str) -> dict:
    """The parsed ``paper_numbers.toml`` (a fresh copy), or its sub-table at ``path``.

    ``load_references("SAP", "table2")`` is [SAP] Table 2. An unknown key raises
    ``KeyError`` naming the keys that exist there.
    """
    node = tomllib.loads(_text())
    for i, key in enumerate(path):
        if not isinstance(node, dict) or key not in node:
            known = sorted(node) if isinstance(node, dict) else []
            where = "/".join(path[:i]) or "the top level"
            raise KeyError(f"no reference {key!r} under {where}; known: {known}")
        node = node[key]
    return node


def sap_table2() -> MappingProxyType:
    """[SAP] Table 2: {dataset: {method: {"lppd" | "rmse": (mean, sd over 3 splits)}}}."""
    table = load_references("SAP", "table2")
    return MappingProxyType(
        {
            dataset: {
                method: {metric: tuple(value) for metric, value in scores.items()}
                for method, scores in by_method.items()
            }
            for dataset, by_method in table.items()
        }
    )


def sap_budgets() -> dict:
    """The budgets of [SAP] Table 2 (App. D.7) under chapter 8's setting names."""
    budgets = load_references("SAP", "table2_budgets")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in budgets.items()}
