"""Counterexample search shrinks to small, reproducible, exact refutations."""

from __future__ import annotations

from fractions import Fraction

from verispec.core.transforms import SamplingConfig
from verispec.exact.search import find_counterexample, random_instances
from verispec.verifiers import registry


class TestFindCounterexample:
    def test_resample_target_shrinks_to_two_tokens_one_draft(self) -> None:
        cx = find_counterexample(registry.get("resample-target"), max_examples=500)
        assert cx is not None
        assert cx.kind == "law"
        assert (cx.instance.vocab_size, cx.instance.gamma) == (2, 1)
        assert cx.tv_distance > 0

    def test_is_reproducible(self) -> None:
        a = find_counterexample(registry.get("reused-uniform"), max_examples=500)
        b = find_counterexample(registry.get("reused-uniform"), max_examples=500)
        assert a is not None and b is not None
        assert a.to_json() == b.to_json()

    def test_report_prints_instance_laws_and_tv(self) -> None:
        cx = find_counterexample(registry.get("greedy-draft-softmax-q"), max_examples=200)
        assert cx is not None
        text = cx.format()
        assert text.startswith("counterexample for 'greedy-draft-softmax-q' (law):")
        assert "exact round law (block: probability)" in text
        assert "first token: output" in text
        assert "total-variation distance: 1/2 (0.5)" in text
        data = cx.to_json()
        assert data["tv_distance"] == "1/2"
        assert sum(Fraction(v) for v in data["round_law"].values()) == 1

    def test_missing_bonus_is_an_accounting_refutation(self) -> None:
        cx = find_counterexample(registry.get("missing-bonus"), max_examples=200)
        assert cx is not None and cx.kind == "accounting"
        assert "round contract is broken" in cx.format()

    def test_exact_verifier_has_no_counterexample(self) -> None:
        assert find_counterexample(registry.get("token-level"), max_examples=100) is None


class TestRandomInstances:
    def test_deterministic_and_cycles_settings(self) -> None:
        settings = (SamplingConfig(), SamplingConfig(top_k=2))
        a = [i.describe() for i in random_instances(settings, 6, seed=3)]
        b = [i.describe() for i in random_instances(settings, 6, seed=3)]
        assert a == b
        assert [i.config for i in random_instances(settings, 4, seed=3)] == list(settings) * 2
