"""Exact execution: enumerate every branch of a randomized function with exact weights.

:func:`output_law` runs ``fn(rand)`` once per leaf of its random-choice tree. ``rand`` is a
replaying implementation of :class:`verispec.core.random.Random`: on the first visit of a
choice it takes the first branch of positive weight and queues the others; later runs
replay a recorded prefix of choices. The weight of a leaf is the product of the exact
probabilities of the choices along it, and the law maps each distinct result to the sum of
the weights of the leaves that return it.

The function must be deterministic given its choices (same choices, same calls with the
same weights). A violation is detected and reported rather than silently mis-weighted.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from fractions import Fraction
from typing import Any

from verispec.core.ops import total
from verispec.errors import NonConformance, UsageError

__all__ = ["EnumerationBudgetExceeded", "RandomCallError", "output_law"]

#: Default limit on the number of leaves :func:`output_law` may visit.
DEFAULT_MAX_LEAVES = 2_000_000


class EnumerationBudgetExceeded(UsageError):
    """The random-choice tree has more leaves than the budget allows."""


class RandomCallError(NonConformance):
    """The function under execution called ``bernoulli`` or ``categorical`` wrongly."""


class _Replay:
    """A ``Random`` that replays ``path`` and then explores, queueing siblings in ``todo``."""

    __slots__ = ("path", "pos", "todo", "weight")

    def __init__(self, path: list[Any], todo: list[list[Any]]) -> None:
        self.path = path
        self.pos = 0
        self.weight: Any = Fraction(1)
        self.todo = todo

    def bernoulli(self, prob: Any) -> bool:
        pos = self.pos
        self.pos = pos + 1
        if pos < len(self.path):
            choice = self.path[pos]
        else:
            if not (prob >= 0 and prob <= 1):
                raise RandomCallError(f"bernoulli(prob={prob}) called with prob outside [0, 1]")
            if prob == 0:
                choice = False
            elif prob == 1:
                choice = True
            else:
                choice = True
                self.todo.append([*self.path[:pos], False])
            self.path.append(choice)
        w = prob if choice else 1 - prob
        if not w > 0:
            raise RandomCallError(
                "the function is not deterministic given its random choices: a replayed "
                f"bernoulli branch now has probability {w}"
            )
        self.weight = self.weight * w
        return bool(choice)

    def categorical(self, weights: Sequence[Any]) -> int:
        pos = self.pos
        self.pos = pos + 1
        if not len(weights):
            raise RandomCallError("categorical() called with no weights")
        s = total(weights)
        if pos < len(self.path):
            k = self.path[pos]
            if k >= len(weights) or not weights[k] > 0:
                raise RandomCallError(
                    "the function is not deterministic given its random choices: a replayed "
                    f"categorical outcome {k} now has weight "
                    f"{weights[k] if k < len(weights) else 'out of range'}"
                )
        else:
            positive = []
            for i, w in enumerate(weights):
                if w > 0:
                    positive.append(i)
                elif w != 0:
                    raise RandomCallError(
                        f"categorical(weights) has weight {w} at index {i}; weights must be >= 0"
                    )
            if not positive:
                raise RandomCallError("categorical(weights) called with weights that sum to zero")
            k = positive[0]
            prefix = self.path[:pos]
            for other in positive[1:]:
                self.todo.append([*prefix, other])
            self.path.append(k)
        self.weight = self.weight * (weights[k] / s)
        return int(k)


def output_law(fn: Callable[[Any], Hashable], *, max_leaves: int = DEFAULT_MAX_LEAVES) -> dict[Hashable, Any]:
    """The exact law of ``fn(rand)`` over its random choices.

    >>> from fractions import Fraction
    >>> def two_coins(rand):
    ...     return rand.bernoulli(Fraction(1, 3)) + rand.bernoulli(Fraction(1, 2))
    >>> sorted(output_law(two_coins).items())
    [(0, Fraction(1, 3)), (1, Fraction(1, 2)), (2, Fraction(1, 6))]
    """
    law: dict[Hashable, Any] = {}
    todo: list[list[Any]] = [[]]
    leaves = 0
    while todo:
        leaves += 1
        if leaves > max_leaves:
            raise EnumerationBudgetExceeded(
                f"max_leaves={max_leaves} exceeded while enumerating the random choices"
            )
        rand = _Replay(todo.pop(), todo)
        result = fn(rand)
        if result in law:
            law[result] = law[result] + rand.weight
        else:
            law[result] = rand.weight
    return law
