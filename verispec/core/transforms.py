"""Sampling transforms (temperature, top-k, top-p, min-p) in exact and float form.

Both forms implement the same definitions, applied in this order, each step renormalising:

1. **temperature** ``T``: ``T == 0`` is greedy, a point mass on the most probable token
   (lowest id wins ties). ``T > 0`` gives ``p**(1/T)`` renormalised, which equals
   ``softmax(logits / T)``. The exact form needs ``1/T`` to be a positive integer
   (``T`` in 1, 1/2, 1/3, ...), because other powers of rationals are irrational.
2. **top-k** ``k``: keep token ``x`` iff fewer than ``k`` tokens are *strictly* more probable.
   Tokens tied with the k-th largest probability are all kept, so more than ``k`` tokens can
   survive (this is what a ``scores < kth_value`` mask does, as in transformers and vLLM).
3. **top-p** ``top_p``: keep ``x`` iff the mass of the tokens *strictly* more probable than
   ``x`` is below ``top_p``. This is the smallest set of most probable tokens whose mass
   reaches ``top_p``, closed under ties: tied tokens are kept or dropped together, so the
   result never depends on the order of a sort.
4. **min-p** ``min_p``: keep ``x`` iff ``p(x) >= min_p * max(p)`` (a token exactly at the
   threshold is kept).

Zero-probability tokens are never kept. The float form evaluates the same comparisons in
float64; at an exact boundary (a top-p cut landing exactly on ``top_p``) float rounding of
the inputs can move the cut, which is why the tests compare the two forms on dyadic
rationals, whose float sums are exact.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from verispec.core.distributions import to_fraction
from verispec.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "ORDERS",
    "SamplingConfig",
    "apply_exact",
    "apply_float",
    "min_p_exact",
    "min_p_float",
    "temperature_exact",
    "temperature_float",
    "top_k_exact",
    "top_k_float",
    "top_p_exact",
    "top_p_float",
]


#: The orders in which engines apply the temperature and the truncations, with who uses each.
ORDERS: dict[str, str] = {
    "temperature-first": "temperature, then top-k, top-p and min-p "
    "(vLLM, transformers, this module's definitions)",
    "truncation-first": "top-k, top-p and min-p on the untempered law, then the temperature "
    "(llama.cpp's sampler chain)",
}


@dataclass(frozen=True)
class SamplingConfig:
    """The sampling settings of a request. ``None`` disables a transform.

    Values are stored exactly (``Fraction``) so that the exact form is available; floats
    given by a user are read by their decimal representation.
    """

    temperature: Fraction = Fraction(1)
    top_k: int | None = None
    top_p: Fraction | None = None
    min_p: Fraction | None = None

    def __post_init__(self) -> None:
        t = to_fraction(self.temperature, name="temperature")
        if t < 0:
            raise UsageError(f"temperature={_fmt(t)} must be >= 0")
        object.__setattr__(self, "temperature", t)
        if self.top_k is not None and (
            isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1
        ):
            raise UsageError(f"top_k={self.top_k!r} must be a positive integer or None")
        if self.top_p is not None:
            p = to_fraction(self.top_p, name="top_p")
            if not 0 < p <= 1:
                raise UsageError(f"top_p={_fmt(p)} must be in (0, 1]")
            object.__setattr__(self, "top_p", p)
        if self.min_p is not None:
            m = to_fraction(self.min_p, name="min_p")
            if not 0 <= m <= 1:
                raise UsageError(f"min_p={_fmt(m)} must be in [0, 1]")
            object.__setattr__(self, "min_p", m)

    @property
    def is_greedy(self) -> bool:
        return self.temperature == 0

    @property
    def is_identity(self) -> bool:
        """True if the config leaves every distribution unchanged."""
        return (
            self.temperature == 1
            and self.top_k is None
            and (self.top_p is None or self.top_p == 1)
            and (self.min_p is None or self.min_p == 0)
        )

    @property
    def has_exact_form(self) -> bool:
        t = self.temperature
        return t == 0 or (t > 0 and (1 / t).denominator == 1)

    def without_temperature(self) -> SamplingConfig:
        return SamplingConfig(Fraction(1), self.top_k, self.top_p, self.min_p)

    def describe(self) -> str:
        parts = [f"T={_fmt(self.temperature)}"]
        if self.top_k is not None:
            parts.append(f"top_k={self.top_k}")
        if self.top_p is not None:
            parts.append(f"top_p={_fmt(self.top_p)}")
        if self.min_p is not None:
            parts.append(f"min_p={_fmt(self.min_p)}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "temperature": _fmt(self.temperature),
            "top_k": self.top_k,
            "top_p": None if self.top_p is None else _fmt(self.top_p),
            "min_p": None if self.min_p is None else _fmt(self.min_p),
        }


def _fmt(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value}"


# --------------------------------------------------------------------------- exact form


def _renorm(kept: list[Fraction]) -> tuple[Fraction, ...]:
    s = sum(kept, Fraction(0))
    return tuple(v / s for v in kept)


def temperature_exact(row: Sequence[Fraction], temperature: Fraction) -> tuple[Fraction, ...]:
    """Temperature in exact arithmetic (see the module docstring for the semantics)."""
    t = to_fraction(temperature, name="temperature")
    if t == 0:
        best = max(range(len(row)), key=lambda i: (row[i], -i))
        return tuple(Fraction(int(i == best)) for i in range(len(row)))
    if t < 0:
        raise UsageError(f"temperature={_fmt(t)} must be >= 0")
    inv = 1 / t
    if inv.denominator != 1:
        raise UsageError(
            f"temperature={_fmt(t)} has no exact form: exact temperature needs 1/T to be a "
            "positive integer (T = 1, 1/2, 1/3, ...); use the float form for other values"
        )
    if inv == 1:
        return tuple(row)
    return _renorm([v ** int(inv) for v in row])


def top_k_exact(row: Sequence[Fraction], k: int) -> tuple[Fraction, ...]:
    """Keep tokens with fewer than ``k`` strictly more probable tokens."""
    values = sorted(row, reverse=True)
    kth = values[min(k, len(values)) - 1]
    return _renorm([v if v >= kth and v > 0 else Fraction(0) for v in row])


def top_p_exact(row: Sequence[Fraction], top_p: Fraction) -> tuple[Fraction, ...]:
    """Keep ``x`` iff the mass strictly above ``p(x)`` is below ``top_p``."""
    above = _mass_strictly_above(row)
    return _renorm([v if v > 0 and above[i] < top_p else Fraction(0) for i, v in enumerate(row)])


def min_p_exact(row: Sequence[Fraction], min_p: Fraction) -> tuple[Fraction, ...]:
    """Keep ``x`` iff ``p(x) >= min_p * max(p)``."""
    threshold = min_p * max(row)
    return _renorm([v if v > 0 and v >= threshold else Fraction(0) for v in row])


def _mass_strictly_above(row: Sequence[Fraction]) -> list[Fraction]:
    order = sorted(range(len(row)), key=lambda i: row[i], reverse=True)
    above = [Fraction(0)] * len(row)
    acc = Fraction(0)
    j = 0
    while j < len(order):
        group_start = j
        value = row[order[j]]
        while j < len(order) and row[order[j]] == value:
            above[order[j]] = acc
            j += 1
        acc += value * (j - group_start)
    return above


def apply_exact(row: Sequence[Fraction], config: SamplingConfig) -> tuple[Fraction, ...]:
    """Apply every transform of ``config`` to an exact distribution."""
    out = tuple(row)
    if config.temperature != 1:
        out = temperature_exact(out, config.temperature)
    if config.top_k is not None:
        out = top_k_exact(out, config.top_k)
    if config.top_p is not None and config.top_p < 1:
        out = top_p_exact(out, config.top_p)
    if config.min_p is not None and config.min_p > 0:
        out = min_p_exact(out, config.min_p)
    return out


# --------------------------------------------------------------------------- float form


def _renorm_float(arr: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return arr / math.fsum(arr.tolist())


def temperature_float(row: Any, temperature: float) -> npt.NDArray[np.float64]:
    """Temperature in float64 (any ``T >= 0``)."""
    import numpy as np  # deferred: heavy

    arr = np.asarray(row, dtype=np.float64)
    t = float(temperature)
    if t == 0:
        out = np.zeros_like(arr)
        out[int(np.argmax(arr))] = 1.0  # numpy's argmax returns the first maximum
        return out
    if t < 0:
        raise UsageError(f"temperature={t!r} must be >= 0")
    if t == 1:
        return arr.copy()
    with np.errstate(divide="ignore"):
        logp = np.log(arr) / t
    logp -= np.max(logp)
    out = np.where(arr > 0, np.exp(logp), 0.0)
    return _renorm_float(out)


def top_k_float(row: Any, k: int) -> npt.NDArray[np.float64]:
    import numpy as np  # deferred: heavy

    arr = np.asarray(row, dtype=np.float64)
    kth = np.sort(arr)[::-1][min(k, arr.size) - 1]
    return _renorm_float(np.where((arr >= kth) & (arr > 0), arr, 0.0))


def top_p_float(row: Any, top_p: float) -> npt.NDArray[np.float64]:
    import numpy as np  # deferred: heavy

    arr = np.asarray(row, dtype=np.float64)
    order = np.argsort(-arr, kind="stable")
    values = arr[order]
    exclusive = np.concatenate(([0.0], np.cumsum(values)[:-1]))
    first_of_group = np.searchsorted(-values, -values, side="left")
    above = np.empty_like(arr)
    above[order] = exclusive[first_of_group]
    return _renorm_float(np.where((arr > 0) & (above < float(top_p)), arr, 0.0))


def min_p_float(row: Any, min_p: float) -> npt.NDArray[np.float64]:
    import numpy as np  # deferred: heavy

    arr = np.asarray(row, dtype=np.float64)
    threshold = float(min_p) * float(np.max(arr))
    return _renorm_float(np.where((arr > 0) & (arr >= threshold), arr, 0.0))


def apply_float(
    row: Any, config: SamplingConfig, *, order: str = "temperature-first"
) -> npt.NDArray[np.float64]:
    """Apply every transform of ``config`` to a float distribution, in ``order`` (one of
    :data:`ORDERS`): the temperature before the truncations (vLLM, transformers), or after
    them (llama.cpp's sampler chain: top-k, top-p and min-p on the untempered law)."""
    import numpy as np  # deferred: heavy

    if order not in ORDERS:
        raise UsageError(f"order={order!r} is not one of {', '.join(ORDERS)}")
    out = np.asarray(row, dtype=np.float64)
    if config.temperature != 1 and order == "temperature-first":
        out = temperature_float(out, float(config.temperature))
    out = _truncate_float(out, config)
    if config.temperature != 1 and order == "truncation-first":
        out = temperature_float(out, float(config.temperature))
    return out


def _truncate_float(row: npt.NDArray[np.float64], config: SamplingConfig) -> npt.NDArray[np.float64]:
    out = row
    if config.top_k is not None:
        out = top_k_float(out, config.top_k)
    if config.top_p is not None and config.top_p < 1:
        out = top_p_float(out, float(config.top_p))
    if config.min_p is not None and config.min_p > 0:
        out = min_p_float(out, float(config.min_p))
    return out
