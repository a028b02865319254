"""Sampling transforms: exact and float forms share their semantics, ties included."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from verispec.core.transforms import (
    SamplingConfig,
    apply_exact,
    apply_float,
    min_p_exact,
    temperature_exact,
    top_k_exact,
    top_p_exact,
)
from verispec.errors import UsageError

F = Fraction


def row(*values: str) -> tuple[Fraction, ...]:
    return tuple(F(v) for v in values)


class TestTemperature:
    def test_zero_is_argmax_with_lowest_id_on_ties(self) -> None:
        assert temperature_exact(row("1/4", "3/8", "3/8"), F(0)) == row("0", "1", "0")

    def test_half_squares_and_renormalises(self) -> None:
        assert temperature_exact(row("1/3", "2/3"), F(1, 2)) == row("1/5", "4/5")

    def test_no_exact_form_for_other_temperatures(self) -> None:
        with pytest.raises(UsageError, match=r"^temperature=3/2 has no exact form"):
            temperature_exact(row("1/2", "1/2"), F(3, 2))

    def test_float_form_handles_any_temperature(self) -> None:
        out = apply_float([0.25, 0.75], SamplingConfig(temperature=F(3, 2)))
        assert out.sum() == pytest.approx(1.0)
        assert out[1] < 0.75  # flatter than the input


class TestTopK:
    def test_ties_at_the_cut_are_all_kept(self) -> None:
        # k=2, the 2nd and 3rd largest are tied: both survive
        assert top_k_exact(row("1/2", "1/4", "1/4", "0"), 2) == row("1/2", "1/4", "1/4", "0")

    def test_cuts_below_the_kth(self) -> None:
        assert top_k_exact(row("1/2", "1/3", "1/6"), 2) == row("3/5", "2/5", "0")

    def test_never_keeps_zero_probability_tokens(self) -> None:
        assert top_k_exact(row("1", "0", "0"), 3) == row("1", "0", "0")


class TestTopP:
    def test_smallest_prefix_reaching_top_p(self) -> None:
        # mass strictly above 1/3 is 1/2 < 7/10, so 1/3 is kept; above 1/6 is 5/6 >= 7/10
        assert top_p_exact(row("1/2", "1/3", "1/6"), F(7, 10)) == row("3/5", "2/5", "0")

    def test_cut_exactly_at_top_p_drops_the_next_token(self) -> None:
        # mass above the second token is exactly 1/2 = top_p: not below it, so it is dropped
        assert top_p_exact(row("1/2", "1/4", "1/4"), F(1, 2)) == row("1", "0", "0")

    def test_tied_tokens_are_kept_or_dropped_together(self) -> None:
        assert top_p_exact(row("1/3", "1/3", "1/3"), F(1, 2)) == row("1/3", "1/3", "1/3")


class TestMinP:
    def test_token_exactly_at_threshold_is_kept(self) -> None:
        assert min_p_exact(row("1/2", "1/4", "1/4"), F(1, 2)) == row("1/2", "1/4", "1/4")
        assert min_p_exact(row("1/2", "1/3", "1/6"), F(1, 2)) == row("3/5", "2/5", "0")


class TestSamplingConfig:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"temperature": -1}, r"^temperature=-1 must be >= 0$"),
            ({"top_k": 0}, r"^top_k=0 must be a positive integer or None$"),
            ({"top_p": 0}, r"^top_p=0 must be in \(0, 1\]$"),
            ({"top_p": 1.5}, r"^top_p=3/2 must be in \(0, 1\]$"),
            ({"min_p": -0.1}, r"^min_p=-1/10 must be in \[0, 1\]$"),
        ],
    )
    def test_out_of_range_options_name_the_option(self, kwargs: dict, message: str) -> None:
        with pytest.raises(UsageError, match=message):
            SamplingConfig(**kwargs)

    def test_order_is_temperature_top_k_top_p_min_p(self) -> None:
        config = SamplingConfig(temperature=F(1, 2), top_k=2, top_p=F(1, 2))
        # T=1/2: (1/2,1/3,1/6) -> (9/14, 4/14, 1/14); top-2 -> (9/13, 4/13, 0); top-p 1/2 keeps 9/13 only
        assert apply_exact(row("1/2", "1/3", "1/6"), config) == row("1", "0", "0")

    def test_describe(self) -> None:
        assert SamplingConfig(temperature=F(1, 2), top_k=3).describe() == "T=1/2 top_k=3"


_dyadic = st.integers(0, 16)


@given(
    st.lists(_dyadic, min_size=2, max_size=6).filter(any),
    st.integers(1, 6),
    st.sampled_from([F(1, 4), F(1, 2), F(3, 4), F(1)]),
    st.sampled_from([None, F(1, 4), F(1, 2)]),
)
def test_exact_and_float_forms_agree_on_dyadic_rows(
    weights: list[int], k: int, top_p: Fraction, min_p
) -> None:
    """On dyadic rows (exact in float64, sums included) both forms keep the same tokens."""
    total = sum(weights)
    # scale to a power-of-two denominator so that every partial sum is exact in float64
    denominator = 1 << total.bit_length()
    values = [F(w, denominator) for w in weights]
    values[0] += 1 - sum(values)
    config = SamplingConfig(top_k=k, top_p=top_p, min_p=min_p)
    exact = apply_exact(tuple(values), config)
    floats = apply_float([float(v) for v in values], config)
    assert [v > 0 for v in exact] == [v > 0 for v in floats.tolist()]
    assert [float(v) for v in exact] == pytest.approx(floats.tolist(), abs=1e-12)


class TestSamplingOrder:
    """llama.cpp truncates the untempered law, then applies the temperature; vLLM and
    transformers the other way round. The two orders differ for top-p and min-p once T != 1."""

    def test_truncation_first_keeps_the_nucleus_of_the_untempered_law(self) -> None:
        import numpy as np

        from verispec.core.transforms import SamplingConfig, apply_float

        row = np.array([0.5, 0.3, 0.15, 0.05])
        config = SamplingConfig(Fraction(1, 2), top_p=Fraction(8, 10))
        first = apply_float(row, config)  # T=1/2 sharpens to (0.69, 0.25, 0.06, 0.006): 2 kept
        later = apply_float(row, config, order="truncation-first")  # 0.5 + 0.3 reaches 0.8: 2 kept
        assert (first > 0).tolist() == [True, True, False, False]
        assert (later > 0).tolist() == [True, True, False, False]
        hot = SamplingConfig(Fraction(2), top_p=Fraction(7, 10))
        # T=2 flattens to (0.38, 0.29, 0.21, 0.12): the nucleus of 0.7 needs three tokens;
        # untempered (0.5, 0.3, ...) it needs two
        assert (apply_float(row, hot) > 0).sum() == 3
        assert (apply_float(row, hot, order="truncation-first") > 0).sum() == 2
        kept = apply_float(row, hot, order="truncation-first")
        assert np.isclose(kept[0] / kept[1], (0.5 / 0.3) ** 0.5)  # tempered after the cut

    def test_min_p_reads_the_untempered_law_under_truncation_first(self) -> None:
        import numpy as np

        from verispec.core.transforms import SamplingConfig, apply_float

        row = np.array([0.6, 0.3, 0.1])
        config = SamplingConfig(Fraction(3), min_p=Fraction(1, 4))
        assert (apply_float(row, config) > 0).sum() == 3  # tempered: 0.1**(1/3) / 0.6**(1/3) = 0.55
        assert (apply_float(row, config, order="truncation-first") > 0).sum() == 2  # 0.1 < 0.6 / 4

    def test_an_unknown_order_is_named(self) -> None:
        from verispec.core.transforms import SamplingConfig, apply_float
        from verispec.errors import UsageError

        with pytest.raises(UsageError, match="order='sideways'"):
            apply_float([0.5, 0.5], SamplingConfig(), order="sideways")


class TestRoundsFromDrafterCalls:
    """llama.cpp's adapter derives its rounds from the drafter's calls and the tokens."""

    def test_each_round_accepts_the_drafts_its_tokens_repeat_then_commits_one(self) -> None:
        from verispec.engines.llama_cpp_engines import rounds_from_calls
        from verispec.engines.protocol import RoundStat

        prompt = 3
        tokens = [7, 8, 9, 1, 2, 5]
        # after the first token (length 4): drafts 8, 9, 4 -> 8, 9 accepted, then 1 (the correction)
        # after 1 (length 7): no drafts, not a round; then drafts 2, 5 with the budget ending
        calls = [(4, (8, 9, 4)), (7, ()), (7, (2, 5))]
        assert rounds_from_calls(calls, prompt, tokens) == [
            RoundStat(4, 2, 3, (8, 9, 4)),
            RoundStat(7, 2, 2, (2, 5)),  # both accepted, the request ended before a bonus
        ]
