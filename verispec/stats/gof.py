"""Goodness-of-fit against an exact law: Pearson, G-test, exact multinomial.

Cells are decided from the exact law and the planned sample size, before any sample is
drawn (:func:`pooled_cells`), never from observed counts. An outcome outside the law's
support is conclusive on its own (p-value 0): no statistics are needed for impossible
tokens.

At the small false-alarm rates verispec uses, the chi-square approximation of Pearson's
statistic can be off by an order of magnitude on skewed laws, while the G-test stays near
nominal (by exact enumeration: 9.7 times nominal for p = (0.9, 0.09, 0.01) at n = 1000;
``docs/explanation/statistics.md``). So:

* with few cells and samples the p-value is computed **exactly**, by enumerating every
  count vector (:func:`exact_pvalue`);
* otherwise the G-test's chi-square p-value is used, and the calibration harness measures
  its real false-alarm rate (``docs/explanation/statistics.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from verispec.errors import UsageError
from verispec.stats.constants import MIN_EXPECTED_COUNT

__all__ = [
    "EXACT_LIMIT",
    "GofResult",
    "PearsonResult",
    "cell_counts",
    "compositions",
    "exact_pvalue",
    "g_statistic",
    "g_test",
    "pearson_statistic",
    "pearson_test",
    "pooled_cells",
    "williams_factor",
]

#: Most count vectors :func:`exact_pvalue` enumerates (about 60 MB of float64 work arrays).
EXACT_LIMIT = 3_000_000


def pooled_cells(
    law: Mapping[Any, Any], n: int, *, min_expected: float = MIN_EXPECTED_COUNT
) -> list[list[Any]]:
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


def cell_counts(
    counts: Mapping[Any, int], law: Mapping[Any, Any], cells: list[list[Any]]
) -> tuple[list[int], list[float], int]:
    """Observed counts and null probabilities per cell, and the count outside the support."""
    support = {k for cell in cells for k in cell}
    outside = sum(c for k, c in counts.items() if c > 0 and k not in support)
    observed = [sum(counts.get(k, 0) for k in cell) for cell in cells]
    probs = [sum(float(law[k]) for k in cell) for cell in cells]
    return observed, probs, outside


def pearson_statistic(observed: Sequence[int], probs: Sequence[float]) -> float:
    n = sum(observed)
    return float(sum((o - n * p) ** 2 / (n * p) for o, p in zip(observed, probs, strict=True)))


def g_statistic(observed: Sequence[int], probs: Sequence[float]) -> float:
    n = sum(observed)
    return float(2 * sum(o * math.log(o / (n * p)) for o, p in zip(observed, probs, strict=True) if o > 0))


@dataclass(frozen=True)
class GofResult:
    """A goodness-of-fit result, in scipy's style (``statistic``, ``pvalue``)."""

    statistic: float
    pvalue: float
    df: int
    n: int
    method: str
    outside_support: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "df": self.df,
            "n": self.n,
            "method": self.method,
            "outside_support": self.outside_support,
        }


PearsonResult = GofResult


def compositions(n: int, k: int) -> Any:
    """Every vector of ``k`` non-negative counts summing to ``n``, as an int array (rows)."""
    import numpy as np  # deferred: heavy

    total = math.comb(n + k - 1, k - 1)
    if total > EXACT_LIMIT:
        raise UsageError(f"{total} count vectors for n={n}, k={k} exceed EXACT_LIMIT={EXACT_LIMIT}")
    rows = np.zeros((1, 0), dtype=np.int64)
    remaining = np.array([n], dtype=np.int64)
    for _ in range(k - 1):
        reps = remaining + 1
        idx = np.repeat(np.arange(len(rows)), reps)
        starts = np.cumsum(reps) - reps
        first = np.arange(len(idx)) - np.repeat(starts, reps)
        rows = np.column_stack([rows[idx], first])
        remaining = remaining[idx] - first
    return np.column_stack([rows, remaining])


def _log_pmf(table: Any, probs: Sequence[float]) -> Any:
    import numpy as np  # deferred: heavy
    from scipy.special import gammaln  # deferred: heavy

    n = int(table[0].sum())
    logp = np.log(np.asarray(probs, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        terms = np.where(table > 0, table * logp, 0.0)
    return gammaln(n + 1) - gammaln(table + 1).sum(axis=1) + terms.sum(axis=1)


def _statistics(table: Any, probs: Sequence[float], statistic: str) -> Any:
    import numpy as np  # deferred: heavy

    n = int(table[0].sum())
    expected = n * np.asarray(probs, dtype=np.float64)
    if statistic == "pearson":
        return ((table - expected) ** 2 / expected).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(table > 0, table * np.log(table / expected), 0.0)
    return 2 * terms.sum(axis=1)


def exact_pvalue(observed: Sequence[int], probs: Sequence[float], statistic: str = "pearson") -> float:
    """``P_H0(T >= t_observed)`` by enumerating every count vector (exact, no asymptotics)."""
    import numpy as np  # deferred: heavy

    n, k = sum(observed), len(observed)
    table = compositions(n, k)
    stats = _statistics(table, probs, statistic)
    t_obs = float(_statistics(np.asarray([observed]), probs, statistic)[0])
    pmf = np.exp(_log_pmf(table, probs))
    return float(min(1.0, pmf[stats >= t_obs * (1 - 1e-12)].sum()))


def _test(
    counts: Mapping[Any, int],
    law: Mapping[Any, Any],
    cells: list[list[Any]],
    statistic: str,
    exact: str,
) -> GofResult:
    from scipy import stats as sps  # deferred: heavy

    n = sum(counts.values())
    if n < 1:
        raise UsageError("counts are empty: no samples to test")
    observed, probs, outside = cell_counts(counts, law, cells)
    df = len(cells) - 1
    if outside:
        return GofResult(math.inf, 0.0, df, n, f"{statistic}: outcome outside the support", outside)
    value = pearson_statistic(observed, probs) if statistic == "pearson" else g_statistic(observed, probs)
    if df < 1:
        return GofResult(value, 1.0, df, n, f"{statistic}: one cell")
    feasible = math.comb(n + len(cells) - 1, len(cells) - 1) <= EXACT_LIMIT
    if exact == "always" or (exact == "auto" and feasible):
        return GofResult(
            value, exact_pvalue(observed, probs, statistic), df, n, f"{statistic}, exact enumeration"
        )
    if statistic == "g":
        # Williams' correction: the chi-square approximation of G is liberal by about the factor
        # q = 1 + (k^2 - 1) / (6 n); dividing by it brings the measured false-alarm rate to nominal
        corrected = value / williams_factor(len(cells), n)
        return GofResult(
            value, float(sps.chi2.sf(corrected, df)), df, n, "g, chi-square with Williams' correction"
        )
    return GofResult(value, float(sps.chi2.sf(value, df)), df, n, f"{statistic}, chi-square asymptotic")


def williams_factor(cells: int, n: int) -> float:
    """Williams (1976): ``q = 1 + (k^2 - 1) / (6 n)`` for a goodness-of-fit G-test with ``k`` cells."""
    return 1 + (cells * cells - 1) / (6 * n)


def pearson_test(
    counts: Mapping[Any, int],
    law: Mapping[Any, Any],
    cells: list[list[Any]],
    *,
    exact: str = "auto",
) -> GofResult:
    """Pearson's test of ``counts`` against ``law`` over pre-planned ``cells``.

    ``exact="auto"`` enumerates count vectors when there are at most :data:`EXACT_LIMIT`
    of them; ``"never"`` uses the chi-square approximation.
    """
    return _test(counts, law, cells, "pearson", exact)


def g_test(
    counts: Mapping[Any, int],
    law: Mapping[Any, Any],
    cells: list[list[Any]],
    *,
    exact: str = "auto",
) -> GofResult:
    """The G-test (likelihood ratio against the saturated model), same conventions."""
    return _test(counts, law, cells, "g", exact)
