"""Sequential designs: SPRT, an anytime-valid e-process, and two-stage confirmation.

* :class:`SPRT` (Wald): the cumulative log likelihood ratio of a named alternative ``q``
  against the null ``p``; reject at ``log((1 - beta) / alpha)``, accept at
  ``log(beta / (1 - alpha))``. It certifies "not q", so it is used against canary
  alternatives (the exact laws known bugs produce).
* :class:`DirichletEProcess` (Lindon and Malek, 2022): a Dirichlet(``c p``) mixture
  likelihood ratio. By Ville's inequality, rejecting the first time it exceeds ``1/alpha``
  has false-alarm rate at most ``alpha`` under any stopping rule; capped at ``cap``
  samples, after which the verdict is "no evidence".
* :func:`two_stage_plan`: stage 1 at ``alpha1``; only if it rejects, stage 2 on fresh
  samples at ``alpha2``; the run fails only if both reject (``alpha = alpha1 * alpha2``).

The sample sizes of these designs (:func:`sprt_expected_samples`, :func:`two_stage_plan`) are
planned in :mod:`verispec.stats.plan` with the others, and re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verispec.errors import UsageError
from verispec.stats.plan import TwoStagePlan, check_rate, sprt_expected_samples, two_stage_plan

__all__ = [
    "SPRT",
    "DirichletEProcess",
    "TwoStagePlan",
    "dirichlet_log_e",
    "sprt_expected_samples",
    "two_stage_plan",
]

#: The Dirichlet mixture's concentration (its prior is ``concentration * p``).
DIRICHLET_CONCENTRATION = 100.0


@dataclass
class SPRT:
    """Wald's sequential probability ratio test of ``null`` against ``alternative``."""

    null: Sequence[float]
    alternative: Sequence[float]
    alpha: float
    beta: float
    llr: float = 0.0
    n: int = 0
    decision: str | None = None

    def __post_init__(self) -> None:
        check_rate("alpha", self.alpha)
        check_rate("beta", self.beta)
        self._upper = math.log((1 - self.beta) / self.alpha)
        self._lower = math.log(self.beta / (1 - self.alpha))

    def update(self, outcome: int) -> str | None:
        """Add one observation; return ``"reject"``, ``"accept"`` or ``None`` (continue)."""
        if self.decision is not None:
            return self.decision
        p, q = self.null[outcome], self.alternative[outcome]
        self.n += 1
        if p == 0:
            self.llr = math.inf
        elif q == 0:
            self.llr = -math.inf
        else:
            self.llr += math.log(q / p)
        if self.llr >= self._upper:
            self.decision = "reject"
        elif self.llr <= self._lower:
            self.decision = "accept"
        return self.decision


@dataclass
class DirichletEProcess:
    """Anytime-valid test of a categorical null: Dirichlet(``concentration * p``) mixture.

    ``log_e`` is the log e-value after the counts so far; :meth:`update` rejects the first
    time ``log_e >= log(1 / alpha)``. At ``cap`` samples without rejection the decision is
    ``"no evidence"`` (never "proved correct").
    """

    null: Sequence[float]
    alpha: float
    cap: int
    concentration: float = DIRICHLET_CONCENTRATION
    n: int = 0
    log_e: float = 0.0
    decision: str | None = None

    def __post_init__(self) -> None:
        check_rate("alpha", self.alpha)
        if self.cap < 1:
            raise UsageError(f"cap={self.cap} must be >= 1")
        if not self.concentration > 0:
            raise UsageError(f"concentration={self.concentration} must be > 0")
        self._a = [self.concentration * p for p in self.null]
        self._counts = [0] * len(self.null)
        self._threshold = math.log(1 / self.alpha)

    def update(self, outcome: int) -> str | None:
        if self.decision is not None:
            return self.decision
        p = self.null[outcome]
        if p == 0:
            self.log_e = math.inf
            self.decision = "reject"
            return self.decision
        # sequential form of the mixture: predictive probability over null probability
        predictive = (self._a[outcome] + self._counts[outcome]) / (self.concentration + self.n)
        self.log_e += math.log(predictive / p)
        self._counts[outcome] += 1
        self.n += 1
        if self.log_e >= self._threshold:
            self.decision = "reject"
        elif self.n >= self.cap:
            self.decision = "no evidence"
        return self.decision


def dirichlet_log_e(
    counts: Mapping[str, int], law: Mapping[str, Any], concentration: float = DIRICHLET_CONCENTRATION
) -> float:
    """The log e-value of the Dirichlet(``concentration * p``) mixture against the law ``p``
    after ``counts``: the batch form of :class:`DirichletEProcess` (the mixture is exchangeable,
    so it needs the counts only, not their order); ``inf`` when an outcome of
    probability 0 was seen."""
    n = sum(counts.values())
    log_e = math.lgamma(concentration) - math.lgamma(concentration + n)
    for outcome, k in counts.items():
        if not k:
            continue
        p = float(law.get(outcome, 0))
        if p == 0:
            return math.inf
        a = concentration * p
        log_e += math.lgamma(a + k) - math.lgamma(a) - k * math.log(p)
    return log_e
