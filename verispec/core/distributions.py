"""Exact (``Fraction``) and float distributions over a vocabulary ``0..V-1``.

An exact distribution is a tuple of :class:`fractions.Fraction` that are non-negative and sum
to exactly one. A float distribution is a 1-D ``numpy.float64`` array that is finite,
non-negative and sums to one within :data:`FLOAT_SUM_ATOL`.

Both validators name the argument and repeat the offending value on failure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from verispec.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "FLOAT_SUM_ATOL",
    "ExactDist",
    "as_exact_distribution",
    "as_float_distribution",
    "check_same_vocab",
    "to_fraction",
    "tv_distance",
]

ExactDist = tuple[Fraction, ...]

#: Tolerance on ``|sum(probs) - 1|`` for float distributions. float32 softmax over a
#: 150k-token vocabulary accumulates about 1e-6 of rounding; 1e-5 leaves a margin of ten.
FLOAT_SUM_ATOL = 1e-5


def to_fraction(value: Any, *, name: str) -> Fraction:
    """Convert one probability to a Fraction.

    Accepts ``int``, ``Fraction``, ``Decimal``, rational strings (``"1/3"``) and floats.
    A float is read by its shortest decimal representation (``0.1`` is ``1/10``), which is
    what a person who typed it meant.
    """
    if isinstance(value, bool):
        raise UsageError(f"{name}={value!r} is a bool, not a probability")
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"{name}={value!r} is not a finite number")
        return Fraction(repr(value))
    if isinstance(value, Decimal | str):
        try:
            return Fraction(value)
        except (ValueError, ZeroDivisionError, ArithmeticError) as exc:
            raise UsageError(f"{name}={value!r} is not a rational number") from exc
    # numpy scalars and other numbers
    try:
        as_float = float(value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name}={value!r} is not a number") from exc
    return to_fraction(as_float, name=name)


def _short(values: Sequence[Any], limit: int = 8) -> str:
    shown = ", ".join(str(v) for v in list(values)[:limit])
    return f"({shown}{', ...' if len(values) > limit else ''})"


def as_exact_distribution(values: Iterable[Any], *, name: str = "probs") -> ExactDist:
    """Validate and return an exact distribution.

    >>> as_exact_distribution(["1/2", "1/3", "1/6"])
    (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    """
    items = list(values)
    if not items:
        raise UsageError(f"{name}=() is empty; a distribution needs at least one token")
    out = tuple(to_fraction(v, name=f"{name}[{i}]") for i, v in enumerate(items))
    for i, v in enumerate(out):
        if v < 0:
            raise UsageError(f"{name}[{i}]={v} is negative; probabilities must be >= 0")
    total = sum(out, Fraction(0))
    if total != 1:
        raise UsageError(
            f"{name}={_short(out)} sums to {total}, not exactly 1 (exact distributions "
            "must be normalised exactly)"
        )
    return out


def as_float_distribution(
    values: Any, *, name: str = "probs", atol: float = FLOAT_SUM_ATOL
) -> npt.NDArray[np.float64]:
    """Validate and return a float distribution as a float64 array.

    The sum must be within ``atol`` of one (default :data:`FLOAT_SUM_ATOL`).
    """
    import numpy as np  # deferred: heavy

    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name} is not an array of numbers: {exc}") from exc
    if arr.ndim != 1:
        raise UsageError(f"{name} has shape {arr.shape}; expected a 1-D array of probabilities")
    if arr.size == 0:
        raise UsageError(f"{name} is empty; a distribution needs at least one token")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise UsageError(f"{name}[{i}]={float(arr[i])!r} is not finite")
    neg = np.flatnonzero(arr < 0)
    if neg.size:
        i = int(neg[0])
        raise UsageError(f"{name}[{i}]={float(arr[i])!r} is negative; probabilities must be >= 0")
    total = float(math.fsum(arr.tolist()))
    if abs(total - 1.0) > atol:
        raise UsageError(f"{name} sums to {total!r}, not 1 within atol={atol!r}")
    return arr


def check_same_vocab(**rows: Sequence[Any]) -> int:
    """Check that every named row has the same length; return that vocabulary size."""
    sizes = {name: len(row) for name, row in rows.items()}
    distinct = set(sizes.values())
    if len(distinct) != 1:
        described = ", ".join(f"{n} has {s}" for n, s in sizes.items())
        raise UsageError(f"vocabulary sizes differ: {described} entries")
    return distinct.pop()


def tv_distance(a: Sequence[Any], b: Sequence[Any]) -> Any:
    """Total-variation distance ``sum |a - b| / 2`` (exact for exact inputs)."""
    check_same_vocab(a=a, b=b)
    return sum((abs(x - y) for x, y in zip(a, b, strict=True)), 0) / 2
