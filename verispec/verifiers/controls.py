"""Known-wrong chain verifiers (negative controls).

Each function reproduces one mistake, most of them shipped by a public engine; the
registry records the source. verispec must refute every one of them with an exact
counterexample, which is how the checks are shown to bite.

Controls that are wrong in the *drafter* (what ``q`` is declared) reuse
:func:`verispec.verifiers.chain.token_level` with a wrong drafter, see
:mod:`verispec.verifiers.instance`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verispec.core.ops import normalize, positive_part, softmax, zero_like
from verispec.core.random import Random
from verispec.verifiers.chain import acceptance_ratio, block_weights

__all__ = [
    "block_first_failure",
    "bonus_wrong_row",
    "missing_bonus",
    "resample_target",
    "reused_uniform",
    "softmax_residual",
]

Rows = Sequence[Sequence[Any]]


def _token_level_with(
    target_probs: Rows,
    draft_probs: Rows,
    draft_tokens: Sequence[int],
    rand: Random,
    *,
    correction: Any,
    bonus_row: int | None,
) -> list[int]:
    """Token-level speculative sampling with a pluggable correction and bonus row."""
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rand.bernoulli(acceptance_ratio(p, q, x)):
            block.append(x)
        else:
            block.append(correction(p, q, x, rand))
            return block
    if bonus_row is not None:
        block.append(rand.categorical(target_probs[bonus_row]))
    return block


def _residual(p: Sequence[Any], q: Sequence[Any], x: int, rand: Random) -> int:
    """The correct correction: a sample of the residual ``[p - q]_+``."""
    return rand.categorical(positive_part(p, q))


def resample_target(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: after a rejection, emit a fresh target sample instead of a residual sample.

    The seed article's example: p=(0.5, 0.3, 0.2), q=(0.2, 0.2, 0.6) gives (0.4, 0.32, 0.28).
    """
    return _token_level_with(
        target_probs,
        draft_probs,
        draft_tokens,
        rand,
        correction=lambda p, q, x, r: r.categorical(p),
        bonus_row=len(draft_tokens),
    )


def softmax_residual(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: the residual is ``softmax(clamp(p - q, 0))`` instead of its normalisation.

    transformers PR #28508. Every token gets positive mass, impossible ones included.
    """
    return _token_level_with(
        target_probs,
        draft_probs,
        draft_tokens,
        rand,
        correction=lambda p, q, x, r: r.categorical(softmax(positive_part(p, q))),
        bonus_row=len(draft_tokens),
    )


def missing_bonus(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: no bonus token after full acceptance.

    The law of "round, then plain target sampling" is still the target's; what breaks is the
    round contract (accepted drafts plus exactly one correction or bonus token), so the round
    commits fewer tokens than the tail-sum identity predicts.
    """
    if not draft_tokens:
        return [rand.categorical(target_probs[0])]
    return _token_level_with(
        target_probs,
        draft_probs,
        draft_tokens,
        rand,
        correction=_residual,
        bonus_row=None,
    )


def bonus_wrong_row(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: the bonus token is drawn from the last *draft* position's target row.

    That row is ``p(. | x_<gamma)``, one position too early; the right one is ``p(. | x_<=gamma)``.
    """
    return _token_level_with(
        target_probs,
        draft_probs,
        draft_tokens,
        rand,
        correction=_residual,
        bonus_row=max(len(draft_tokens) - 1, 0),
    )


def _reused_uniform_correction(p: Sequence[Any], q: Sequence[Any], x: int, rand: Random) -> int:
    """The residual drawn by inverse CDF with the uniform ``U`` of the acceptance test.

    Acceptance is ``U < a``. Given a rejection, ``U`` is uniform on ``[a, 1)``, so the
    inverse-CDF draw lands on token ``j`` with probability
    ``|[c_{j-1}, c_j) ∩ [a, 1)| / (1 - a)``, where ``c`` is the residual's CDF. The weights
    below are exactly those lengths; this is the exact law of the buggy kernel.
    """
    a = acceptance_ratio(p, q, x)
    residual = normalize(positive_part(p, q))
    weights = []
    lo = zero_like(a)
    for r in residual:
        hi = lo + r
        overlap = min(hi, 1) - max(lo, a)
        weights.append(overlap if overlap > 0 else zero_like(a))
        lo = hi
    return rand.categorical(weights)


def reused_uniform(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: one uniform serves the acceptance test and the residual draw (FlashInfer PR #424)."""
    return _token_level_with(
        target_probs,
        draft_probs,
        draft_tokens,
        rand,
        correction=_reused_uniform_correction,
        bonus_row=len(draft_tokens),
    )


def block_first_failure(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Wrong: block verification with ``tau`` = the first *failure* scanning up from 1.

    The paper's ``tau`` is the *last* index whose coin passes; accepting "while the coins
    pass" biases the law (TV up to 0.45 in the reference catalog).
    """
    gamma = len(draft_tokens)
    weights, h = block_weights(target_probs, draft_probs, draft_tokens)
    tau = 0
    while tau < gamma and rand.bernoulli(h[tau]):
        tau += 1
    if tau == gamma:
        last = rand.categorical(target_probs[gamma])
    else:
        scaled = [weights[tau] * v for v in target_probs[tau]]
        last = rand.categorical(positive_part(scaled, draft_probs[tau]))
    return [*draft_tokens[:tau], last]
