"""seeded-equivalence tells a float near tie from a parting the engine's logic caused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verispec.conformance.checks.invariance import CUMSUM_ROUNDING, mass_between, near_tie_bound


class TestMassBetween:
    def test_in_id_order_it_is_the_mass_strictly_between_the_two_ids(self) -> None:
        law = np.array([0.1, 0.2, 0.3, 0.4])
        # id order: only token 1 lies between 0 and 2; probability order 3, 2, 1, 0 puts 1 between too
        assert mass_between(law, 0, 2) == pytest.approx(0.2)
        assert mass_between(law, 2, 0) == pytest.approx(0.2)

    def test_the_smaller_of_id_order_and_probability_order_is_taken(self) -> None:
        law = np.array([0.5, 0.3, 0.15, 0.05])
        # ids 0 and 3: 0.45 lies between in either order
        assert mass_between(law, 0, 3) == pytest.approx(0.45)
        law = np.array([0.4, 0.05, 0.05, 0.5])
        # ids 0 and 3: 0.1 between by id, nothing between by probability (0.5, then 0.4)
        assert mass_between(law, 0, 3) == 0.0

    def test_neighbours_in_the_deep_tail_are_separated_by_almost_nothing(self) -> None:
        """The SmolLM2 parting of docs/audits/llama-cpp.md: two tail tokens, a few ids apart."""
        law = np.full(49152, 1e-7)
        law[0] = 1 - law[1:].sum()
        assert mass_between(law, 4686, 4692) == pytest.approx(5e-7)


class TestNearTieBound:
    def test_no_noise_leaves_only_float32_rounding(self) -> None:
        assert near_tie_bound(0.0) == CUMSUM_ROUNDING

    def test_the_bound_grows_with_the_engines_measured_noise(self) -> None:
        # the logit noise measured on SmolLM2 in llama.cpp: 2.7e-5
        assert near_tie_bound(2.7e-5) == pytest.approx(2 * math.expm1(5.4e-5) + 1e-6)
        assert 5e-7 <= near_tie_bound(2.7e-5) < 1.2e-4

    def test_a_parting_between_wide_tokens_is_never_a_near_tie(self) -> None:
        """What a logic bug gives on the ci pair: token 14 for token 20 (docs/audits/llama-cpp.md)."""
        law = np.linspace(1, 2, 24) ** 4
        law /= law.sum()
        assert mass_between(law, 14, 20) > 100 * near_tie_bound(1e-5)
