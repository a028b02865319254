"""The exactness criterion for one round, the multi-round check, and round accounting.

**Round exactness** (DESIGN.md): with ``L = gamma + 1`` the longest block, for every
sequence ``s`` of length ``L``::

    sum over blocks O that are prefixes of s of  P(O) * p(s[|O|:] | context + O)  ==  p(s)

i.e. "one round, then plain target sampling" has exactly the target's law. It is computed
by one walk over the prefix tree: ``F(t x) = F(t) p(x | t) + P(O = t x)``.

**Round accounting**: a round commits the accepted drafts and exactly one more token, so
``E[len(block)] - 1`` must equal ``E[accepted]`` as given by the tail-sum identity
``E[K] = sum_i Pr(K >= i)`` with the algorithm's closed-form acceptance profile. A round
that keeps the law but drops the bonus token fails here and only here.

**Multi-round**: the law of the first ``n`` committed tokens of repeated rounds equals the
target's law of ``n`` tokens, enumerated directly.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.core.certified import sign
from verispec.core.random import Random
from verispec.errors import UsageError
from verispec.exact.executor import DEFAULT_MAX_LEAVES, output_law
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.registry import Verifier
from verispec.verifiers.trees import TreeInstance

Instance = ChainInstance | TreeInstance

__all__ = [
    "Discrepancy",
    "MultiRoundCheck",
    "RoundCheck",
    "check_multi_round",
    "check_round",
    "expected_accepted",
    "round_law",
    "target_law",
]

Block = tuple[int, ...]


def _compare(triples: Iterable[tuple[Block, Any, Any]]) -> tuple[Any, list[Discrepancy], int]:
    """TV distance, discrepancies (largest first) and the count of undecided sequences."""
    tv: Any = Fraction(0)
    found: list[tuple[float, Discrepancy]] = []
    undecided = 0
    for s, out, ref in triples:
        diff = out - ref
        sg = sign(diff)
        if sg == 0:
            continue
        if sg is None:
            undecided += 1
            continue
        size = abs(diff)
        tv = tv + size
        found.append((float(size), Discrepancy(s, out, ref)))
    found.sort(key=lambda item: item[0], reverse=True)
    return tv / 2, [d for _, d in found], undecided


@dataclass(frozen=True)
class Discrepancy:
    """One sequence on which the round's law and the target's disagree."""

    sequence: Block
    output: Any
    target: Any

    def to_json(self) -> dict[str, Any]:
        return {"sequence": list(self.sequence), "output": str(self.output), "target": str(self.target)}


@dataclass(frozen=True)
class RoundCheck:
    """The result of checking one round of one verifier on one instance."""

    verifier: str
    instance: Instance
    law: dict[Block, Any]
    tv_distance: Any
    discrepancies: tuple[Discrepancy, ...]
    undecided: int
    expected_tokens: Any
    predicted_accepted: Any

    @property
    def law_exact(self) -> bool:
        """True iff every sequence's probability provably matches the target's."""
        return not self.discrepancies and not self.undecided

    @property
    def accounting_exact(self) -> bool:
        """Tokens per round match the tail-sum prediction (True if no profile is declared)."""
        if self.predicted_accepted is None:
            return True
        return sign(self.expected_tokens - 1 - self.predicted_accepted) == 0

    @property
    def exact(self) -> bool:
        return self.law_exact and self.accounting_exact

    @property
    def decided(self) -> bool:
        """False only when certified arithmetic could not settle any sequence either way."""
        return bool(self.discrepancies) or not self.undecided


def round_law(
    entry: Verifier, instance: Instance, *, max_leaves: int = DEFAULT_MAX_LEAVES
) -> dict[Block, Any]:
    """The exact law of the block one round of ``entry`` commits on ``instance``."""

    def one_round(rand: Random) -> Hashable:
        return entry.round(instance, rand)  # type: ignore[arg-type]

    return output_law(one_round, max_leaves=max_leaves)  # type: ignore[return-value]


def _walk(instance: Instance, law: dict[Block, Any], length: int) -> Iterator[tuple[Block, Any, Any]]:
    """Yield ``(s, F(s), p(s))`` for every length-``length`` sequence with mass on either side."""
    vocab = instance.vocab_size
    zero = Fraction(0)
    stack: list[tuple[Block, Any, Any]] = [((), zero, Fraction(1))]
    while stack:
        t, f_t, p_t = stack.pop()
        if len(t) == length:
            yield t, f_t, p_t
            continue
        row = instance.target_probs(t)
        for x in range(vocab):
            s = (*t, x)
            f = f_t * row[x] + law.get(s, zero)
            p = p_t * row[x]
            if p != 0 or sign(f) != 0:
                stack.append((s, f, p))


def expected_accepted(entry: Verifier, instance: Instance) -> Any:
    """``E[accepted]`` from ``entry``'s closed-form acceptance profile, averaged over the drafts.

    Chains use the tail-sum identity ``E[K] = sum_i Pr(K >= i)``; trees the sum over nodes of
    the probability that the node is accepted. ``None`` if no profile is declared.
    """
    if entry.acceptance is None:
        return None

    def given_drafts(rand: Random) -> Hashable:
        return entry.accepted_given_drafts(instance, rand)  # type: ignore[arg-type]

    law = output_law(given_drafts)
    return sum((w * key[1] for key, w in law.items()), Fraction(0))  # type: ignore[index]


def check_round(
    entry: Verifier,
    instance: Instance,
    *,
    keep: int = 6,
    max_leaves: int = DEFAULT_MAX_LEAVES,
) -> RoundCheck:
    """Check round exactness and round accounting of ``entry`` on ``instance``."""
    law = round_law(entry, instance, max_leaves=max_leaves)
    length = instance.gamma + 1
    tv, worst, undecided = _compare((s, f, p) for s, f, p in _walk(instance, law, length))
    expected_tokens = sum((len(block) * w for block, w in law.items()), Fraction(0))
    return RoundCheck(
        verifier=entry.name,
        instance=instance,
        law=law,
        tv_distance=tv,
        discrepancies=tuple(worst[:keep]),
        undecided=undecided,
        expected_tokens=expected_tokens,
        predicted_accepted=expected_accepted(entry, instance),
    )


def target_law(instance: Instance, length: int) -> dict[Block, Fraction]:
    """The target's exact law of the next ``length`` tokens after the instance's context."""
    out: dict[Block, Fraction] = {}
    stack: list[tuple[Block, Fraction]] = [((), Fraction(1))]
    while stack:
        t, p_t = stack.pop()
        if len(t) == length:
            out[t] = p_t
            continue
        row = instance.target_probs(t)
        for x, px in enumerate(row):
            if px:
                stack.append(((*t, x), p_t * px))
    return out


@dataclass(frozen=True)
class MultiRoundCheck:
    """The law of the first ``n_tokens`` committed tokens against the target's."""

    verifier: str
    instance: Instance
    n_tokens: int
    tv_distance: Any
    discrepancies: tuple[Discrepancy, ...]
    undecided: int

    @property
    def exact(self) -> bool:
        return not self.discrepancies and not self.undecided


def check_multi_round(
    entry: Verifier,
    instance: Instance,
    n_tokens: int,
    *,
    keep: int = 6,
    max_leaves: int = DEFAULT_MAX_LEAVES,
) -> MultiRoundCheck:
    """Run rounds until ``n_tokens`` are committed; compare the law with the target's.

    The law of the committed tokens is built by the law of total probability over rounds:
    each round's exact law is enumerated once per committed prefix (rounds depend only on
    the context and fresh randomness), and the blocks are chained until ``n_tokens`` are
    committed. This is exact, and far cheaper than enumerating every path of every round.
    """
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, int) or n_tokens < 1:
        raise UsageError(f"n_tokens={n_tokens!r} must be a positive integer")
    law: dict[Block, Any] = {}
    pending: dict[Block, Any] = {(): Fraction(1)}
    while pending:
        committed = min(pending, key=len)
        weight = pending.pop(committed)
        here = instance.with_context(instance.context + committed)
        for block, w in round_law(entry, here, max_leaves=max_leaves).items():
            longer = committed + block
            bucket = law if len(longer) >= n_tokens else pending
            key = longer[:n_tokens]
            bucket[key] = bucket.get(key, Fraction(0)) + weight * w
    reference = target_law(instance, n_tokens)
    zero = Fraction(0)
    tv, worst, undecided = _compare(
        (s, law.get(s, zero), reference.get(s, zero)) for s in sorted(set(law) | set(reference))
    )
    return MultiRoundCheck(
        verifier=entry.name,
        instance=instance,
        n_tokens=n_tokens,
        tv_distance=tv,
        discrepancies=tuple(worst[:keep]),
        undecided=undecided,
    )
