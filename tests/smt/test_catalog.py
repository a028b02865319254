"""The conventions catalog: every convention gets the verdict the issue states."""

from __future__ import annotations

import pytest

from verispec.smt.catalog import CATALOG, run_catalog
from verispec.smt.obligations import check

EXPECTED = {
    "top-left-mask": "refuted",
    "bottom-right-mask": "proved",
    "position-mask": "proved",
    "position-mask-stale": "refuted",
    "crop": "proved",
    "crop-plus-one": "refuted",
    "crop-full": "refuted",
    "crop-negative-slice": "refuted",
    "draft-sync-no-catch-up": "refuted",
    "positions-reset": "refuted",
    "compaction-ascending": "proved",
    "compaction-descending": "refuted",
    "batch-offsets-shared": "refuted",
    "tree-mask-siblings": "refuted",
}


def test_the_issue_conventions_are_catalogued_with_their_verdicts() -> None:
    by_name = {e.name: e for e in CATALOG}
    for name, verdict in EXPECTED.items():
        assert by_name[name].expected == verdict, name


@pytest.fixture(scope="module")
def results():
    return {r.entry.name: r for r in run_catalog()}


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.name)
def test_verdict_as_expected(entry, results) -> None:
    result = results[entry.name]
    assert result.result.verdict.kind == entry.expected, result.to_json()
    if entry.expected == "refuted":
        assert result.result.counterexample, "a refutation carries its counterexample"


def test_counterexamples_are_small(results) -> None:
    assert results["top-left-mask"].result.counterexample == {"L": 2, "gamma": 0, "row": 0, "key": 1}
    assert results["draft-sync-no-catch-up"].result.counterexample == {"L": 1, "gamma": 1, "accepted": 1}
    assert results["tree-mask-siblings"].result.counterexample == {"case": "3 nodes", "parents": [-1, 0, 0]}


class TestCheckReportsMisuse:
    def test_non_boolean_result_is_unknown_naming_the_function(self) -> None:
        result = check("visibility", lambda row, key, L, gamma: L + key)
        assert result.verdict.kind == "unknown"
        assert "where a boolean is required" in result.verdict.reason

    def test_python_control_flow_is_unknown_never_proved(self) -> None:
        def branchy(row, key, L, gamma):
            return key <= L - 1 + row if row >= 0 else False

        result = check("visibility", branchy)
        assert result.verdict.kind == "unknown" and result.not_symbolic
        assert "cannot be evaluated symbolically" in result.verdict.reason

    def test_floor_division_on_z3_terms_is_explained(self) -> None:
        result = check("paged-crop", lambda n, b: (n + b - 1) // b)
        assert result.verdict.kind == "unknown"
        assert "operation z3 cannot interpret" in result.verdict.reason

    def test_solver_timeout_is_unknown(self) -> None:
        result = check(
            "tree-visibility", __import__("verispec.smt.index", fromlist=["x"]).tree_visible, timeout_ms=1
        )
        assert result.verdict.kind in ("unknown", "proved")  # 1 ms may or may not suffice, never refuted
        assert result.verdict.kind != "refuted"
