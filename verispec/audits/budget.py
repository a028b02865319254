"""Budgeted audits: sample each instance for its share of a time or sample budget, and report
the total variation the samples drawn could have detected (the audit's resolution).

``verispec audit --budget 60s`` (or ``--budget 2m``, or a number of samples, ``--budget
2000000``) splits the budget evenly over the battery's instances. Each instance is sampled in
chunks (1,000 samples first, then as many as its remaining time allows at the speed of the
last chunk, at most the samples drawn before: the e-process is checked at least at every doubling);
the chunk sizes depend on the verifier's speed, never on its outputs. A verifier given as
``module:function`` runs in one worker process per CPU, each taking the next instance, so a
time budget is wall time shared by the workers. Two tests share the instance's false-alarm rate
``alpha / instances`` in halves:

* an anytime-valid e-process (the Dirichlet mixture of
  :class:`~verispec.stats.sequential.DirichletEProcess` over the unpooled outcomes, in its
  batch form :func:`~verispec.stats.sequential.dirichlet_log_e`) checked after every chunk:
  the instance stops early, rejected, the first time it reaches ``2 instances / alpha``
  (Ville's inequality holds at any stopping time);
* at the end of the budget, the G-tests of the sequence and position views on the cells
  pooled for the samples drawn, Bonferroni-combined as in the planned audit
  (:mod:`verispec.audits.views`).

The resolution of an instance is the smallest total variation at which the final sequence
test, at its Bonferroni share of the half rate and with the samples drawn, has the declared
power (the least
favourable alternative has Cohen's ``w = 2 tv``): what a pass rules out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from verispec.errors import UsageError

__all__ = ["Budget", "parse_budget", "resolution"]

#: Samples of an instance's first chunk (its speed is measured on it).
FIRST_CHUNK = 1000
#: A chunk is at most this many times the samples drawn before it (the e-process is
#: checked after every chunk: a stop overshoots the samples it needed by at most this factor).
GROWTH = 2


@dataclass(frozen=True)
class Budget:
    """A time budget (``seconds``) or a sample budget (``samples``) for a whole audit."""

    seconds: float | None = None
    samples: int | None = None

    def describe(self) -> str:
        return f"{self.seconds:g} s" if self.seconds is not None else f"{self.samples} samples"


def parse_budget(text: str) -> Budget:
    """``"60s"``, ``"2m"``, ``"1.5m"`` (time) or ``"2000000"`` (samples, over the battery)."""
    value = str(text).strip().lower()
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|m)", value)
    if match:
        seconds = float(match.group(1)) * (60.0 if match.group(2) == "m" else 1.0)
        if not seconds > 0 or not math.isfinite(seconds):
            raise UsageError(f"budget={text!r} must be a positive time (60s, 2m) or number of samples")
        return Budget(seconds=seconds)
    if re.fullmatch(r"\d+", value):
        samples = int(value)
        if samples < 1:
            raise UsageError(f"budget={text!r} must be a positive time (60s, 2m) or number of samples")
        return Budget(samples=samples)
    raise UsageError(f"budget={text!r} is not a time (60s, 2m) or a number of samples (2000000)")


def resolution(n: int, df: int, *, alpha: float, power: float) -> float | None:
    """The smallest total variation the G-test (Pearson's noncentral approximation) detects
    with ``power`` at ``n`` samples and rate ``alpha``; ``None`` if not even 0.49."""
    from verispec.stats.plan import chi_square_power

    df = max(df, 1)
    if n < 1 or chi_square_power(n, 2 * 0.49, df, alpha) < power:
        return None
    low, high = 1e-6, 0.49
    for _ in range(60):
        mid = math.sqrt(low * high)
        if chi_square_power(n, 2 * mid, df, alpha) >= power:
            high = mid
        else:
            low = mid
    return high
