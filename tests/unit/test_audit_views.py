"""The audit instance's test: the sequence view and every position's view, Bonferroni-combined.

Deterministic: the counts are exact expected counts, never samples.
"""

from __future__ import annotations

from fractions import Fraction

from verispec.audits.instances import chain_audit_instances
from verispec.audits.runner import plan_instance
from verispec.audits.views import combined_test, views
from verispec.stats.gof import pooled_cells
from verispec.stats.plan import chi_square_sample_size

#: The chain audit's instance rate (1e-6 over 8 instances).
RATE = 1e-6 / 8


def _expected_counts(law: dict[str, float], n: int) -> dict[str, int]:
    """Counts as close to ``n * law`` as integers summing to ``n`` allow."""
    counts = {k: int(n * float(v)) for k, v in law.items()}
    short = n - sum(counts.values())
    for k in sorted(law, key=lambda k: n * float(law[k]) - counts[k], reverse=True)[:short]:
        counts[k] += 1
    return counts


def test_position_views_hold_the_target_marginals() -> None:
    item = chain_audit_instances(0)[0]
    n, vs = plan_instance(item, alpha=RATE, power=0.99, tv=0.05)
    assert [v.name for v in vs] == ["sequence"] + [f"position {j}" for j in range(item.length)]
    first = {str(x): p for x, p in enumerate(item.instance.target_probs(())) if p}
    assert vs[1].law == first
    for view in vs:
        assert sum(view.law.values()) == 1
        assert view.cells == pooled_cells(view.law, n)


def test_the_plan_sizes_the_sequence_view_at_its_bonferroni_share() -> None:
    """The power guarantee rests on the sequence view alone, at rate / (1 + length)."""
    item = chain_audit_instances(0)[0]
    n, vs = plan_instance(item, alpha=RATE, power=0.99, tv=0.05)
    share = RATE / (1 + item.length)
    assert n == chi_square_sample_size(2 * 0.05, len(vs[0].cells) - 1, alpha=share, power=0.99)
    assert n > chi_square_sample_size(2 * 0.05, len(vs[0].cells) - 1, alpha=RATE, power=0.99)


def _product_law(first: list[Fraction], second: list[Fraction]) -> dict[str, Fraction]:
    return {f"{a} {b}": pa * pb for a, pa in enumerate(first) for b, pb in enumerate(second)}


def test_a_shift_of_one_position_is_seen_by_its_view_and_missed_by_the_sequence_alone() -> None:
    """The first token's law moves by TV 0.02, the second is untouched: the sequence view
    spreads the effect over 35 degrees of freedom and does not reject at 20,000 samples; the
    position-0 view, on 5, does, and so does the combination."""
    uniform = [Fraction(1, 6)] * 6
    shifted = [Fraction(1, 6) + Fraction(1, 50)] + [Fraction(1, 6) - Fraction(1, 250)] * 5
    null = _product_law(uniform, uniform)
    n = 20_000
    counts = _expected_counts(_product_law(shifted, uniform), n)
    vs = views(null, 2, n)
    test = combined_test(counts, vs)
    assert test.view_pvalues["sequence"] > RATE  # the sequence test alone passes the bug
    assert test.view_pvalues["position 0"] < 1e-9
    assert test.decided_by == "position 0"
    assert test.pvalue <= RATE
    assert test.pvalue == min(1.0, 3 * min(test.view_pvalues.values()))


def test_the_null_is_not_rejected_and_the_sequence_view_decides_ties() -> None:
    law = _product_law([Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)], [Fraction(1, 4)] * 4)
    test = combined_test(_expected_counts(law, 1200), views(law, 2, 1200))
    assert test.pvalue == 1.0
    assert test.decided_by == "sequence"


def test_an_impossible_sequence_rejects_whatever_its_marginals() -> None:
    """Each token of "0 1" is possible, the pair is not: the sequence view rejects it."""
    law = {"0 0": Fraction(1, 2), "1 1": Fraction(1, 2)}
    test = combined_test({"0 0": 50, "1 1": 49, "0 1": 1}, views(law, 2, 100))
    assert test.pvalue == 0.0
    assert test.decided_by == "sequence"
    assert test.view_pvalues["position 0"] > 0.5
