"""Conditional models: the next-token law after any prefix, in exact arithmetic.

A conditional model maps a prefix (a tuple of token ids) to an exact distribution over
``0..vocab_size-1``. Every model here is deterministic: the same prefix always gives the
same row, so exact enumeration and sampling see one and the same model.

* :class:`RandomRationalModel`: seeded random rational conditionals that depend on the
  prefix and contain zeros, for exhaustive checks.
* :class:`FixedModel`: the same law after every prefix (context-free).
* :class:`TableModel`: explicit rows for some prefixes and a default for the rest; this is
  what counterexamples are printed as.
* :class:`ProcessedModel`: another model seen through a :class:`SamplingConfig`.
"""

from __future__ import annotations

import random as _random
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

from verispec.core.distributions import ExactDist, as_exact_distribution
from verispec.core.transforms import SamplingConfig, apply_exact
from verispec.errors import UsageError

__all__ = [
    "ConditionalModel",
    "FixedModel",
    "ProcessedModel",
    "RandomRationalModel",
    "TableModel",
]

Prefix = tuple[int, ...]


@runtime_checkable
class ConditionalModel(Protocol):
    """What verispec needs from a model: a vocabulary size and exact conditionals."""

    @property
    def vocab_size(self) -> int: ...

    def probs(self, prefix: Prefix) -> ExactDist:
        """The exact next-token law after ``prefix``."""
        ...


def _check_vocab_size(vocab_size: int) -> int:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise UsageError(f"vocab_size={vocab_size!r} must be a positive integer")
    return vocab_size


class FixedModel:
    """The same distribution after every prefix.

    >>> FixedModel(["1/2", "1/2"]).probs((0, 1, 1))
    (Fraction(1, 2), Fraction(1, 2))
    """

    def __init__(self, probs: Iterable[Any], *, name: str = "probs") -> None:
        self._row = as_exact_distribution(probs, name=name)

    @property
    def vocab_size(self) -> int:
        return len(self._row)

    def probs(self, prefix: Prefix) -> ExactDist:
        return self._row

    def describe(self) -> str:
        return f"fixed {_fmt_row(self._row)}"

    def __repr__(self) -> str:
        return f"FixedModel({_fmt_row(self._row)})"


class TableModel:
    """Explicit rows for chosen prefixes; ``default`` for every other prefix."""

    def __init__(
        self,
        rows: Mapping[Prefix, Iterable[Any]],
        default: Iterable[Any] | None = None,
        *,
        name: str = "model",
    ) -> None:
        self._rows: dict[Prefix, ExactDist] = {}
        for prefix, row in rows.items():
            key = tuple(int(t) for t in prefix)
            self._rows[key] = as_exact_distribution(row, name=f"{name}[{key}]")
        self._default = None if default is None else as_exact_distribution(default, name=f"{name}.default")
        sizes = {len(r) for r in self._rows.values()} | (
            set() if self._default is None else {len(self._default)}
        )
        if not sizes:
            raise UsageError(f"{name} has no rows and no default")
        if len(sizes) != 1:
            raise UsageError(f"{name} rows have different vocabulary sizes: {sorted(sizes)}")
        self._vocab_size = sizes.pop()
        for key in self._rows:
            for t in key:
                if not 0 <= t < self._vocab_size:
                    raise UsageError(
                        f"{name} prefix {key} holds token {t}, outside the vocabulary "
                        f"0..{self._vocab_size - 1}"
                    )

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def rows(self) -> dict[Prefix, ExactDist]:
        return dict(self._rows)

    @property
    def default(self) -> ExactDist | None:
        return self._default

    def probs(self, prefix: Prefix) -> ExactDist:
        row = self._rows.get(prefix)
        if row is not None:
            return row
        if self._default is None:
            raise UsageError(f"the table model has no row for prefix {prefix} and no default")
        return self._default

    def describe(self) -> str:
        if not self._rows and self._default is not None:
            return f"fixed {_fmt_row(self._default)}"
        return f"table of {len(self._rows)} rows"

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": {",".join(map(str, k)): [str(v) for v in r] for k, r in sorted(self._rows.items())},
            "default": None if self._default is None else [str(v) for v in self._default],
        }


class RandomRationalModel:
    """Seeded random rational conditionals that depend on the prefix and contain zeros.

    Row ``prefix`` is drawn from integer weights in ``0..granularity`` with a stable
    per-prefix seed, so it never changes between runs or processes. Each weight is zero
    with probability ``zero_prob``; at least one is positive.

    >>> m = RandomRationalModel(3, seed=7)
    >>> m.probs((1,)) == m.probs((1,))
    True
    >>> sum(m.probs(())) == 1
    True
    """

    def __init__(
        self,
        vocab_size: int,
        *,
        seed: int,
        zero_prob: float = 0.3,
        granularity: int = 6,
        context_free: bool = False,
    ) -> None:
        self._vocab_size = _check_vocab_size(vocab_size)
        if not 0 <= zero_prob < 1:
            raise UsageError(f"zero_prob={zero_prob!r} must be in [0, 1)")
        if isinstance(granularity, bool) or not isinstance(granularity, int) or granularity < 1:
            raise UsageError(f"granularity={granularity!r} must be a positive integer")
        self.seed = int(seed)
        self.zero_prob = zero_prob
        self.granularity = granularity
        self.context_free = context_free
        self._cache: dict[Prefix, ExactDist] = {}

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def probs(self, prefix: Prefix) -> ExactDist:
        key = () if self.context_free else prefix
        row = self._cache.get(key)
        if row is None:
            rng = _random.Random(f"verispec:{self.seed}:{key}")
            weights = [
                0 if rng.random() < self.zero_prob else rng.randint(1, self.granularity)
                for _ in range(self._vocab_size)
            ]
            if not any(weights):
                weights[rng.randrange(self._vocab_size)] = rng.randint(1, self.granularity)
            s = sum(weights)
            row = tuple(Fraction(w, s) for w in weights)
            self._cache[key] = row
        return row

    def describe(self) -> str:
        kind = "context-free" if self.context_free else "prefix-dependent"
        return (
            f"random rational ({kind}, V={self._vocab_size}, seed={self.seed}, "
            f"zero_prob={self.zero_prob}, granularity={self.granularity})"
        )

    def __repr__(self) -> str:
        return (
            f"RandomRationalModel({self._vocab_size}, seed={self.seed}, zero_prob={self.zero_prob}, "
            f"granularity={self.granularity}, context_free={self.context_free})"
        )


class ProcessedModel:
    """A model seen through sampling transforms; rows are computed once and cached."""

    def __init__(self, model: ConditionalModel, config: SamplingConfig) -> None:
        if not config.has_exact_form:
            raise UsageError(
                f"temperature={config.temperature} has no exact form: exact temperature needs "
                "1/T to be a positive integer (T = 1, 1/2, 1/3, ...)"
            )
        self.model = model
        self.config = config
        self._identity = config.is_identity
        self._cache: dict[Prefix, ExactDist] = {}

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    def probs(self, prefix: Prefix) -> ExactDist:
        row = self._cache.get(prefix)
        if row is None:
            raw = self.model.probs(prefix)
            row = tuple(raw) if self._identity else apply_exact(raw, self.config)
            self._cache[prefix] = row
        return row


def _fmt_row(row: Sequence[Fraction]) -> str:
    return "(" + ", ".join(str(v) for v in row) + ")"
