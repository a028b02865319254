"""Goodness-of-fit against an exact law, with pooling decided before sampling."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from verispec.errors import UsageError
from verispec.stats.constants import MIN_EXPECTED_COUNT

__all__ = ["PearsonResult", "pearson_test", "pooled_cells"]


def pooled_cells(
    law: Mapping[Hashable, Any], n: int, *, min_expected: float = MIN_EXPECTED_COUNT
) -> list[list[Hashable]]:
    """Cells for a chi-square test: outcomes with ``n * p >= min_expected`` stand alone, the
    rest are pooled. Decided from the exact law and the planned ``n`` only.
    """
    if n < 1:
        raise UsageError(f"n={n} must be >= 1")
    ordered = sorted((k for k in law if law[k] > 0), key=lambda k: (-float(law[k]), repr(k)))
    cells = [[k] for k in ordered if n * float(law[k]) >= min_expected]
    rest = [k for k in ordered if n * float(law[k]) < min_expected]
    if rest:
        if n * sum(float(law[k]) for k in rest) >= min_expected or not cells:
            cells.append(rest)
        else:
            cells[-1].extend(rest)
    return cells


@dataclass(frozen=True)
class PearsonResult:
    """Pearson's chi-square test result (scipy's naming: ``statistic``, ``pvalue``)."""

    statistic: float
    pvalue: float
    df: int
    n: int


def pearson_test(
    counts: Mapping[Hashable, int], law: Mapping[Hashable, Any], cells: list[list[Hashable]]
) -> PearsonResult:
    """Pearson's test of ``counts`` against ``law`` over pre-planned ``cells``.

    An outcome outside the law's support makes the p-value 0 (it is impossible under H0).
    """
    from scipy import stats

    n = sum(counts.values())
    if n < 1:
        raise UsageError("counts are empty")
    support = {k for cell in cells for k in cell}
    if any(c > 0 and k not in support for k, c in counts.items()):
        return PearsonResult(float("inf"), 0.0, len(cells) - 1, n)
    statistic = 0.0
    for cell in cells:
        expected = n * sum(float(law[k]) for k in cell)
        observed = sum(counts.get(k, 0) for k in cell)
        statistic += (observed - expected) ** 2 / expected
    df = len(cells) - 1
    return PearsonResult(statistic, float(stats.chi2.sf(statistic, df)) if df > 0 else 1.0, df, n)
