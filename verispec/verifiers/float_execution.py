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
from verispec.verifiers.registry import Verifier

__all__ = ["FloatInstance", "sample_blocks"]


class FloatInstance:
    """An instance (chain or tree) seen in float64: every ``*_probs`` row it hands out is a
    float tuple; every other attribute is the exact instance's."""

    def __init__(self, instance: Any) -> None:
        self.exact = instance
        self._cache: dict[tuple[Any, ...], tuple[float, ...]] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.exact, name)
        if not (name.endswith("_probs") and callable(attr)):
            return attr

        def rows(*args: Any) -> tuple[float, ...]:
            key = (name, *args)
            row = self._cache.get(key)
            if row is None:
                row = tuple(float(v) for v in attr(*args))
                self._cache[key] = row
            return row

        return rows


def sample_blocks(entry: Verifier, instance: Any, n: int, *, seed: int) -> Counter[tuple[int, ...]]:
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
        counts[entry.round(view, rand)] += 1
    return counts
