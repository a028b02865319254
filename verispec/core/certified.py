"""Certified reals: interval arithmetic for the few controls that need ``exp``.

Exact execution works in ``Fraction``. A control such as the softmax residual computes
``exp`` of rationals, which is irrational; there the exact executor carries a
:class:`CertifiedReal`, a closed interval (256-bit mpmath interval arithmetic, in a private
context) that is guaranteed to contain the true value. A comparison is answered only when
the interval decides it; otherwise :class:`UndecidedComparison` is raised. A refutation
found this way is certified: the interval of ``output - target`` excludes zero.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

__all__ = ["PRECISION_BITS", "CertifiedReal", "UndecidedComparison", "sign"]

#: Working precision of the interval arithmetic, in bits (about 77 decimal digits).
PRECISION_BITS = 256

_ctx: Any = None


def _context() -> Any:
    global _ctx
    if _ctx is None:
        from mpmath.ctx_iv import MPIntervalContext  # deferred: heavy

        _ctx = MPIntervalContext()
        _ctx.prec = PRECISION_BITS
    return _ctx


class UndecidedComparison(ArithmeticError):
    """An interval comparison that the interval cannot decide."""


def _to_iv(value: Any) -> Any:
    ctx = _context()
    if isinstance(value, CertifiedReal):
        return value.iv
    if isinstance(value, Fraction):
        return ctx.mpf(value.numerator) / ctx.mpf(value.denominator)
    if isinstance(value, int):
        return ctx.mpf(value)
    raise TypeError(f"cannot mix {type(value).__name__} with a CertifiedReal")


class CertifiedReal:
    """A real number known to lie in an interval; arithmetic keeps the guarantee."""

    __slots__ = ("iv",)

    def __init__(self, value: Any) -> None:
        self.iv = _to_iv(value) if not _is_iv(value) else value

    @classmethod
    def exp(cls, value: Any) -> CertifiedReal:
        return cls(_context().exp(_to_iv(value)))

    @classmethod
    def log(cls, value: Any) -> CertifiedReal:
        """Natural logarithm of a positive number."""
        return cls(_context().log(_to_iv(value)))

    # arithmetic
    def __add__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(self.iv + _to_iv(other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(self.iv - _to_iv(other))

    def __rsub__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(_to_iv(other) - self.iv)

    def __mul__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(self.iv * _to_iv(other))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(self.iv / _to_iv(other))

    def __rtruediv__(self, other: Any) -> CertifiedReal:
        return CertifiedReal(_to_iv(other) / self.iv)

    def __neg__(self) -> CertifiedReal:
        return CertifiedReal(-self.iv)

    def __abs__(self) -> CertifiedReal:
        return CertifiedReal(abs(self.iv))

    # comparisons: answered only when the interval decides them
    def _sign_of_difference(self, other: Any) -> int:
        d = self.iv - _to_iv(other)
        if d.a > 0:
            return 1
        if d.b < 0:
            return -1
        if d.a == 0 and d.b == 0:
            return 0
        raise UndecidedComparison(f"cannot decide the sign of an interval around zero: {d}")

    def __gt__(self, other: Any) -> bool:
        return self._sign_of_difference(other) > 0

    def __ge__(self, other: Any) -> bool:
        return self._sign_of_difference(other) >= 0

    def __lt__(self, other: Any) -> bool:
        return self._sign_of_difference(other) < 0

    def __le__(self, other: Any) -> bool:
        return self._sign_of_difference(other) <= 0

    def __eq__(self, other: object) -> bool:
        try:
            return self._sign_of_difference(other) == 0
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash((str(self.iv.a), str(self.iv.b)))

    def __float__(self) -> float:
        return float(self.iv.mid)

    @property
    def width(self) -> float:
        return float(self.iv.delta)

    def __str__(self) -> str:
        return f"{float(self):.17g} (certified to ±{self.width:.1e})"

    def __repr__(self) -> str:
        return f"CertifiedReal({self})"


def _is_iv(value: Any) -> bool:
    return type(value).__name__ == "ivmpf"


def sign(value: Any) -> int | None:
    """-1, 0 or 1 for exact numbers and decided intervals; ``None`` if undecided."""
    if isinstance(value, CertifiedReal):
        try:
            return value._sign_of_difference(0)
        except UndecidedComparison:
            return None
    return int(value > 0) - int(value < 0)
