"""The prove engine: exact verifiers proved, controls refuted, JSON fields as documented."""

from __future__ import annotations

import pytest

from verispec.errors import UsageError
from verispec.exact.prove import ProveBudget, prove, prove_one

SMALL = ProveBudget(
    instances=40,
    multi_round_instances=10,
    multi_round_tokens=3,
    search_examples=20,
    control_search_examples=1000,
)


class TestProveOne:
    def test_token_level_is_proved_symbolically(self) -> None:
        result = prove_one("token-level", SMALL)
        assert result.verdict == "proved" and result.proof == "symbolic" and result.ok
        data = result.to_json()
        assert {"name", "kind", "verdict", "instances"} <= set(data)
        assert data["kind"] == "exact" and data["instances"] == 40
        assert any(t["prover"] == "z3" for t in data["theorems"])

    def test_block_is_proved_by_bounded_enumeration(self) -> None:
        result = prove_one("block", SMALL)
        assert (result.verdict, result.proof) == ("proved", "bounded")
        assert "multi-round instances" in result.scope

    def test_control_is_refuted_with_counterexample_and_tv(self) -> None:
        data = prove_one("softmax-residual", SMALL).to_json()
        assert data["verdict"] == "refuted" and data["kind"] == "control"
        assert data["counterexample"]["vocab_size"] >= 2
        assert float(data["counterexample"]["tv_distance_float"]) > 0
        assert "certified" in data["tv_distance"]

    def test_escaping_control_is_unknown_not_a_pass(self) -> None:
        result = prove_one("missing-bonus", ProveBudget(control_search_examples=0))
        assert result.verdict == "unknown" and not result.ok
        assert "escaped" in result.reason


class TestProve:
    def test_unknown_name_fails_before_any_work(self) -> None:
        with pytest.raises(UsageError, match="did you mean 'block'"):
            prove(["blok"], SMALL)

    def test_parallel_and_serial_agree(self) -> None:
        names = ["greedy", "resample-target"]
        serial = [r.to_json() for r in prove(names, SMALL, jobs=1)]
        parallel = [r.to_json() for r in prove(names, SMALL, jobs=2)]
        for a, b in zip(serial, parallel, strict=True):
            a.pop("seconds"), b.pop("seconds")
        assert serial == parallel

    def test_bad_budget(self) -> None:
        with pytest.raises(UsageError, match=r"^instances=-1 must be a non-negative integer$"):
            ProveBudget(instances=-1)
