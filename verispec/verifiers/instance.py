"""Chain instances, drafters, and one speculative round.

A :class:`ChainInstance` fixes everything a round depends on: the target and draft models,
the sampling settings, the number of drafts ``gamma`` and the context (prompt). A round
draws the drafts with a *drafter*, computes the target rows along them, and hands both to
a verifier. Drafters take their randomness from the same ``Random`` as the verifier, so the
exact executor enumerates the drafts too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.core.distributions import ExactDist
from verispec.core.models import ConditionalModel, ProcessedModel
from verispec.core.ops import argmax, point_mass
from verispec.core.random import Random
from verispec.core.transforms import SamplingConfig
from verispec.errors import NonConformance, UsageError

__all__ = [
    "DRAFTERS",
    "ChainInstance",
    "DraftView",
    "Drafter",
    "Verify",
    "run_round",
]

Prefix = tuple[int, ...]
Verify = Callable[[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[int], Random], Sequence[int]]


@dataclass(frozen=True, eq=False)
class ChainInstance:
    """Everything one chain round depends on.

    ``config`` is the request's sampling settings, applied to the target; ``draft_config``
    (default: the same) is applied to the draft model to give the law drafts are drawn from.
    """

    target: ConditionalModel
    draft: ConditionalModel
    gamma: int
    config: SamplingConfig = field(default_factory=SamplingConfig)
    context: Prefix = ()
    draft_config: SamplingConfig | None = None

    def __post_init__(self) -> None:
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, int) or self.gamma < 0:
            raise UsageError(f"gamma={self.gamma!r} must be a non-negative integer")
        vt, vd = self.target.vocab_size, self.draft.vocab_size
        if vt != vd:
            raise UsageError(
                f"vocabulary mismatch: the target has vocab_size={vt} but the draft has vocab_size={vd}"
            )
        context = tuple(self.context)
        for i, t in enumerate(context):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vt:
                raise UsageError(f"context[{i}]={t!r} is not a token id in 0..{vt - 1}")
        object.__setattr__(self, "context", context)
        draft_config = self.config if self.draft_config is None else self.draft_config
        object.__setattr__(self, "_p", ProcessedModel(self.target, self.config))
        object.__setattr__(self, "_q", ProcessedModel(self.draft, draft_config))
        object.__setattr__(
            self, "_q_untempered", ProcessedModel(self.draft, draft_config.without_temperature())
        )

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    @property
    def effective_draft_config(self) -> SamplingConfig:
        return self.config if self.draft_config is None else self.draft_config

    def target_probs(self, prefix: Prefix) -> ExactDist:
        """The processed target law after ``context + prefix``."""
        return self._p.probs(self.context + prefix)  # type: ignore[attr-defined,no-any-return]

    def draft_probs(self, prefix: Prefix) -> ExactDist:
        """The processed draft law after ``context + prefix`` (the law drafts come from)."""
        return self._q.probs(self.context + prefix)  # type: ignore[attr-defined,no-any-return]

    def raw_draft_probs(self, prefix: Prefix) -> ExactDist:
        """The draft law before any sampling transform."""
        return self.draft.probs(self.context + prefix)

    def untempered_draft_probs(self, prefix: Prefix) -> ExactDist:
        """The draft law with every transform but temperature."""
        return self._q_untempered.probs(self.context + prefix)  # type: ignore[attr-defined,no-any-return]

    def with_context(self, context: Prefix) -> ChainInstance:
        """The same instance after another context; the row caches are shared."""
        other = ChainInstance(self.target, self.draft, self.gamma, self.config, context, self.draft_config)
        for cache in ("_p", "_q", "_q_untempered"):
            object.__setattr__(other, cache, getattr(self, cache))
        return other

    def describe(self) -> str:
        desc = getattr(self.target, "describe", lambda: repr(self.target))
        ddesc = getattr(self.draft, "describe", lambda: repr(self.draft))
        extra = "" if self.draft_config is None else f", draft {self.draft_config.describe()}"
        return (
            f"V={self.vocab_size} gamma={self.gamma} {self.config.describe()}{extra} "
            f"context={list(self.context)}; target: {desc()}; draft: {ddesc()}"
        )


DraftView = ChainInstance
Drafter = Callable[[ChainInstance, Random], tuple[list[int], list[Sequence[Any]]]]


def _drafts(
    instance: ChainInstance,
    rand: Random,
    draw_from: Callable[[Prefix], Sequence[Any]] | None,
    declared: Callable[[Prefix, int], Sequence[Any]],
) -> tuple[list[int], list[Sequence[Any]]]:
    """Draw ``gamma`` drafts one by one; ``draw_from=None`` means greedy (argmax of ``q``)."""
    tokens: list[int] = []
    rows: list[Sequence[Any]] = []
    for _ in range(instance.gamma):
        prefix = tuple(tokens)
        x = argmax(instance.draft_probs(prefix)) if draw_from is None else rand.categorical(draw_from(prefix))
        tokens.append(x)
        rows.append(declared(prefix, x))
    return tokens, rows


def sample_drafts(instance: ChainInstance, rand: Random) -> tuple[list[int], list[Sequence[Any]]]:
    """Draw each draft from the processed draft law and declare that law (the contract)."""
    return _drafts(instance, rand, instance.draft_probs, lambda prefix, x: instance.draft_probs(prefix))


def argmax_drafts(instance: ChainInstance, rand: Random) -> tuple[list[int], list[Sequence[Any]]]:
    """Greedy drafting: the argmax of the processed draft law, declared as a point mass."""

    def declared(prefix: Prefix, x: int) -> Sequence[Any]:
        q = instance.draft_probs(prefix)
        return point_mass(x, len(q), q[0])

    return _drafts(instance, rand, None, declared)


def argmax_drafts_declaring_softmax(
    instance: ChainInstance, rand: Random
) -> tuple[list[int], list[Sequence[Any]]]:
    """Wrong: greedy drafting that declares the softmax ``q`` (transformers #32867)."""
    return _drafts(instance, rand, None, lambda prefix, x: instance.draft_probs(prefix))


def processed_drafts_declaring_raw(
    instance: ChainInstance, rand: Random
) -> tuple[list[int], list[Sequence[Any]]]:
    """Wrong: drafts sampled after top-k/top-p, but the raw ``q`` declared (transformers #47932)."""
    return _drafts(instance, rand, instance.draft_probs, lambda prefix, x: instance.raw_draft_probs(prefix))


def untempered_drafts(instance: ChainInstance, rand: Random) -> tuple[list[int], list[Sequence[Any]]]:
    """Wrong: drafts sampled at temperature 1 while the tempered ``q`` is declared (dflash #74)."""
    return _drafts(
        instance, rand, instance.untempered_draft_probs, lambda prefix, x: instance.draft_probs(prefix)
    )


DRAFTERS: dict[str, Drafter] = {
    "sample": sample_drafts,
    "argmax": argmax_drafts,
    "argmax-declaring-softmax": argmax_drafts_declaring_softmax,
    "processed-declaring-raw": processed_drafts_declaring_raw,
    "untempered": untempered_drafts,
}


def run_round(verify: Verify, drafter: Drafter, instance: ChainInstance, rand: Random) -> tuple[int, ...]:
    """One round: draft, compute the target rows along the drafts, verify.

    The block is checked against the round contract's shape (1 to ``gamma + 1`` token ids
    inside the vocabulary); a violation is a :class:`~verispec.errors.NonConformance`.
    """
    tokens, draft_rows = drafter(instance, rand)
    target_rows = [instance.target_probs(tuple(tokens[:i])) for i in range(len(tokens) + 1)]
    block = verify(target_rows, draft_rows, tokens, rand)
    out = tuple(block)
    gamma, vocab = instance.gamma, instance.vocab_size
    if not 1 <= len(out) <= gamma + 1:
        raise NonConformance(
            f"the verifier returned a block of {len(out)} tokens; a round commits 1 to gamma+1={gamma + 1}"
        )
    for t in out:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
            raise NonConformance(f"the verifier returned token {t!r}, outside the vocabulary 0..{vocab - 1}")
    return out
