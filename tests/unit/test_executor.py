"""The exact executor enumerates every branch with exact weights and catches misuse."""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.random import SeededRandom
from verispec.exact.executor import EnumerationBudgetExceeded, RandomCallError, output_law

F = Fraction


class TestOutputLaw:
    def test_coin_and_die(self) -> None:
        def fn(rand):
            if rand.bernoulli(F(1, 3)):
                return ("coin",)
            return ("die", rand.categorical([F(1), F(0), F(2)]))

        assert output_law(fn) == {("coin",): F(1, 3), ("die", 0): F(2, 9), ("die", 2): F(4, 9)}

    def test_unnormalised_weights_are_normalised_exactly(self) -> None:
        assert output_law(lambda r: r.categorical([F(3), F(1)])) == {0: F(3, 4), 1: F(1, 4)}

    def test_certain_coins_do_not_branch(self) -> None:
        calls = []

        def fn(rand):
            calls.append(1)
            return rand.bernoulli(F(1)), rand.bernoulli(F(0))

        assert output_law(fn) == {(True, False): F(1)}
        assert len(calls) == 1

    def test_total_mass_is_one(self) -> None:
        def fn(rand):
            return tuple(rand.categorical([F(1), F(2), F(3)]) for _ in range(3))

        law = output_law(fn)
        assert sum(law.values()) == 1
        assert len(law) == 27

    def test_probability_outside_unit_interval_is_a_random_call_error(self) -> None:
        with pytest.raises(RandomCallError, match=r"bernoulli\(prob=3/2\) called with prob outside \[0, 1\]"):
            output_law(lambda r: r.bernoulli(F(3, 2)))

    def test_negative_or_zero_weights(self) -> None:
        with pytest.raises(RandomCallError, match="weights must be >= 0"):
            output_law(lambda r: r.categorical([F(1), F(-1), F(1)]))
        with pytest.raises(RandomCallError, match="sum to zero"):
            output_law(lambda r: r.categorical([F(0), F(0)]))

    def test_non_deterministic_function_is_detected(self) -> None:
        state = {"n": 0}

        def fn(rand):
            state["n"] += 1
            weights = [F(1), F(1)] if state["n"] == 1 else [F(1), F(0)]
            return rand.categorical(weights)

        with pytest.raises(RandomCallError, match="not deterministic given its random choices"):
            output_law(fn)

    def test_budget(self) -> None:
        with pytest.raises(EnumerationBudgetExceeded, match="max_leaves=10 exceeded"):
            output_law(lambda r: tuple(r.categorical([F(1)] * 4) for _ in range(3)), max_leaves=10)


class TestSeededRandom:
    def test_same_seed_same_draws(self) -> None:
        a, b = SeededRandom(5), SeededRandom(5)
        assert [a.categorical([1, 2, 3]) for _ in range(20)] == [b.categorical([1, 2, 3]) for _ in range(20)]

    def test_never_draws_zero_weight(self) -> None:
        rand = SeededRandom(0)
        assert all(rand.categorical([0.0, 1.0, 0.0]) == 1 for _ in range(200))

    def test_bad_seed_and_weights(self) -> None:
        from verispec.errors import UsageError

        with pytest.raises(UsageError, match=r"^seed=-1 must be a non-negative integer$"):
            SeededRandom(-1)
        with pytest.raises(UsageError, match="weights sum to zero"):
            SeededRandom(0).categorical([0.0, 0.0])
