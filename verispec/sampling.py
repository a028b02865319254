"""Sampling execution: the registered verifier code, run with floats and a seeded generator.

:func:`sample_blocks` runs rounds of a registered verifier on an instance whose rows are
converted to float64, with :class:`~verispec.core.random.SeededRandom` as the randomness.
It is the same verifier and drafter code that the exact executor enumerates; only the
number type and the source of coins differ.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from verispec.core.random import SeededRandom
from verispec.errors import UsageError
from verispec.verifiers.instance import ChainInstance, run_round
from verispec.verifiers.registry import ChainVerifier

__all__ = ["FloatInstance", "sample_blocks"]

Prefix = tuple[int, ...]


class FloatInstance:
    """A :class:`ChainInstance` seen in float64: every row it hands out is a float tuple."""

    def __init__(self, instance: ChainInstance) -> None:
        self.exact = instance
        self.gamma = instance.gamma
        self.vocab_size = instance.vocab_size
        self._cache: dict[tuple[str, Prefix], tuple[float, ...]] = {}

    def _row(self, which: str, prefix: Prefix) -> tuple[float, ...]:
        key = (which, prefix)
        row = self._cache.get(key)
        if row is None:
            row = tuple(float(v) for v in getattr(self.exact, which)(prefix))
            self._cache[key] = row
        return row

    def target_probs(self, prefix: Prefix) -> tuple[float, ...]:
        return self._row("target_probs", prefix)

    def draft_probs(self, prefix: Prefix) -> tuple[float, ...]:
        return self._row("draft_probs", prefix)

    def raw_draft_probs(self, prefix: Prefix) -> tuple[float, ...]:
        return self._row("raw_draft_probs", prefix)

    def untempered_draft_probs(self, prefix: Prefix) -> tuple[float, ...]:
        return self._row("untempered_draft_probs", prefix)


def sample_blocks(
    entry: ChainVerifier, instance: ChainInstance, n: int, *, seed: int
) -> Counter[tuple[int, ...]]:
    """Counts of the blocks committed by ``n`` independent rounds (float execution).

    >>> import verispec
    >>> inst = verispec.ChainInstance(verispec.FixedModel(["1/2", "1/2"]),
    ...                               verispec.FixedModel(["1/2", "1/2"]), gamma=1)
    >>> counts = sample_blocks(verispec.get_verifier("token-level"), inst, 1000, seed=0)
    >>> sum(counts.values())
    1000
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise UsageError(f"n={n!r} must be a non-negative integer")
    rand = SeededRandom(seed)
    view: Any = FloatInstance(instance)
    counts: Counter[tuple[int, ...]] = Counter()
    for _ in range(n):
        counts[run_round(entry.verify, entry.draft, view, rand)] += 1
    return counts
