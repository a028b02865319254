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

from verispec.errors import UsageError
from verispec.stats.constants import SUITE_ALPHA

__all__ = ["Budget", "e_bonferroni", "e_product", "holm"]


@dataclass
class Budget:
    """A family-wise false-alarm budget, split across checks by weight (Bonferroni)."""

    total: float = SUITE_ALPHA
    shares: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0 < self.total < 1:
            raise UsageError(f"total={self.total!r} must be in (0, 1)")

    def allocate(self, weights: dict[str, float]) -> dict[str, float]:
        """Give each named check ``total * weight / sum(weights)``; names must be new."""
        if not weights or any(not w > 0 for w in weights.values()):
            raise UsageError(f"weights={weights!r} must be positive")
        clash = set(weights) & set(self.shares)
        if clash:
            raise UsageError(f"checks already allocated: {sorted(clash)}")
        used = sum(self.shares.values())
        remaining = self.total - used
        s = sum(weights.values())
        for name, w in weights.items():
            self.shares[name] = remaining * w / s
        return {name: self.shares[name] for name in weights}

    @property
    def spent(self) -> float:
        return sum(self.shares.values())


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


def e_product(evalues: Sequence[float]) -> float:
    """The product of independent e-values (an e-value); computed in log space."""
    if any(e < 0 for e in evalues):
        raise UsageError("e-values must be non-negative")
    if any(e == 0 for e in evalues):
        return 0.0
    return math.exp(sum(math.log(e) for e in evalues))


def e_bonferroni(evalues: Sequence[float], alpha: float) -> list[bool]:
    """Reject check ``i`` when ``E_i >= m / alpha`` (valid under any dependence)."""
    if not 0 < alpha < 1:
        raise UsageError(f"alpha={alpha!r} must be in (0, 1)")
    m = len(evalues)
    return [e >= m / alpha for e in evalues]
