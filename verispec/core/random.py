"""The ``Random`` protocol: the only source of randomness a verifier may use.

A verifier that takes its coins only from a ``Random`` can be executed two ways:

* exactly, by :func:`verispec.exact.output_law`, which enumerates every branch with
  ``Fraction`` weights and returns the output law;
* by sampling, with :class:`SeededRandom`, a seeded numpy generator.

The code that is proved is the code that is sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from verispec.errors import UsageError

__all__ = ["FLOAT_PROB_ATOL", "Random", "SeededRandom"]

#: How far float rounding may push a probability outside [0, 1] before it is an error.
#: Ratios like ``z / (z + 1 - w)`` in float64 overshoot 1 by a few ulps (about 1e-15).
FLOAT_PROB_ATOL = 1e-9


@runtime_checkable
class Random(Protocol):
    """Randomness as verifiers see it."""

    def bernoulli(self, prob: Any) -> bool:
        """True with probability ``prob`` (``0 <= prob <= 1``)."""
        ...

    def categorical(self, weights: Sequence[Any]) -> int:
        """An index drawn with probability proportional to the non-negative ``weights``."""
        ...


class SeededRandom:
    """Sampling execution: a seeded ``numpy.random.Generator`` behind the protocol.

    ``bernoulli(t)`` is ``U < t`` with ``U`` uniform on ``[0, 1)``, as in the papers. A
    probability that float rounding pushed just outside ``[0, 1]`` (by at most
    :data:`FLOAT_PROB_ATOL`) is clamped; anything further out is an error.
    """

    def __init__(self, seed: int | None = None, *, generator: Any = None) -> None:
        import numpy as np  # deferred: heavy

        if generator is not None:
            self.generator = generator
        else:
            if seed is None or isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise UsageError(f"seed={seed!r} must be a non-negative integer")
            self.generator = np.random.default_rng(seed)
        self.seed = seed

    def bernoulli(self, prob: Any) -> bool:
        p = float(prob)
        if not -FLOAT_PROB_ATOL <= p <= 1.0 + FLOAT_PROB_ATOL:
            raise UsageError(f"bernoulli(prob={p!r}): prob must be in [0, 1]")
        return bool(self.generator.random() < p)

    def categorical(self, weights: Sequence[Any]) -> int:
        w = [float(x) for x in weights]
        if not w or any(not x >= 0 for x in w):
            raise UsageError(f"categorical(weights={w!r}): weights must be non-negative")
        s = sum(w)
        if not s > 0:
            raise UsageError(f"categorical(weights={w!r}): weights sum to zero")
        u = self.generator.random() * s
        acc = 0.0
        last_positive = 0
        for i, x in enumerate(w):
            if x > 0:
                last_positive = i
                acc += x
                if u < acc:
                    return i
        return last_positive  # u landed on the rounding gap at the top
