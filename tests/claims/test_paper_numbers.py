"""Tests of the papers' reference numbers (paper_numbers.toml)."""

from __future__ import annotations

import pytest

from bnn_posteriors.claims import paper_numbers as references
from bnn_posteriors.studies.ch08_benchmarks import run as benchmark


def test_sap_table2_is_complete():
    table = references.sap_table2()
    assert set(table) == set(benchmark.DATASETS)
    for by_method in table.values():
        assert set(by_method) == set(benchmark.METHODS)
        for scores in by_method.values():
            assert set(scores) == {"lppd", "rmse"}
            assert all(isinstance(s, tuple) and len(s) == 2 and s[1] >= 0 for s in scores.values())
    assert table["energy"]["bde10"] == {"lppd": (2.204, 0.024), "rmse": (0.032, 0.002)}
    assert benchmark.REFERENCE == table


def test_sap_budgets_and_lookup_errors():
    budgets = references.sap_budgets()
    assert (budgets["tuning_steps"], budgets["sampling_steps"]) == (50_000, 10_000)
    assert budgets["splits"] == (1, 2, 3)
    assert references.load_references("SAP", "table2", "airfoil", "mfvi")["lppd"] == [-0.975, 0.004]
    with pytest.raises(KeyError, match="no reference 'nope' under SAP; known"):
        references.load_references("SAP", "nope")
    # a fresh copy: changing it changes nothing
    references.load_references()["SAP"]["table2"].clear()
    assert references.sap_table2()
