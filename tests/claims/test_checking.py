"""Tests of bnn_posteriors.claims.checking: rules, records, locking, catalogue."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnn_posteriors.claims import checking as claims
from bnn_posteriors.site import profiles

RECORD_FIELDS = {
    "id",
    "chapter",
    "profile",
    "seed",
    "value",
    "expect",
    "rule",
    "part",
    "statistic",
    "tol",
    "reproduced",
    "status",
    "locked",
    "message",
    "says",
    "gate",
    "finding",
    "committed",
    "note",
    "time",
    "git_commit",
    "host",
    "versions",
}


@pytest.fixture(autouse=True)
def claims_dir(tmp_path, monkeypatch):
    """Every test writes its records under tmp_path, in the quick profile."""
    directory = tmp_path / "claims"
    monkeypatch.setenv("BNN_CLAIMS_DIR", str(directory))
    monkeypatch.setenv("BNN_PROFILE", "quick")
    monkeypatch.delenv("BNN_SEED", raising=False)
    return directory


def lock(monkeypatch, claim_id: str, status: str) -> None:
    """Make the catalogue lock ``claim_id`` at ``status``."""
    original = claims._read_catalogue()

    def relocked(claim: dict) -> dict:  # its parts lose their own locks: all at the claim's
        checks = [{k: v for k, v in e.items() if k != "locked"} for e in claim.get("check", [])]
        return {**claim, "locked": status, "check": checks}

    patched = tuple(relocked(c) if c["id"] == claim_id else c for c in original)
    monkeypatch.setattr(claims, "_read_catalogue", lambda: patched)


@pytest.fixture
def ruled(catalogue_rules):
    """``ruled("C1.1", "approx", 0.777, tol=1e-3)`` gives the claim one check (part "p") with
    that rule, bound and tolerance in the catalogue."""

    def give(claim_id: str, rule: str, bound=None, **keywords) -> None:
        entry = {"part": "p", "rule": rule, **keywords}
        if bound is not None:
            entry["bound"] = bound.tolist() if isinstance(bound, np.ndarray) else bound
        catalogue_rules({claim_id: [entry]})

    return give


# (rule, value, expect, keywords) that hold, and the same rule on inputs where it fails.
PASSING = [
    ("approx", 0.7771, 0.777, {"tol": 1e-3}),
    ("approx", 101.0, 100.0, {"rtol": 0.02}),
    ("approx", [1.0, 2.0], [1.0, 2.0005], {"tol": 1e-3}),
    ("approx", np.array([1.0, 2.0]), 1.5, {"tol": 0.5}),
    ("greater", 0.6, 0.5, {}),
    ("greater", [2.0, 3.0], [1.0, 2.0], {}),
    ("less", 0.01, 0.05, {}),
    ("at-least", [0.5, 0.6], 0.5, {}),
    ("at-most", [0.0, -1.0], 0.0, {}),
    ("non-increasing", [3.0, 2.0, 2.0, 1.0], None, {}),
    ("non-decreasing", [1, 1, 2], None, {}),
    ("increasing", [0.1, 0.2, 0.3], None, {}),
    ("decreasing", np.array([3.0, 2.0, 1.0]), None, {}),
    ("true", True, None, {}),
    ("true", np.array([True, True]), None, {}),
]
FAILING = [
    ("approx", 0.79, 0.777, {"tol": 1e-3}),
    ("approx", 103.0, 100.0, {"rtol": 0.02}),
    ("approx", [1.0, 2.0], [1.0, 2.1], {"tol": 1e-3}),
    ("approx", np.array([1.0, 2.0]), 1.5, {"tol": 0.4}),
    ("greater", 0.5, 0.5, {}),
    ("greater", [2.0, 1.0], [1.0, 2.0], {}),
    ("less", 0.05, 0.05, {}),
    ("at-least", [0.5, 0.49], 0.5, {}),
    ("at-most", 0.001, 0.0, {}),
    ("non-increasing", [3.0, 2.0, 2.5], None, {}),
    ("non-decreasing", [1, 0, 2], None, {}),
    ("increasing", [0.1, 0.2, 0.2], None, {}),
    ("decreasing", np.array([3.0, 3.0, 1.0]), None, {}),
    ("true", False, None, {}),
    ("true", np.array([True, False]), None, {}),
]


@pytest.mark.parametrize(("rule", "value", "expect", "kw"), PASSING)
def test_rule_passes(rule, value, expect, kw, ruled):
    ruled("C1.1", rule, expect, **kw)
    record = claims.check("C1.1", value)
    assert record["reproduced"] is True
    assert record["status"] == "reproduced"


@pytest.mark.parametrize(("rule", "value", "expect", "kw"), FAILING)
def test_rule_fails(rule, value, expect, kw, monkeypatch, ruled):
    ruled("C1.1", rule, expect, **kw)
    lock(monkeypatch, "C1.1", "not reproduced")
    record = claims.check("C1.1", value)
    assert record["reproduced"] is False
    assert record["status"] == "not reproduced"
    assert record["message"]


def test_jax_values_are_checked_and_recorded_as_plain_python(catalogue_rules):
    jnp = pytest.importorskip("jax.numpy")
    catalogue_rules(
        {"C1.1": [{"part": "p", "rule": "approx", "bound_measured": "the same", "tol": 1e-6}]}
    )
    record = claims.check("C1.1", jnp.array([1.0, 2.0]), bound=jnp.array([1.0, 2.0]))
    assert record["reproduced"] is True
    assert record["value"] == [1.0, 2.0]
    assert json.loads(json.dumps(record)) == record


def test_floats_are_rounded_in_the_record(ruled):
    ruled("C1.1", "approx", 1 / 3, tol=1e-9)
    record = claims.check("C1.1", 1 / 3)
    assert record["value"] == 0.333333
    assert record["reproduced"] is True  # the check itself uses full precision


def test_nan_does_not_reproduce(monkeypatch, catalogue_rules):
    catalogue_rules(
        {
            "C1.1": [
                {"part": "near", "rule": "approx", "bound": 1.0, "tol": 1.0},
                {"part": "falling", "rule": "non-increasing"},
            ]
        }
    )
    lock(monkeypatch, "C1.1", "not reproduced")
    record = claims.check("C1.1", float("nan"), part="near")
    assert record["status"] == "not reproduced"
    assert "NaN" in record["message"]
    assert record["value"] == "NaN"
    record = claims.check("C1.1", [1.0, np.nan], part="falling")
    assert record["status"] == "not reproduced" and "NaN" in record["message"]


def test_violated_claim_raises_and_records(claims_dir, ruled):
    ruled("C1.4", "approx", 1.0, tol=0.05)
    with pytest.raises(claims.ClaimError) as raised:
        claims.check("C1.4", 1.2)
    assert isinstance(raised.value, AssertionError)
    text = str(raised.value)
    for part in ("C1.4", "AM-GM in the MFVI KL", "1.2", "not reproduced", "claims/catalogue/"):
        assert part in text
    assert "explained in the chapter" in text
    (line,) = (claims_dir / "quick" / "01.jsonl").read_text().splitlines()
    assert json.loads(line)["status"] == "not reproduced"


def test_locked_not_reproduced(monkeypatch, ruled):
    ruled("C1.5", "non-increasing")
    lock(monkeypatch, "C1.5", "not reproduced")
    record = claims.check("C1.5", [1.0, 2.0])
    assert record["status"] == "not reproduced"
    assert record["locked"] == "not reproduced"
    with pytest.raises(claims.ClaimError, match="locks 'not reproduced'"):
        claims.check("C1.5", [2.0, 1.0])


@pytest.mark.parametrize(
    ("entry", "match"),
    [
        ({"rule": "roughly", "bound": 1.0}, "non-increasing"),
        ({"rule": "approx", "bound": 1.0}, "tol"),
        ({"rule": "approx", "tol": 0.1}, "expect"),
        ({"rule": "greater"}, "expect"),
        ({"rule": "increasing", "tol": 0.1}, "approx"),
        ({"rule": "approx", "bound": 1.0, "tol": -1.0}, "tol"),
        ({"rule": "less", "bound": 1.0, "bound_measured": "the MAP's"}, "both bound"),
        ({"rule": "less", "bound": 1.0, "spread": 2}, "unknown keys"),
        ({"rule": "less", "bound": 1.0, "finding": "nowhere"}, "does not lock"),
        ({"rule": "less", "bound": 1.0, "statistic": ""}, "statistic"),
    ],
)
def test_a_bad_rule_in_the_catalogue_is_named(entry, match, catalogue_rules):
    with pytest.raises(ValueError, match=match) as raised:
        catalogue_rules({"C1.1": [{"part": "p", **entry}]})
    assert "claim C1.1, check 'p'" in str(raised.value)


def test_a_claims_parts_are_unique(catalogue_rules):
    entry = {"part": "p", "rule": "true"}
    with pytest.raises(ValueError, match="repeats a part"):
        catalogue_rules({"C1.1": [entry, entry]})


@pytest.mark.parametrize(
    ("args", "kw", "match"),
    [
        (("C9.9", 1.0), {}, "unknown claim id"),
        (("C1.1", [1.0]), {}, "≥ 2"),
        (("C1.1", [1.0, 2.0]), {"part": "near", "bound": [1.0, 2.0, 3.0]}, "shape"),
        (("C1.1", 1.0), {"part": "near"}, "pass it as bound="),
        (("C1.1", 1.0), {"part": "rising", "bound": 2.0}, "do not pass bound="),
        (("C1.1", 1.0), {"part": "other"}, "its parts: \\['rising', 'near'\\]"),
    ],
)
def test_invalid_calls_raise_value_error(args, kw, match, claims_dir, catalogue_rules):
    catalogue_rules(
        {
            "C1.1": [
                {"part": "rising", "rule": "increasing"},
                {"part": "near", "rule": "approx", "bound_measured": "the other's", "tol": 0.1},
            ]
        }
    )
    kw = {"part": "rising", **kw}
    with pytest.raises(ValueError, match=match):
        claims.check(*args, **kw)
    assert not claims_dir.exists()  # nothing recorded for a wrong call


def test_a_claim_with_several_checks_needs_the_part_named(catalogue_rules):
    catalogue_rules({"C1.1": [{"part": "a", "rule": "true"}, {"part": "b", "rule": "true"}]})
    with pytest.raises(ValueError, match="name one: part="):
        claims.check("C1.1", True)
    assert claims.check("C1.1", True, part="b")["part"] == "b"


def test_the_rule_is_read_from_the_catalogue_and_a_bound_changed_there_changes_the_outcome(
    monkeypatch, catalogue_rules
):
    """The check decides by the catalogue's entry: the same measured value, the bound moved
    in the catalogue, the other outcome (and the record says which rule decided). Run on the
    first check of the real catalogue with a fixed scalar upper bound."""
    claim_id, entry = next(
        (claim["id"], entry)
        for claim in claims.catalogue()
        for entry in claim.get("check", [])
        if entry["rule"] == "less"
        and isinstance(entry.get("bound"), int | float)
        and not entry.get("finding")
    )
    inside = entry["bound"] - 1.0
    lock(monkeypatch, claim_id, claims.REPRODUCED)
    record = claims.check(claim_id, inside, part=entry["part"])
    assert record["status"] == claims.REPRODUCED
    assert (record["rule"], record["expect"], record["part"], record["statistic"]) == (
        "less",
        entry["bound"],
        entry["part"],
        entry["statistic"],
    )
    assert claims.verdict(claim_id, inside, part=entry["part"])[0] is True
    others = next(c for c in claims.catalogue() if c["id"] == claim_id)["check"]
    moved = [{**e, "bound": inside - 1.0} if e["part"] == entry["part"] else e for e in others]
    catalogue_rules({claim_id: moved})
    assert claims.verdict(claim_id, inside, part=entry["part"])[0] is False
    lock(monkeypatch, claim_id, claims.NOT_REPRODUCED)
    record = claims.check(claim_id, inside, part=entry["part"])
    assert record["status"] == claims.NOT_REPRODUCED
    assert record["expect"] == pytest.approx(inside - 1.0, rel=1e-5)


def test_every_claim_has_its_rules_in_the_catalogue():
    for claim in claims.catalogue():
        assert claim.get("check"), f"{claim['id']} has no [[claim.check]]"
        for entry in claim["check"]:
            assert claims.catalogue_check(claim["id"], entry["part"]) == entry


def test_a_record_is_stale_when_the_catalogue_rule_changed(catalogue_rules):
    catalogue_rules({"C1.1": [{"part": "p", "rule": "less", "bound": 1e-12}]})
    record = dict(claims.check("C1.1", 0.0))
    assert not claims.rule_changed(record)
    assert not claims.rule_changed({**record, "part": None})  # older records: no part to compare
    entry = claims.catalogue_check("C1.1")
    catalogue_rules({"C1.1": [{**entry, "bound": entry["bound"] * 10}]})
    assert claims.rule_changed(record)
    catalogue_rules({"C1.1": [{**entry, "part": "renamed"}]})
    assert claims.rule_changed(record)
    # the same rule and bound on another measurement: the record measured the old one
    catalogue_rules({"C1.1": [{**entry, "statistic": "measured anew"}]})
    assert claims.rule_changed(record)
    assert not claims.rule_changed({k: v for k, v in record.items() if k != "statistic"})


def test_rule_true_needs_bools(ruled):
    ruled("C1.1", "true")
    with pytest.raises(TypeError, match="bool"):
        claims.check("C1.1", 1.0)


def test_record_fields_and_path(claims_dir, ruled):
    ruled("C1.4", "approx", 0.5, tol=0.01)
    record = claims.check("C1.4", 0.5, note="n = 20", seed=7)
    assert RECORD_FIELDS <= set(record)
    assert record["id"] == "C1.4" and record["chapter"] == 1 and record["profile"] == "quick"
    assert record["seed"] == 7 and record["note"] == "n = 20" and record["locked"] == "reproduced"
    assert set(record["versions"]) == {"jax", "numpyro", "blackjax", "python"}
    assert record["time"].endswith("+00:00")
    path = claims_dir / "quick" / "01.jsonl"
    assert json.loads(path.read_text()) == record
    assert claims.record_path("C3.4", "full", claims_dir) == claims_dir / "full" / "03.jsonl"


@pytest.fixture
def true_rules(catalogue_rules):
    catalogue_rules({c: [{"part": "p", "rule": "true"}] for c in ("C1.1", "C1.3", "C2.1")})


def test_seed_from_environment(monkeypatch, true_rules):
    monkeypatch.setenv("BNN_SEED", "11")
    assert claims.check("C1.1", True)["seed"] == 11


def test_seed_defaults_to_the_chapters_seed(monkeypatch, true_rules):
    monkeypatch.delenv("BNN_SEED", raising=False)
    expected = profiles.chapter_seed("01_narrow_networks")
    assert claims.check("C1.1", True)["seed"] == expected


def test_checks_of_one_run_share_a_run_id(true_rules):
    first = claims.check("C1.1", True)
    second = claims.check("C1.3", True)
    assert first["run"] == second["run"] == claims.RUN_ID


def test_profile_from_environment(monkeypatch, claims_dir, true_rules):
    monkeypatch.setenv("BNN_PROFILE", "full")
    claims.check("C2.1", True)
    assert (claims_dir / "full" / "02.jsonl").is_file()


def test_load_records_reads_every_folder(tmp_path, claims_dir, true_rules):
    claims.check("C1.1", True)
    committed = tmp_path / "results"
    claims.append_record({**claims.check("C2.1", True), "profile": "full"}, committed)
    records = claims.load_records([claims_dir, committed, claims_dir])
    assert sorted((r["id"], r["profile"]) for r in records) == [
        ("C1.1", "quick"),
        ("C2.1", "full"),
        ("C2.1", "quick"),
    ]


def test_malformed_line_names_file_and_line(claims_dir, true_rules):
    claims.check("C1.1", True)
    path = claims_dir / "quick" / "01.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(ValueError, match=r"01\.jsonl:2"):
        claims.load_records([claims_dir])


def test_catalogue_is_ordered_and_complete():
    catalogue = claims.catalogue()
    ids = [c["id"] for c in catalogue]
    assert len(ids) == len(set(ids)) == 58
    assert ids[0] == "C1.1" and ids[-1] == "C10.5"
    assert all(c["locked"] in claims.STATUSES for c in catalogue)
    assert all(claims.chapter_of(c["id"]) == c["chapter"] for c in catalogue)


def test_the_catalogue_quotes_each_papers_sentence_with_the_books_reading():
    """The specification lives in the repository: the paper's sentence, the reading, why."""
    for claim in claims.catalogue():
        for field in ("sentence", "reading", "faithful", "source"):
            assert str(claim.get(field, "")).strip(), f"{claim['id']} has no {field}"


def test_a_failed_gate_makes_the_check_inconclusive_whatever_the_rule_finds(monkeypatch, ruled):
    ruled("C2.2", "greater", 1.0)
    lock(monkeypatch, "C2.2", "inconclusive")
    gate = claims.Gate(False, "the chains did not mix (median ESS 11 of 5 000)", "longer chains")
    record = claims.check("C2.2", 2.0, gate=gate)
    assert record["status"] == claims.INCONCLUSIVE and record["reproduced"] is True
    assert record["gate"] == {"passed": False, "why": gate.why, "decide": gate.decide}
    words = claims.in_words(record)
    assert words.startswith("the chains did not mix") and "longer chains" in words
    assert "cannot decide" in claims.summary_line(record)
    # the same gate passed: the rule decides, and a status off the lock raises
    with pytest.raises(claims.ClaimError, match="locks 'inconclusive'"):
        claims.check("C2.2", 2.0, gate=claims.Gate(True, "ok", "-"))


def test_a_gate_needs_a_bool_a_reason_and_what_would_decide(ruled):
    ruled("C1.1", "approx", 0.0, tol=1.0)
    with pytest.raises(TypeError, match="bool"):
        claims.Gate("no", "why", "decide")
    with pytest.raises(ValueError, match="why="):
        claims.Gate(False, "", "decide")
    with pytest.raises(TypeError, match="claims.Gate"):
        claims.check("C1.1", 0.0, gate=(False, "why", "decide"))


def test_a_further_finding_has_its_own_lock(monkeypatch, catalogue_rules):
    original = claims._read_catalogue()
    patched = tuple(
        {**c, "findings": {"stronger-baseline": "not reproduced"}} if c["id"] == "C1.4" else c
        for c in original
    )
    monkeypatch.setattr(claims, "_read_catalogue", lambda: patched)
    catalogue_rules(
        {
            "C1.4": [
                {"part": "claim", "rule": "less", "bound": 1.0},
                {"part": "x", "rule": "less", "bound": 1.0, "finding": "stronger-baseline"},
            ]
        }
    )
    record = claims.check("C1.4", 2.0, part="x", says="it loses")
    assert record["finding"] == "stronger-baseline" and record["locked"] == "not reproduced"
    assert claims.in_words(record) == "it loses"
    assert claims.summary_line(record).startswith("C1.4 [stronger-baseline] not reproduced")
    with pytest.raises(claims.ClaimError, match="further finding 'stronger-baseline'"):
        claims.check("C1.4", 0.0, part="x")
    assert claims.check("C1.4", 0.0, part="claim")["finding"] is None


def test_a_bad_lock_in_the_catalogue_is_named():
    claim = {"id": "C1.1", "chapter": 1, "title": "t", "source": "s", "locked": "maybe"}
    with pytest.raises(ValueError, match="claim C1.1 is locked as 'maybe'"):
        claims.validated((claim,))
    finding = {**claim, "locked": "reproduced", "findings": {"x": "perhaps"}}
    with pytest.raises(ValueError, match="finding 'x' of claim C1.1 is locked as 'perhaps'"):
        claims.validated((finding,))
    with pytest.raises(ValueError, match="lacks"):
        claims.validated(({"id": "C1.1"},))


def test_check_returns_a_record_that_prints_as_one_line(tmp_path, monkeypatch, ruled):
    from IPython.lib.pretty import pretty

    ruled("C1.1", "approx", 0.0, tol=1e-12)
    monkeypatch.setenv("BNN_CLAIMS_DIR", str(tmp_path))
    record = claims.check("C1.1", 1e-15, note="n")
    assert isinstance(record, dict) and record["status"] == "reproduced"
    line = pretty(record)
    assert line == "C1.1 reproduced: 1e-15, within 1e-12 of 0 (off by 1e-15)"
    assert "\n" not in line


@pytest.mark.parametrize(
    ("rule", "value", "expect", "tol", "margin"),
    [
        ("approx", 0.78, 0.777, 0.01, 0.007),
        ("approx", [0.0, 0.5], 0.0, 0.1, -0.4),
        ("greater", [3.0, 1.5], 1.0, None, 0.5),
        ("less", 0.2, 1.0, None, 0.8),
        ("at-most", [0.0, -0.5], 0.0, None, 0.0),
        ("at-least", [0.3, 1.5], 0.5, None, -0.2),
        ("non-increasing", [3.0, 2.0, 1.5], None, None, 0.5),
        ("increasing", [1.0, 1.2, 1.1], None, None, -0.1),
        ("true", [True, False], None, None, None),
    ],
)
def test_margin_in_the_checks_units(rule, value, expect, tol, margin):
    found = claims.margin(rule, value, expect, tol)
    assert found == (None if margin is None else pytest.approx(margin))


def test_margin_sign_agrees_with_the_status(claims_dir, ruled):
    """A check with a positive margin holds; a negative margin is a failure."""
    ruled("C3.4", "approx", 0.777, tol=0.01)
    held = claims.check("C3.4", 0.78)
    assert held["margin"] > 0 and held["status"] == claims.REPRODUCED
    with pytest.raises(claims.ClaimError):
        claims.check("C3.4", 0.9)
    failed = claims.read_jsonl(claims_dir / "quick" / "03.jsonl")[-1]
    assert failed["margin"] < 0 and failed["status"] == claims.NOT_REPRODUCED


def test_record_only_mode_records_without_raising(claims_dir, monkeypatch, ruled):
    ruled("C3.4", "approx", 0.777, tol=0.01)
    monkeypatch.setenv("BNN_CLAIMS_RECORD_ONLY", "1")
    record = claims.check("C3.4", 0.9)
    assert record["status"] == claims.NOT_REPRODUCED  # recorded, not raised
    monkeypatch.setenv("BNN_CLAIMS_RECORD_ONLY", "0")
    with pytest.raises(claims.ClaimError):
        claims.check("C3.4", 0.9)


def test_a_finding_without_words_is_said_by_its_note_value_and_expectation(claims_dir, ruled):
    ruled("C1.1", "approx", 0.0, tol=1e-12)
    record = claims.check("C1.1", 1e-15, note="max change of the NLL")
    words = claims.in_words(record)
    assert words == "max change of the NLL: 1e-15, within 1e-12 of 0 (off by 1e-15)"


def test_show_and_check_glues_shows_and_checks_each_evidence(monkeypatch, ruled):
    ruled("C1.1", "approx", 0.0, tol=1e-12)
    glued, shown = {}, []
    monkeypatch.setattr("bnn_posteriors.site.tables.glue_values", glued.update)
    monkeypatch.setattr("IPython.display.display", shown.append)
    gate = claims.Gate(passed=True, why="enough draws", decide="more draws")
    evidence = claims.Evidence(
        "C1.1",
        0.0,
        note="n",
        says="s",
        gate=gate,
        glue={"orbit_dev_max": 0.0},
        table="| a |\n|---|\n| 1 |",
    )
    (record,) = claims.show_and_check(evidence)
    assert record["status"] == "reproduced" and record["gate"]["why"] == "enough draws"
    assert (record["note"], record["says"], record["tol"]) == ("n", "s", 1e-12)
    assert glued == {"orbit_dev_max": 0.0}
    assert shown[0].data == "| a |\n|---|\n| 1 |"  # the table, then the outcome below it
    assert shown[1] is record and len(shown) == 2
    # shown once: a cell that ends with the records displays nothing more
    returned = claims.show_and_check(claims.Evidence("C1.1", 0.0))
    assert returned._ipython_display_() is None and len(shown) == 3
    lock(monkeypatch, "C1.1", "reproduced")
    with pytest.raises(claims.ClaimError):  # a wrong value unlocks, as with check()
        claims.show_and_check(claims.Evidence("C1.1", 1.0))
    with pytest.raises(TypeError, match="takes Evidence"):
        claims.show_and_check({"claim": "C1.1"})


def test_the_records_of_several_checks_show_one_line_each_in_a_console(ruled):
    from IPython.lib.pretty import pretty

    ruled("C1.1", "approx", 0.0, tol=1e-12)
    records = claims.show_and_check(
        claims.Evidence("C1.1", 0.0),
        claims.Evidence("C1.1", 0.0),
    )
    assert pretty(records).splitlines() == [claims.summary_line(r) for r in records]


def test_a_vector_finding_names_its_elements_by_their_labels(claims_dir, monkeypatch, ruled):
    ruled("C2.2", "greater", 1.0)
    lock(monkeypatch, "C2.2", "not reproduced")
    widths = ["H = 8", "H = 64"]
    record = claims.check("C2.2", [1.0625, 0.6667], labels=widths, note="ratio")
    assert record["labels"] == widths
    words = claims.in_words(record)
    assert words.startswith("ratio: 1 of 2 fail: H = 64: 0.6667, not above 1 (0.3333 below it)")
    assert "H = 8: 1.062, above 1 by 0.0625" in words
    assert "index" not in words and "index" not in record["message"]
    # a record without labels names its elements in words, never by a flat index
    unnamed = {**record, "labels": None}
    assert "value 2 of 2: 0.6667" in claims.in_words(unnamed)
    with pytest.raises(ValueError, match="labels name 1 elements but the value has 2"):
        claims.check("C2.2", [1.0, 2.0], labels=["H = 8"])


def test_the_words_of_an_old_record_are_derived_from_its_values():
    """Records written before the rules spoke in words read like today's."""
    old = {
        "id": "C2.2",
        "status": "not reproduced",
        "rule": "greater",
        "expect": 1,
        "value": [1.0625, 0.666667],
        "tol": None,
        "rtol": None,
        "message": "1 of 2 fail; value 0.6667 is not > 1 at flat index 1",
    }
    words = claims.result_in_words(old)
    assert "flat index" not in words and words.startswith("1 of 2 fail: value 2 of 2: 0.6667")
    assert claims.result_in_words({**old, "value": ["NaN"]}).startswith("NaN")


@pytest.mark.parametrize(
    ("status", "mark"), [("reproduced", "✓"), ("not reproduced", "✗"), ("inconclusive", "?")]
)
def test_an_outcome_shows_as_a_styled_block_in_words(claims_dir, monkeypatch, status, mark, ruled):
    ruled("C3.4", "approx", 0.777, tol=0.01, statistic="the root")
    lock(monkeypatch, "C3.4", status)
    value = 0.9 if status == "not reproduced" else 0.78
    gate = claims.Gate(passed=False, why="the chains did not mix", decide="longer chains")
    record = claims.check(
        "C3.4",
        value,
        note="the root <r>",
        gate=gate if status == "inconclusive" else None,
    )
    block = record._repr_html_()
    assert block.startswith(f'<div class="claim-outcome claim-{status.replace(" ", "-")}"')
    assert f">{mark}</span> <strong>C3.4</strong> · {status}" in block
    assert claims._claim("C3.4")["title"].split()[0] in block
    assert "<strong>Finding:</strong> The root &lt;r&gt;." in block  # escaped, a sentence
    off = abs(value - 0.777)
    within = "within" if status != "not reproduced" else "not within"
    assert (
        f"Measured:</strong> The root: {claims.claim_rules.fmt(value)}, {within} 0.01 of 0.777 "
        f"(off by {off:.4g})" in block
    )
    assert ("What would decide it:</strong> Longer chains." in block) == (status == "inconclusive")
    records = claims.Records([record, record])
    assert records._repr_html_().count('<div class="claim-outcome') == 2


def test_the_non_strict_rules_hold_at_the_bound_and_say_so():
    ok, words = claims.claim_rules.evaluate("at-most", [0.0, -0.25], 0.0, None, None, ["a", "b"])
    assert (
        ok and "a: 0, at most 0 (equal to it)" in words and "b: -0.25, at most 0 by 0.25" in words
    )
    ok, words = claims.claim_rules.evaluate("at-least", 0.4, 0.5, None, None)
    assert not ok and words == "0.4, not at least 0.5 (0.1 below it)"
    assert claims.expectation({"rule": "at-most", "expect": 0.0}) == "≤ 0"


def test_a_part_carries_its_own_lock_and_the_claims_lock_combines_them(
    monkeypatch, catalogue_rules, claims_dir
):
    """A sentence that says several things: one part holds, another does not; the claim is
    not reproduced, each part is locked at its own status, and the catalogue refuses a claim
    lock that is not the combination of its parts'."""
    lock(monkeypatch, "C1.1", claims.NOT_REPRODUCED)
    catalogue_rules(
        {
            "C1.1": [
                {"part": "holds", "rule": "true", "locked": claims.REPRODUCED},
                {"part": "fails", "rule": "true"},
            ]
        }
    )
    assert claims.part_lock("C1.1", "holds") == claims.REPRODUCED
    assert claims.part_lock("C1.1", "fails") == claims.NOT_REPRODUCED
    assert claims.check("C1.1", True, part="holds")["locked"] == claims.REPRODUCED
    assert claims.check("C1.1", False, part="fails")["status"] == claims.NOT_REPRODUCED
    with pytest.raises(claims.ClaimError, match="locks 'reproduced'"):
        claims.check("C1.1", False, part="holds")
    with pytest.raises(ValueError, match="combine to 'reproduced'"):
        catalogue_rules({"C1.1": [{"part": "holds", "rule": "true", "locked": "reproduced"}]})
    with pytest.raises(ValueError, match="may carry its own lock"):
        catalogue_rules({"C1.1": [{"part": "p", "rule": "true", "locked": "perhaps"}]})
    assert [claims.combined(s) for s in (["reproduced"], ["reproduced", "inconclusive"])] == [
        "reproduced",
        "inconclusive",
    ]
    assert claims.combined(["inconclusive", "not reproduced"]) == "not reproduced"


def test_an_evidence_says_its_verdict_by_the_catalogue_rule(ruled):
    ruled("C1.1", "less", 1.0)
    assert claims.Evidence("C1.1", 0.5).verdict() == (True, "0.5, below 1 by 0.5")
    assert claims.Evidence("C1.1", 2.0).verdict()[0] is False
