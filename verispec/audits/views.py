"""The test of one audit instance: the whole sequence, and the marginal of every position.

An audited sample is a sequence of ``L`` tokens (one round of the black box, completed by
target sampling), and the target's exact law of it is known, so is the exact law of each
position's token. Each of these ``1 + L`` views is a valid goodness-of-fit test under the
null. They differ in power: a bug that moves the first token's law puts its whole effect on
a few cells there, which the sequence test spreads over up to ``V^L`` cells; a bug confined
to later tokens (a bonus drawn from the wrong row) leaves the first position unchanged. The
exact comparison in ``benchmarks/bench_test_power.py`` measures, on the catalog's chain
controls, that the sequence test alone needs up to 55% more samples than the combination,
and the best single position about 7% fewer (the price of not knowing it in advance).

So an instance runs the G-test on every view, each at its Bonferroni share
``alpha / (1 + L)`` of the instance's rate; its p-value is the smallest view's, times
``1 + L`` (at most 1), and it rejects when that reaches the instance's rate. The power
guarantee still rests on the sequence view: the plan sizes it at its share of the rate, so
any alternative at the declared total variation is detected with the declared power by the
sequence view alone, and the position views only add to it.

Each view's cells are pooled from its exact law and the planned (or drawn) sample size,
before looking at the counts, as everywhere else (:func:`~verispec.stats.gof.pooled_cells`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.stats.gof import g_test, pooled_cells

__all__ = ["CombinedTest", "View", "combined_test", "views"]


@dataclass(frozen=True)
class View:
    """One view of an instance's samples: the whole sequence (``position is None``) or the
    token at ``position``, with its exact law (keys are strings) and its pooled cells."""

    name: str
    position: int | None
    law: dict[str, Any]
    cells: list[list[str]]

    def counts(self, counts: Mapping[str, int]) -> dict[str, int]:
        """The sample's counts seen through this view (``counts`` keys are ``"t0 t1 ..."``)."""
        if self.position is None:
            return dict(counts)
        out: Counter[str] = Counter()
        for key, c in counts.items():
            tokens = key.split()
            # a sequence of the wrong length is outside the sequence view's support, which
            # rejects it on its own; here it is counted as an impossible token
            out[tokens[self.position] if self.position < len(tokens) else key] += c
        return dict(out)


def views(law: Mapping[str, Any], length: int, n: int) -> list[View]:
    """The sequence view and the ``length`` position views of ``law`` (keys ``"t0 t1 ..."``),
    with cells pooled for ``n`` samples."""
    out = [View("sequence", None, dict(law), pooled_cells(law, n))]
    for j in range(length):
        marginal: dict[str, Any] = {}
        for key, value in law.items():
            token = key.split()[j]
            marginal[token] = marginal.get(token, Fraction(0)) + value
        out.append(View(f"position {j}", j, marginal, pooled_cells(marginal, n)))
    return out


@dataclass(frozen=True)
class CombinedTest:
    """The views' G-tests combined by Bonferroni: ``pvalue`` is the smallest view p-value
    times the number of views (at most 1); ``decided_by`` names that view."""

    pvalue: float
    statistic: float
    method: str
    decided_by: str
    view_pvalues: dict[str, float]


def combined_test(counts: Mapping[str, int], views_: list[View]) -> CombinedTest:
    """Run the G-test on every view of ``counts`` and combine them (Bonferroni)."""
    tests = [(view, g_test(view.counts(counts), view.law, view.cells)) for view in views_]
    # ties go to the first view in order: the sequence view, then position 0, 1, ...
    view, best = min(tests, key=lambda t: t[1].pvalue)
    k = len(views_)
    return CombinedTest(
        pvalue=min(1.0, k * best.pvalue),
        statistic=best.statistic,
        method=f"{best.method} on the {view.name} view, Bonferroni over {k} views",
        decided_by=view.name,
        view_pvalues={v.name: t.pvalue for v, t in tests},
    )
