"""Sample-size planning for Pearson's chi-square test (noncentral chi-square)."""

from __future__ import annotations

import math

from verispec.errors import UsageError

__all__ = ["chi_square_power", "chi_square_sample_size", "cohen_w"]


def _check_rate(name: str, value: float) -> None:
    if not 0 < value < 1:
        raise UsageError(f"{name}={value!r} must be in (0, 1)")


def cohen_w(expected: list[float], alternative: list[float]) -> float:
    """Cohen's effect size ``w = sqrt(sum (a - e)^2 / e)`` over cells with ``e > 0``."""
    if any(a > 0 for e, a in zip(expected, alternative, strict=True) if e == 0):
        return math.inf
    return math.sqrt(sum((a - e) ** 2 / e for e, a in zip(expected, alternative, strict=True) if e > 0))


def chi_square_power(n: int, w: float, df: int, alpha: float) -> float:
    """Power of Pearson's test with ``n`` samples against effect ``w`` (noncentral chi-square)."""
    from scipy import stats

    critical = stats.chi2.isf(alpha, df)
    return float(stats.ncx2.sf(critical, df, n * w * w))


def chi_square_sample_size(w: float, df: int, *, alpha: float, power: float) -> int:
    """Smallest ``n`` with ``chi_square_power(n, w, df, alpha) >= power``.

    The noncentral chi-square approximation is within a few percent of exact enumeration at
    these sizes (see ../shared/reference/statistics.md, section 0).
    """
    _check_rate("alpha", alpha)
    _check_rate("power", power)
    if not w > 0:
        raise UsageError(f"w={w!r} must be > 0")
    if df < 1:
        raise UsageError(f"df={df!r} must be >= 1")
    hi = 1
    while chi_square_power(hi, w, df, alpha) < power:
        hi *= 2
    lo = hi // 2
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if chi_square_power(mid, w, df, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi
