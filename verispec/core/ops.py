"""Arithmetic on probability rows that works for every number type verispec executes with.

Verifiers are written once against these helpers, so the same code runs on exact
``Fraction`` rows (the exact executor), on ``float`` rows (the sampling executor) and, for
the few controls that use ``exp``, on certified intervals
(:mod:`verispec.core.certified`).

Rows are plain Python sequences. Every helper returns a new ``list``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from verispec.core.certified import CertifiedReal
from verispec.errors import InternalError

__all__ = [
    "argmax",
    "exp",
    "log",
    "normalize",
    "one_like",
    "point_mass",
    "positive_part",
    "softmax",
    "total",
    "zero_like",
]

Row = Sequence[Any]


def zero_like(value: Any) -> Any:
    """The zero of ``value``'s number type (exact zero for exact and certified numbers)."""
    return 0.0 if isinstance(value, float) else Fraction(0)


def one_like(value: Any) -> Any:
    """The one of ``value``'s number type (exact one for exact and certified numbers)."""
    return 1.0 if isinstance(value, float) else Fraction(1)


def total(row: Row) -> Any:
    """Sum of a row, starting from the row's own zero."""
    acc = zero_like(row[0])
    for v in row:
        acc = acc + v
    return acc


def positive_part(a: Row, b: Row) -> list[Any]:
    """``[max(a - b, 0)]`` elementwise: the unnormalised residual of the papers."""
    out = []
    for x, y in zip(a, b, strict=True):
        d = x - y
        out.append(d if d > 0 else zero_like(d))
    return out


def normalize(row: Row) -> list[Any]:
    """Divide a non-negative row by its sum. A zero row is a bug in the caller."""
    s = total(row)
    if not s > 0:
        raise InternalError(f"normalize() of a row with sum {s}: the branch should be unreachable")
    return [v / s for v in row]


def argmax(row: Row) -> int:
    """Index of the largest entry; the lowest index wins ties (the greedy contract)."""
    best = 0
    for i in range(1, len(row)):
        if row[i] > row[best]:
            best = i
    return best


def point_mass(token: int, vocab_size: int, like: Any = Fraction(1)) -> list[Any]:
    """The distribution that puts all mass on ``token``, in ``like``'s number type."""
    zero, one = zero_like(like), one_like(like)
    return [one if i == token else zero for i in range(vocab_size)]


def exp(value: Any) -> Any:
    """``e ** value``: a float for floats, a certified interval for exact inputs."""
    if isinstance(value, float):
        return math.exp(value)

    return CertifiedReal.exp(value)


def log(value: Any) -> Any:
    """Natural logarithm: a float for floats, a certified interval for exact inputs."""
    if isinstance(value, float):
        return math.log(value)

    return CertifiedReal.log(value)


def softmax(row: Row) -> list[Any]:
    """``exp(row) / sum(exp(row))``. Exact inputs give certified intervals."""
    return normalize([exp(v) for v in row])
