"""Conditional models are deterministic, validated, and contain zeros when asked."""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.models import FixedModel, ProcessedModel, RandomRationalModel, TableModel
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError


class TestRandomRationalModel:
    def test_rows_are_exact_distributions_that_depend_on_the_prefix(self) -> None:
        model = RandomRationalModel(4, seed=3)
        rows = {model.probs(p) for p in [(), (0,), (1,), (0, 1), (2, 2)]}
        assert all(sum(r) == 1 and all(v >= 0 for v in r) for r in rows)
        assert len(rows) > 1

    def test_same_seed_same_rows_across_instances(self) -> None:
        assert RandomRationalModel(5, seed=11).probs((1, 2)) == RandomRationalModel(5, seed=11).probs((1, 2))

    def test_contains_zeros(self) -> None:
        model = RandomRationalModel(4, seed=0, zero_prob=0.5)
        assert any(0 in model.probs((t,)) for t in range(4))

    def test_context_free_ignores_the_prefix(self) -> None:
        model = RandomRationalModel(3, seed=1, context_free=True)
        assert model.probs(()) == model.probs((0, 1, 2))

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"vocab_size": 0}, r"^vocab_size=0 must be a positive integer$"),
            ({"vocab_size": 3, "zero_prob": 1.0}, r"^zero_prob=1\.0 must be in \[0, 1\)$"),
            ({"vocab_size": 3, "granularity": 0}, r"^granularity=0 must be a positive integer$"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict, message: str) -> None:
        vocab = kwargs.pop("vocab_size")
        with pytest.raises(UsageError, match=message):
            RandomRationalModel(vocab, seed=0, **kwargs)


class TestTableModel:
    def test_rows_and_default(self) -> None:
        model = TableModel({(0,): ["1", "0"]}, ["1/2", "1/2"])
        assert model.probs((0,)) == (Fraction(1), Fraction(0))
        assert model.probs((1,)) == (Fraction(1, 2), Fraction(1, 2))

    def test_missing_row_without_default(self) -> None:
        with pytest.raises(UsageError, match=r"has no row for prefix \(1,\) and no default"):
            TableModel({(0,): ["1", "0"]}).probs((1,))

    def test_mismatched_sizes_and_bad_prefix(self) -> None:
        with pytest.raises(UsageError, match="different vocabulary sizes"):
            TableModel({(0,): ["1", "0"]}, ["1/3", "1/3", "1/3"])
        with pytest.raises(UsageError, match=r"prefix \(5,\) holds token 5, outside the vocabulary 0\.\.1"):
            TableModel({(5,): ["1", "0"]})


class TestProcessedModel:
    def test_applies_the_config(self) -> None:
        model = ProcessedModel(FixedModel(["1/2", "1/3", "1/6"]), SamplingConfig(top_k=1))
        assert model.probs(()) == (Fraction(1), Fraction(0), Fraction(0))

    def test_rejects_temperatures_without_exact_form(self) -> None:
        with pytest.raises(UsageError, match=r"^temperature=2/3 has no exact form"):
            ProcessedModel(FixedModel(["1/2", "1/2"]), SamplingConfig(temperature=Fraction(2, 3)))
