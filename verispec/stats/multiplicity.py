"""Multiplicity: a suite-level false-alarm budget split across checks, and e-value pooling.

* :class:`Budget` splits a family-wise false-alarm rate (default
  :data:`~verispec.stats.constants.SUITE_ALPHA`) across named checks by Bonferroni with
  weights; it refuses to hand out more than it holds.
* :func:`holm` adjusts p-values for attribution (strong family-wise control).
* :func:`e_product` multiplies independent e-values (still an e-value);
  :func:`e_bonferroni` rejects check ``i`` when ``E_i >= m / alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.errors import UsageError
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.plan import check_rate

__all__ = ["Budget", "e_bonferroni", "e_product", "fisher", "holm"]


@dataclass
class Budget:
    """A family-wise false-alarm budget, split across named tests by weight (Bonferroni).

    The run's alpha is split once, here: a conformance run splits its budget over its
    statistical checks, and each check splits its share over the tests it runs (settings,
    prompts, sub-tests), then decides each test at exactly the alpha it planned that test at.
    :meth:`to_json` records the whole allocation for the report. The total is validated
    here, so ``alpha`` is checked in one place.

    >>> run = Budget(1e-6)
    >>> checks = run.split(["sampling-law", "first-token-law"])
    >>> checks["sampling-law"].total
    5e-07
    >>> checks["sampling-law"].allocate({"T=1.5": 1, "T=0.5, top-k 8": 1})["T=1.5"]
    2.5e-07
    """

    total: float = SUITE_ALPHA
    shares: dict[str, float] = field(default_factory=dict)
    children: dict[str, Budget] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.total = check_rate("alpha", self.total)

    def allocate(self, weights: dict[str, float]) -> dict[str, float]:
        """Give each named test ``remaining * weight / sum(weights)``; names must be new."""
        if not weights or any(not w > 0 for w in weights.values()):
            raise UsageError(f"weights={weights!r} must be positive")
        clash = set(weights) & set(self.shares)
        if clash:
            raise UsageError(f"checks already allocated: {sorted(clash)}")
        remaining = self.total - self.spent
        s = sum(weights.values())
        for name, w in weights.items():
            self.shares[name] = remaining * w / s
        return {name: self.shares[name] for name in weights}

    def split(self, names: Sequence[str], weights: Sequence[float] | None = None) -> dict[str, Budget]:
        """Allocate to ``names`` (equal weights by default) and return each share as a budget
        of its own, to be split further."""
        if not names:
            return {}
        weight_of = dict(zip(names, weights if weights is not None else [1.0] * len(names), strict=True))
        shares = self.allocate(weight_of)
        for name, share in shares.items():
            self.children[name] = Budget(share)
        return {name: self.children[name] for name in names}

    @property
    def spent(self) -> float:
        return sum(self.shares.values())

    def to_json(self) -> dict[str, Any]:
        """The allocation tree: each share, or the share's own allocation where it was split."""
        return {
            "total": self.total,
            "shares": {
                name: self.children[name].to_json() if name in self.children else share
                for name, share in self.shares.items()
            },
        }


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (reject ``i`` when the adjusted value is at most alpha)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def fisher(pvalues: Sequence[float]) -> float:
    """Fisher's combination of independent p-values: ``-2 sum log p`` against the chi-square
    law with ``2m`` degrees of freedom. Valid for p-values that are uniform or conservative
    under the null; it gathers a bug spread thinly over every test, where the smallest
    p-value alone stays above its share of alpha.

    >>> round(fisher([0.01, 0.01]), 6)
    0.001021
    """
    from scipy import stats  # deferred: heavy

    if not pvalues or any(not 0 <= p <= 1 for p in pvalues):
        raise UsageError(f"pvalues={list(pvalues)!r} must be a non-empty list of numbers in [0, 1]")
    if any(p == 0 for p in pvalues):
        return 0.0  # certain evidence in one test is certain evidence in all
    statistic = -2.0 * sum(math.log(p) for p in pvalues)
    return float(stats.chi2.sf(statistic, 2 * len(pvalues)))


def e_product(evalues: Sequence[float]) -> float:
    """The product of independent e-values (an e-value); computed in log space."""
    if any(e < 0 for e in evalues):
        raise UsageError("e-values must be non-negative")
    if any(e == 0 for e in evalues):
        return 0.0
    return math.exp(sum(math.log(e) for e in evalues))


def e_bonferroni(evalues: Sequence[float], alpha: float) -> list[bool]:
    """Reject check ``i`` when ``E_i >= m / alpha`` (valid under any dependence)."""
    check_rate("alpha", alpha)
    m = len(evalues)
    return [e >= m / alpha for e in evalues]
