"""The statistics layer: reference numbers, validity and power of each test.

Reference values: computed independently with scipy 1.17.1 (noncentral chi-square plans,
exact enumeration), as listed in docs/explanation/statistics.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from verispec.errors import UsageError
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.stats.gof import compositions, exact_pvalue, g_test, pearson_test, pooled_cells
from verispec.stats.multiplicity import Budget, e_bonferroni, e_product, fisher, holm
from verispec.stats.pit import pit_battery, randomized_pit
from verispec.stats.plan import (
    chi_square_sample_size,
    cohen_w,
    exact_sample_size,
    least_favourable,
    neyman_pearson_sample_size,
    plan,
)
from verispec.stats.sequential import SPRT, DirichletEProcess, sprt_expected_samples, two_stage_plan

P = [0.5, 0.3, 0.2]
Q = [0.4, 0.32, 0.28]


class TestPlanning:
    def test_reference_sample_sizes(self) -> None:
        assert chi_square_sample_size(cohen_w(P, Q), 2, alpha=1e-6, power=0.99) == 1056
        assert exact_sample_size(P, Q, alpha=1e-6, power=0.99) == 1090
        assert neyman_pearson_sample_size(P, Q, alpha=1e-6, power=0.99) == 987

    def test_least_favourable_alternative(self) -> None:
        assert least_favourable(P, 0.1) == pytest.approx([0.4, 0.36, 0.24])
        assert cohen_w(P, least_favourable(P, 0.1)) ** 2 == pytest.approx(0.04)

    def test_sequential_and_two_stage_figures(self) -> None:
        under_q, under_p = sprt_expected_samples(P, Q, alpha=1e-6, beta=0.01)
        assert under_q == pytest.approx(532, abs=10) and under_p == pytest.approx(190, abs=10)
        stage = two_stage_plan(P, Q, alpha=1e-6, power=0.99)
        assert stage.expected_if_correct < 600  # the goal; 573 in the reference

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"alpha": 1.5}, r"^alpha=1\.5 must be in \(0, 1\)$"),
            ({"power": 0}, r"^power=0 must be in \(0, 1\)$"),
            ({"tv": 0.7}, r"^tv=0\.7 must be in \(0, 0\.5\)$"),
        ],
    )
    def test_bad_rates_name_the_value(self, kwargs, message) -> None:
        with pytest.raises(UsageError, match=message):
            plan(P, None, **{"tv": 0.1, **kwargs})


class TestGoodnessOfFit:
    def test_compositions_count(self) -> None:
        assert len(compositions(10, 3)) == 66
        assert (compositions(10, 3).sum(axis=1) == 10).all()

    def test_exact_pvalue_matches_direct_enumeration(self) -> None:
        # n = 4, p = (1/2, 1/2): P(X^2 >= X^2 of (4, 0)) = P((4,0) or (0,4)) = 2/16
        assert exact_pvalue([4, 0], [0.5, 0.5]) == pytest.approx(2 / 16)

    def test_outcome_outside_the_support_is_conclusive(self) -> None:
        law = {"a": 0.5, "b": 0.5}
        result = g_test({"a": 3, "c": 1}, law, pooled_cells(law, 4))
        assert result.pvalue == 0.0 and result.outside_support == 1

    def test_pooling_is_decided_from_the_law(self) -> None:
        law = {"a": 0.9, "b": 0.09, "c": 0.01}
        assert pooled_cells(law, 100) == [["a"], ["b", "c"]]
        assert pooled_cells(law, 1000) == [["a"], ["b"], ["c"]]

    @pytest.mark.statistical
    def test_pearson_detects_the_seed_bug_at_its_planned_size(self) -> None:
        """alpha PER_TEST_ALPHA, power 1 - PER_TEST_ALPHA against q; n computed, seed fixed."""
        law = dict(enumerate(P))
        n = chi_square_sample_size(cohen_w(P, Q), 2, alpha=PER_TEST_ALPHA, power=1 - PER_TEST_ALPHA)
        rng = np.random.default_rng(11)
        bad = dict(enumerate(rng.multinomial(n, Q)))
        good = dict(enumerate(rng.multinomial(n, P)))
        assert pearson_test(bad, law, pooled_cells(law, n), exact="never").pvalue <= PER_TEST_ALPHA
        assert pearson_test(good, law, pooled_cells(law, n), exact="never").pvalue > PER_TEST_ALPHA


class TestSequential:
    def test_sprt_rejects_a_buggy_stream_and_accepts_a_correct_one(self) -> None:
        rng = np.random.default_rng(3)
        bad = SPRT(P, Q, alpha=1e-6, beta=1e-6)
        for x in rng.choice(3, size=20000, p=Q):
            if bad.update(int(x)):
                break
        good = SPRT(P, Q, alpha=1e-6, beta=1e-6)
        for x in rng.choice(3, size=20000, p=P):
            if good.update(int(x)):
                break
        assert bad.decision == "reject" and good.decision == "accept"

    def test_e_process_rejects_impossible_token_at_once_and_caps(self) -> None:
        e = DirichletEProcess([0.5, 0.5, 0.0], alpha=1e-6, cap=10)
        assert e.update(2) == "reject"
        e2 = DirichletEProcess(P, alpha=1e-6, cap=5)
        for _ in range(5):
            e2.update(0)
        assert e2.decision == "no evidence"


class TestPit:
    def test_randomized_pit_interval(self) -> None:
        assert randomized_pit(1, [0.5, 0.3, 0.2], [0, 1, 2], 0.5) == pytest.approx(0.65)

    @pytest.mark.statistical
    def test_battery_is_uniform_under_the_target_and_sees_a_temperature_bug(self) -> None:
        """False alarm PER_TEST_ALPHA on correct sequences; power on sequences at T=0.7."""
        rng = np.random.default_rng(5)
        vocab, length = 16, 8
        rows = rng.dirichlet(np.full(vocab, 0.5), size=length)

        def target(prefix):
            return rows[len(prefix)]

        def sample(rows_used):
            return [[int(rng.choice(vocab, p=rows_used[t])) for t in range(length)] for _ in range(400)]

        good = pit_battery(sample(rows), target, orderings=("target-probability", "token-id"), rng=rng)
        sharp = rows ** (1 / 0.7)
        sharp /= sharp.sum(axis=1, keepdims=True)
        bad = pit_battery(sample(sharp), target, orderings=("target-probability", "token-id"), rng=rng)
        assert good.pvalue > PER_TEST_ALPHA
        assert bad.pvalue <= PER_TEST_ALPHA


class TestMultiplicity:
    def test_budget_never_exceeds_its_total(self) -> None:
        budget = Budget(1e-6)
        first = budget.allocate({"a": 1, "b": 1})
        assert first == {"a": 5e-7, "b": 5e-7}
        assert budget.allocate({"c": 1})["c"] == pytest.approx(0.0, abs=1e-20)
        assert budget.spent <= 1e-6
        with pytest.raises(UsageError, match="already allocated"):
            budget.allocate({"a": 1})

    def test_a_split_budget_records_where_every_alpha_went(self) -> None:
        run = Budget(1e-6)
        checks = run.split(["a", "b"])
        assert run.split([]) == {}
        inner = checks["a"].allocate({"x": 1, "y": 3})
        assert inner == {"x": pytest.approx(1.25e-7), "y": pytest.approx(3.75e-7)}
        assert run.to_json() == {
            "total": 1e-6,
            "shares": {"a": {"total": 5e-7, "shares": inner}, "b": {"total": 5e-7, "shares": {}}},
        }
        with pytest.raises(UsageError, match=r"alpha=1\.5 must be in \(0, 1\)"):
            Budget(1.5)

    def test_holm_and_e_values(self) -> None:
        assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
        assert e_product([2.0, 3.0]) == pytest.approx(6.0)
        assert e_bonferroni([1e6, 10.0], 1e-6) == [False, False]  # threshold m / alpha = 2e6
        assert e_bonferroni([3e6, 10.0], 1e-6) == [True, False]

    def test_fisher_gathers_a_thin_spread_and_keeps_its_level(self) -> None:
        """Four p-values of 1e-5 each stay above a Bonferroni share of 1e-6 / 8, and combine to
        about 1e-14; under the null the combination is uniform (its false-alarm rate at 0.01 is
        0.01 within sampling error); a p-value of 0 combines to 0; bad input is named."""
        import numpy as np

        assert fisher([1e-5] * 4) < 1e-13 and fisher([1.0, 1.0]) == pytest.approx(1.0)
        assert fisher([0.0, 0.9]) == 0.0
        rng = np.random.default_rng(7)
        rejected = np.mean([fisher(list(rng.random(4))) <= 0.01 for _ in range(20_000)])
        # 20,000 draws at rate 0.01: standard error 7e-4; six of them is a 1e-9 false alarm
        assert abs(rejected - 0.01) < 6 * 7.1e-4
        with pytest.raises(UsageError, match=r"pvalues=.*in \[0, 1\]"):
            fisher([1.5])
        with pytest.raises(UsageError, match="non-empty"):
            fisher([])
