"""The randomized probability integral transform along the target's own conditionals.

For a categorical law ``p`` and a fixed ordering of its tokens, ``u = F(x-) + V p(x)`` with
``V`` uniform is exactly uniform when ``x ~ p``, and has density ``q_i / p_i`` on the i-th
interval when ``x ~ q``. Along a generated sequence, with ``p`` the target's conditional
after the prefix (Rosenblatt 1952), the ``u_t`` are i.i.d. uniform when the sequence has
the target's law, whatever the sampler did internally. The ordering may depend on the
prefix; verispec uses a small battery aimed at bug families:

* ``target-probability``: most probable first (temperature, top-p, entropy bugs);
* ``draft-ratio``: highest ``q/p`` first (acceptance and residual bugs);
* ``token-id``: the plain order (a baseline; pooled over contexts it has little power).

Each ordering's ``u`` values get an exact Kolmogorov-Smirnov test; the battery's p-value is
Bonferroni's ``min p * m``. A token with target probability zero is conclusive by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.errors import UsageError

__all__ = ["ORDERINGS", "PitBattery", "ks_uniform", "order_tokens", "pit_battery", "randomized_pit"]

ORDERINGS = ("target-probability", "draft-ratio", "token-id")


def order_tokens(ordering: str, target: Sequence[float], draft: Sequence[float] | None = None) -> list[int]:
    """The token order of one conditional (a function of the prefix only)."""
    ids = range(len(target))
    if ordering == "token-id":
        return list(ids)
    if ordering == "target-probability":
        return sorted(ids, key=lambda t: (-target[t], t))
    if ordering == "draft-ratio":
        if draft is None:
            raise UsageError("ordering='draft-ratio' needs the draft's conditional")

        def ratio(t: int) -> float:
            return float("inf") if target[t] == 0 else draft[t] / target[t]

        return sorted(ids, key=lambda t: (-ratio(t), t))
    raise UsageError(f"ordering={ordering!r} is not one of {', '.join(ORDERINGS)}")


def randomized_pit(token: int, target: Sequence[float], order: Sequence[int], v: float) -> float:
    """``F(x-) + v p(x)`` along ``order``; ``nan`` if ``p(x) == 0`` (impossible token)."""
    below = 0.0
    for t in order:
        if t == token:
            return below + v * float(target[t]) if target[t] > 0 else float("nan")
        below += float(target[t])
    raise UsageError(f"token {token} is not in the ordering")


def _below(ordering: str, p: Any, q: Any, token: int) -> float:
    """``F(x-)`` of :func:`randomized_pit` along :func:`order_tokens`' order, without sorting
    the vocabulary: the mass of the tokens that order puts before ``token`` (ties broken by
    id, as there). Linear in the vocabulary, for trained models' 50 thousand tokens."""
    import numpy as np  # deferred: heavy

    ids = np.arange(p.shape[0])
    if ordering == "token-id":
        return float(p[:token].sum())
    if ordering == "target-probability":
        key = p
    elif ordering == "draft-ratio":
        if q is None:
            raise UsageError("ordering='draft-ratio' needs the draft's conditional")
        with np.errstate(divide="ignore", invalid="ignore"):
            key = np.where(p == 0, np.inf, q / np.where(p == 0, 1.0, p))
    else:
        raise UsageError(f"ordering={ordering!r} is not one of {', '.join(ORDERINGS)}")
    before = (key > key[token]) | ((key == key[token]) & (ids < token))
    return float(p[before].sum())


def ks_uniform(u: Sequence[float]) -> tuple[float, float]:
    """Kolmogorov-Smirnov test of uniformity: ``(statistic, pvalue)``, exact for n <= 10000."""
    from scipy import stats  # deferred: heavy

    n = len(u)
    if n == 0:
        raise UsageError("no PIT values to test")
    result = stats.kstest(list(u), "uniform", method="exact" if n <= 10_000 else "asymp")
    return float(result.statistic), float(result.pvalue)


@dataclass
class PitBattery:
    """PIT values under each ordering, their KS p-values, and the battery's p-value."""

    n: int
    pvalues: dict[str, float] = field(default_factory=dict)
    statistics: dict[str, float] = field(default_factory=dict)
    impossible: int = 0
    #: counts of the first ordering's PIT values in ten equal bins (for plots)
    histogram: list[int] = field(default_factory=list)

    @property
    def pvalue(self) -> float:
        if self.impossible:
            return 0.0
        return min(1.0, min(self.pvalues.values()) * len(self.pvalues)) if self.pvalues else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "pvalue": self.pvalue,
            "pvalues": self.pvalues,
            "statistics": self.statistics,
            "impossible_tokens": self.impossible,
        }


def pit_battery(
    sequences: Sequence[Sequence[int]],
    target: Callable[[tuple[int, ...]], Sequence[float]],
    *,
    draft: Callable[[tuple[int, ...]], Sequence[float]] | None = None,
    orderings: Sequence[str] = ("target-probability", "draft-ratio"),
    rng: Any = None,
    seed: int | None = None,
    skip: Callable[[Sequence[int], int], bool] | None = None,
) -> PitBattery:
    """Randomized PIT of every token of every sequence under each ordering, then KS tests.

    ``target(prefix)`` (and ``draft(prefix)`` for ``draft-ratio``) give the conditionals; the
    same uniform ``V`` is used for a token under every ordering. ``skip(sequence, t)`` leaves
    out tokens that are not samples (a prompt).
    """
    import numpy as np  # deferred: heavy

    if rng is None:
        if seed is None:
            raise UsageError("pit_battery needs rng= or seed= (seeds are fixed and logged)")
        rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {o: [] for o in orderings}
    impossible = n = 0
    for seq in sequences:
        for t in range(len(seq)):
            if skip is not None and skip(seq, t):
                continue
            prefix = tuple(seq[:t])
            p = np.asarray(target(prefix), dtype=np.float64)
            token = seq[t]
            if not p[token] > 0:
                impossible += 1
                continue
            q = np.asarray(draft(prefix), dtype=np.float64) if draft is not None else None
            v = float(rng.random())
            n += 1
            for ordering in orderings:
                values[ordering].append(_below(ordering, p, q, token) + v * float(p[token]))
    out = PitBattery(n, impossible=impossible)
    for ordering, u in values.items():
        if u:
            out.statistics[ordering], out.pvalues[ordering] = ks_uniform(u)
    if orderings and values[orderings[0]]:
        out.histogram = np.histogram(values[orderings[0]], bins=10, range=(0.0, 1.0))[0].tolist()
    return out
