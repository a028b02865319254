"""Exact and float distributions: validation names the argument and repeats the value."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from verispec.core.distributions import (
    FLOAT_SUM_ATOL,
    as_exact_distribution,
    as_float_distribution,
    check_same_vocab,
    tv_distance,
)
from verispec.errors import UsageError


class TestAsExactDistribution:
    """Exact distributions must be non-negative and sum to exactly one."""

    def test_accepts_strings_fractions_ints_and_decimal_floats(self) -> None:
        assert as_exact_distribution(["1/2", Fraction(1, 4), 0.25]) == (
            Fraction(1, 2),
            Fraction(1, 4),
            Fraction(1, 4),
        )
        assert as_exact_distribution([0, 1]) == (Fraction(0), Fraction(1))

    def test_float_is_read_by_its_decimal_representation(self) -> None:
        assert as_exact_distribution([0.1, 0.9]) == (Fraction(1, 10), Fraction(9, 10))

    def test_negative_probability_names_index_and_value(self) -> None:
        with pytest.raises(UsageError, match=r"^target\[1\]=-1/2 is negative; probabilities must be >= 0$"):
            as_exact_distribution(["3/2", "-1/2"], name="target")

    def test_not_normalised_is_rejected_with_its_sum(self) -> None:
        with pytest.raises(UsageError) as info:
            as_exact_distribution(["1/2", "1/3"], name="draft")
        assert str(info.value) == (
            "draft=(1/2, 1/3) sums to 5/6, not exactly 1 (exact distributions must be normalised exactly)"
        )

    def test_nan_is_rejected(self) -> None:
        with pytest.raises(UsageError, match=r"^probs\[0\]=nan is not a finite number$"):
            as_exact_distribution([float("nan"), 1.0])

    def test_empty_and_non_numbers_are_rejected(self) -> None:
        with pytest.raises(UsageError, match="is empty"):
            as_exact_distribution([])
        with pytest.raises(UsageError, match=r"probs\[0\]='x' is not a rational number"):
            as_exact_distribution(["x"])
        with pytest.raises(UsageError, match="is a bool"):
            as_exact_distribution([True])


class TestAsFloatDistribution:
    """Float distributions: finite, non-negative, one-dimensional, sum within FLOAT_SUM_ATOL."""

    def test_accepts_a_valid_row(self) -> None:
        out = as_float_distribution([0.25, 0.75])
        assert out.dtype == np.float64
        assert out.tolist() == [0.25, 0.75]

    def test_tolerance_is_stated_and_applied(self) -> None:
        as_float_distribution([0.5, 0.5 + FLOAT_SUM_ATOL / 2])
        with pytest.raises(UsageError, match=r"^probs sums to 1\.001, not 1 within atol=1e-05$"):
            as_float_distribution([0.5, 0.501])

    def test_nan_inf_and_negative(self) -> None:
        with pytest.raises(UsageError, match=r"^p\[1\]=nan is not finite$"):
            as_float_distribution([1.0, float("nan")], name="p")
        with pytest.raises(UsageError, match=r"^p\[0\]=inf is not finite$"):
            as_float_distribution([float("inf"), 0.0], name="p")
        with pytest.raises(UsageError, match=r"^p\[0\]=-0\.5 is negative"):
            as_float_distribution([-0.5, 1.5], name="p")

    def test_wrong_shape(self) -> None:
        with pytest.raises(UsageError, match=r"^q has shape \(1, 2\); expected a 1-D array"):
            as_float_distribution([[0.5, 0.5]], name="q")


class TestCheckSameVocab:
    def test_mismatch_names_both_arguments(self) -> None:
        with pytest.raises(UsageError, match=r"^vocabulary sizes differ: target has 3, draft has 2 entries$"):
            check_same_vocab(target=[1, 0, 0], draft=[1, 0])

    def test_returns_the_common_size(self) -> None:
        assert check_same_vocab(a=[1, 0], b=[0, 1]) == 2


class TestTvDistance:
    def test_exact(self) -> None:
        p = as_exact_distribution(["1/2", "3/10", "1/5"])
        out = as_exact_distribution(["2/5", "8/25", "7/25"])
        assert tv_distance(p, out) == Fraction(1, 10)
