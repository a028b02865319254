"""Planning: how many samples a test needs for a declared effect, alpha and power.

* :func:`chi_square_sample_size`: Pearson's test, noncentral chi-square (Cohen's ``w``);
* :func:`g_test_sample_size`: the G-test, noncentrality ``2 n D(q || p)``;
* :func:`exact_sample_size`: Pearson or G with the exact critical value and exact power,
  by enumerating count vectors (few categories);
* :func:`neyman_pearson_sample_size`: the most powerful (randomised likelihood-ratio)
  test against one specific alternative, exactly: a lower bound for every fixed-size test;
* :func:`least_favourable`: the alternative at a given total-variation distance that
  Pearson's test finds hardest (``w^2 = 4 TV^2``);
* :func:`plan`: all of it for one null and alternative, plus the sequential designs;
* the conformance suite's plans: :func:`dkw_sample_size` and :func:`dkw_power` (KS tests of
  PIT values), :func:`pooled_pearson_plan` (the first-token law), :func:`z_test_sample_size`
  and :func:`z_test_power` (mean acceptance against the models' prediction).

Reference numbers for p = (0.5, 0.3, 0.2) and q = (0.4, 0.32, 0.28) at alpha = 1e-6 and
power 0.99 (computed independently with scipy 1.17; ``docs/explanation/statistics.md``):
Neyman-Pearson 987, exact Pearson 1090, noncentral Pearson 1056.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.core.distributions import as_float_distribution
from verispec.errors import UsageError
from verispec.stats.gof import EXACT_LIMIT, _log_pmf, _statistics, compositions, pooled_cells

__all__ = [
    "Plan",
    "TwoStagePlan",
    "check_rate",
    "chi_square_power",
    "chi_square_sample_size",
    "cohen_w",
    "dkw_power",
    "dkw_sample_size",
    "exact_sample_size",
    "g_test_sample_size",
    "kl",
    "least_favourable",
    "neyman_pearson_sample_size",
    "plan",
    "pooled_pearson_plan",
    "sprt_expected_samples",
    "two_stage_plan",
    "z_test_power",
    "z_test_sample_size",
]


def check_rate(name: str, value: float) -> float:
    """Validate a probability-like rate in (0, 1); the error names it."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name}={value!r} is not a number") from None
    if not 0 < v < 1 or math.isnan(v):
        raise UsageError(f"{name}={value!r} must be in (0, 1)")
    return v


def _check_law(name: str, values: Sequence[float]) -> list[float]:
    return as_float_distribution(list(values), name=name).tolist()  # type: ignore[no-any-return]


def cohen_w(expected: Sequence[float], alternative: Sequence[float]) -> float:
    """Cohen's effect size ``w = sqrt(sum (a - e)^2 / e)`` over cells with ``e > 0``."""
    if any(a > 0 for e, a in zip(expected, alternative, strict=True) if e == 0):
        return math.inf
    return math.sqrt(sum((a - e) ** 2 / e for e, a in zip(expected, alternative, strict=True) if e > 0))


def kl(a: Sequence[float], b: Sequence[float]) -> float:
    """``D(a || b)`` in nats."""
    total = 0.0
    for x, y in zip(a, b, strict=True):
        if x > 0:
            if y == 0:
                return math.inf
            total += x * math.log(x / y)
    return total


def chi_square_power(n: int, w: float, df: int, alpha: float) -> float:
    """Power of Pearson's test with ``n`` samples against effect ``w`` (noncentral chi-square)."""
    from scipy import stats  # deferred: heavy

    critical = stats.chi2.isf(alpha, df)
    return float(stats.ncx2.sf(critical, df, n * w * w))


def _smallest_n(power_at: Callable[[int], float], power: float, start: int = 1) -> int:
    hi = max(start, 1)
    while power_at(hi) < power:
        hi *= 2
        if hi > 10**9:
            raise UsageError("no sample size up to 1e9 reaches the requested power")
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if power_at(mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def chi_square_sample_size(w: float, df: int, *, alpha: float, power: float) -> int:
    """Smallest ``n`` with ``chi_square_power(n, w, df, alpha) >= power``."""
    check_rate("alpha", alpha)
    check_rate("power", power)
    if not w > 0:
        raise UsageError(f"w={w!r} must be > 0")
    if df < 1:
        raise UsageError(f"df={df!r} must be >= 1")
    return _smallest_n(lambda n: chi_square_power(n, w, df, alpha), power)


def g_test_sample_size(
    null: Sequence[float], alternative: Sequence[float], *, alpha: float, power: float
) -> int:
    """The G-test's sample size with noncentrality ``2 n D(q || p)``."""
    from scipy import stats  # deferred: heavy

    check_rate("alpha", alpha)
    check_rate("power", power)
    df = sum(1 for v in null if v > 0) - 1
    d = kl(alternative, null)
    critical = stats.chi2.isf(alpha, df)
    return _smallest_n(lambda n: float(stats.ncx2.sf(critical, df, 2 * n * d)), power)


def least_favourable(null: Sequence[float], tv: float) -> list[float]:
    """The alternative at total variation ``tv`` minimising Pearson's ``w`` (``w^2 = 4 tv^2``):
    mass moved proportionally to ``p`` from one half of the mass to the other."""
    p = _check_law("null", null)
    if not 0 < tv < 0.5:
        raise UsageError(f"tv={tv!r} must be in (0, 0.5)")
    order = sorted(range(len(p)), key=lambda i: -p[i])
    # split tokens into two halves of (nearly) equal mass; exact when a split point lands at 1/2
    acc, up = 0.0, set()
    for i in order:
        if acc < 0.5:
            up.add(i)
            acc += p[i]
    mass_up = acc
    return [p[i] * (1 - tv / mass_up) if i in up else p[i] * (1 + tv / (1 - mass_up)) for i in range(len(p))]


def _exact_power_curve(
    null: list[float], alternative: list[float], alpha: float, statistic: str
) -> Callable[[int], float]:
    import numpy as np  # deferred: heavy

    def power_at(n: int) -> float:
        table = compositions(n, len(null))
        stats = _statistics(table, null, statistic) if statistic != "lr" else None
        log_p0 = _log_pmf(table, null)
        log_p1 = _log_pmf(table, alternative)
        if statistic == "lr":
            stats = log_p1 - log_p0
        assert stats is not None
        order = np.argsort(-stats, kind="stable")
        s_sorted = stats[order]
        c0 = np.cumsum(np.exp(log_p0[order]))
        c1 = np.cumsum(np.exp(log_p1[order]))
        # a test cannot split a group of equal statistics without randomising: cut at group ends
        ends = np.append(np.flatnonzero(np.diff(s_sorted) != 0), len(s_sorted) - 1)
        allowed = ends[c0[ends] <= alpha]
        cut = int(allowed[-1]) if len(allowed) else -1
        size = float(c0[cut]) if cut >= 0 else 0.0
        power = float(c1[cut]) if cut >= 0 else 0.0
        if statistic == "lr":  # the Neyman-Pearson test randomises on the boundary group
            nxt = ends[ends > cut]
            if len(nxt):
                g_end = int(nxt[0])
                g0 = float(c0[g_end]) - size
                g1 = float(c1[g_end]) - power
                if g0 > 0:
                    power += g1 * (alpha - size) / g0
        return power

    return power_at


def exact_sample_size(
    null: Sequence[float],
    alternative: Sequence[float],
    *,
    alpha: float,
    power: float,
    statistic: str = "pearson",
) -> int:
    """Smallest ``n`` whose exact level-``alpha`` test (exact critical value, no
    randomisation) has exact power ``>= power`` against ``alternative``."""
    check_rate("alpha", alpha)
    check_rate("power", power)
    p, q = _check_law("null", null), _check_law("alternative", alternative)
    start = chi_square_sample_size(cohen_w(p, q), len(p) - 1, alpha=alpha, power=power) // 2
    return _smallest_n(_exact_power_curve(p, q, alpha, statistic), power, start)


def neyman_pearson_sample_size(
    null: Sequence[float], alternative: Sequence[float], *, alpha: float, power: float
) -> int:
    """The exact sample size of the most powerful (randomised likelihood-ratio) level-``alpha``
    test of ``null`` against ``alternative``: no fixed-size test can do with fewer."""
    check_rate("alpha", alpha)
    check_rate("power", power)
    p, q = _check_law("null", null), _check_law("alternative", alternative)
    start = chi_square_sample_size(cohen_w(p, q), len(p) - 1, alpha=alpha, power=power) // 2
    return _smallest_n(_exact_power_curve(p, q, alpha, "lr"), power, start)


def sprt_expected_samples(
    null: Sequence[float], alternative: Sequence[float], *, alpha: float, beta: float
) -> tuple[float, float]:
    """Wald's approximations: ``(E[N | q], E[N | p])``."""
    check_rate("alpha", alpha)
    check_rate("beta", beta)
    upper, lower = math.log((1 - beta) / alpha), math.log(beta / (1 - alpha))
    d_qp, d_pq = kl(alternative, null), kl(null, alternative)
    under_q = ((1 - beta) * upper + beta * lower) / d_qp
    under_p = -((1 - alpha) * lower + alpha * upper) / d_pq
    return under_q, under_p


@dataclass(frozen=True)
class TwoStagePlan:
    alpha1: float
    alpha2: float
    n1: int
    n2: int
    expected_if_correct: float

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def two_stage_plan(
    null: Sequence[float],
    alternative: Sequence[float],
    *,
    alpha: float,
    power: float,
    alpha1: float = 1e-2,
) -> TwoStagePlan:
    """Confirm-on-failure design: stage sizes from the Pearson plan, each at power ``sqrt(power)``."""
    check_rate("alpha", alpha)
    check_rate("alpha1", alpha1)
    if not alpha < alpha1:
        raise UsageError(f"alpha1={alpha1!r} must be larger than alpha={alpha!r}")
    alpha2 = alpha / alpha1
    stage_power = math.sqrt(power)
    w, df = cohen_w(null, alternative), len(null) - 1
    n1 = chi_square_sample_size(w, df, alpha=alpha1, power=stage_power)
    n2 = chi_square_sample_size(w, df, alpha=alpha2, power=stage_power)
    return TwoStagePlan(alpha1, alpha2, n1, n2, n1 + alpha1 * n2)


@dataclass(frozen=True)
class Plan:
    """Sample sizes for one null, one alternative, alpha and power, by design."""

    alpha: float
    power: float
    tv: float
    w: float
    rows: list[tuple[str, int | float, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "power": self.power,
            "tv": self.tv,
            "w": self.w,
            "designs": [{"design": d, "samples": n, "note": note} for d, n, note in self.rows],
        }


def plan(
    null: Sequence[float],
    alternative: Sequence[float] | None = None,
    *,
    tv: float | None = None,
    alpha: float = 1e-6,
    power: float = 0.99,
    exact: bool = True,
) -> Plan:
    """Samples needed by every design for ``null`` against ``alternative`` (or against the
    least favourable alternative at total variation ``tv``)."""
    alpha, power = check_rate("alpha", alpha), check_rate("power", power)
    p = _check_law("null", null)
    if alternative is None:
        if tv is None:
            raise UsageError("give an alternative or a total-variation effect tv")
        q = least_favourable(p, tv)
    else:
        q = _check_law("alternative", alternative)
        if len(q) != len(p):
            raise UsageError(f"alternative has {len(q)} categories but null has {len(p)}")
    effect_tv = 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True))
    w = cohen_w(p, q)
    df = len(p) - 1
    rows: list[tuple[str, int | float, str]] = [
        (
            "pearson (noncentral chi-square plan)",
            chi_square_sample_size(w, df, alpha=alpha, power=power),
            "no alternative needed",
        ),
        (
            "g-test (noncentral chi-square plan)",
            g_test_sample_size(p, q, alpha=alpha, power=power),
            "no alternative needed",
        ),
    ]

    planned = int(rows[0][1])
    small = exact and math.comb(int(1.6 * planned) + len(p) - 1, len(p) - 1) <= EXACT_LIMIT
    if small:
        rows.append(
            (
                "pearson, exact critical value",
                exact_sample_size(p, q, alpha=alpha, power=power),
                "exact power",
            )
        )
        rows.append(
            (
                "neyman-pearson optimum",
                neyman_pearson_sample_size(p, q, alpha=alpha, power=power),
                "lower bound, needs q",
            )
        )
    under_q, under_p = sprt_expected_samples(p, q, alpha=alpha, beta=1 - power)
    rows.append(("sprt against q, expected if buggy (q)", round(under_q, 1), "Wald approximation"))
    rows.append(("sprt against q, expected if correct (p)", round(under_p, 1), "Wald approximation"))
    stage = two_stage_plan(p, q, alpha=alpha, power=power)
    rows.append(
        (
            "two-stage confirm, expected if correct",
            round(stage.expected_if_correct, 1),
            f"stage 1 n={stage.n1} at alpha={stage.alpha1:g}, stage 2 n={stage.n2} at alpha={stage.alpha2:g}",
        )
    )
    rows.append(("two-stage confirm, if buggy", stage.n1 + stage.n2, "both stages run"))
    return Plan(alpha, power, effect_tv, w, rows)


# ----------------------------------------------------------- the conformance suite's plans


def dkw_sample_size(effect: float, alpha: float, power: float, tests: int = 1) -> int:
    """Samples for a KS test to detect distance ``effect`` (DKW with Massart's constant).

    The distance is split evenly between the false-alarm and the miss envelopes, as in
    TensorFlow Probability's ``min_num_samples_for_dkwm_cdf_test``; ``tests`` Bonferroni-splits
    alpha over a battery.

    >>> dkw_sample_size(0.1, 1e-6, 0.99)  # TensorFlow Probability gives the same
    2902
    """
    check_rate("alpha", alpha)
    check_rate("power", power)
    if not 0 < effect <= 1:
        raise UsageError(f"effect={effect!r} must be in (0, 1]")
    return math.ceil(max(math.log(2 * tests / alpha), math.log(2 / (1 - power))) / (2 * (effect / 2) ** 2))


def dkw_power(effect: float, n: int, alpha: float, tests: int = 1) -> float:
    """A lower bound on the power of a KS test with ``n`` samples against distance ``effect``
    (DKW): the false-alarm envelope is ``e_a = sqrt(log(2 tests / alpha) / 2n)``, and the
    empirical CDF strays more than ``effect - e_a`` with probability at most
    ``2 exp(-2 n (effect - e_a)^2)``."""
    check_rate("alpha", alpha)
    if n < 1:
        return 0.0
    envelope = math.sqrt(math.log(2 * tests / alpha) / (2 * n))
    margin = effect - envelope
    if margin <= 0:
        return 0.0
    return max(0.0, 1 - 2 * math.exp(-2 * n * margin * margin))


def pooled_pearson_plan(
    law: Sequence[float], tv: float, *, alpha: float, power: float
) -> tuple[int, list[list[int]]]:
    """Requests and pooled cells for Pearson's test of ``law`` to detect ``tv`` at ``power``.

    On the test's cells, every alternative at total variation ``tv`` has Cohen's
    ``w >= 2 tv`` (Cauchy-Schwarz), so planning at ``w = 2 tv`` covers all of them. The cells
    are pooled from the exact law and the planned size (never from observed counts), and the
    plan is redone once on the pooled cells' degrees of freedom.
    """
    support = {t: v for t, v in enumerate(law) if v > 0}
    df = max(len(support) - 1, 1)
    n = chi_square_sample_size(2 * tv, df, alpha=alpha, power=power)
    cells = pooled_cells(support, n)
    if len(cells) > 1:
        n = chi_square_sample_size(2 * tv, len(cells) - 1, alpha=alpha, power=power)
        cells = pooled_cells(support, n)
    return n, cells


#: The largest standard deviation of a Bernoulli outcome: the z-test plans are worst-case.
BERNOULLI_SD = 0.5


def z_test_sample_size(delta: float, *, alpha: float, power: float, sd: float = BERNOULLI_SD) -> int:
    """Observations for a two-sided z-test of a mean to detect a shift ``delta``."""
    from scipy import stats  # deferred: heavy

    check_rate("alpha", alpha)
    check_rate("power", power)
    z = stats.norm.isf(alpha / 2) + stats.norm.isf(1 - power)
    return math.ceil(float(z * sd / delta) ** 2)


def z_test_power(delta: float, n: int, *, alpha: float, sd: float = BERNOULLI_SD) -> float:
    """The power of a two-sided z-test with ``n`` observations against a shift ``delta``."""
    from scipy import stats  # deferred: heavy

    check_rate("alpha", alpha)
    if n < 1:
        return 0.0
    return float(stats.norm.sf(stats.norm.isf(alpha / 2) - delta * math.sqrt(n) / sd))
