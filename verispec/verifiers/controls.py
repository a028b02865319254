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
from fractions import Fraction
from typing import Any

from verispec.core.ops import normalize, positive_part, softmax, zero_like
from verispec.core.random import Random
from verispec.core.transforms import SamplingConfig
from verispec.verifiers.chain import (
    acceptance_ratio,
    block_acceptance,
    block_weights,
    token_level,
    token_level_acceptance,
)
from verispec.verifiers.registry import chain_verifier

#: The audit article whose numbers proofs/ reproduces.
AUDIT_ARTICLE = "'Why speculative decoding preserves distributions but may not be faster'"

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
    ratio: Any = acceptance_ratio,
) -> list[int]:
    """Token-level speculative sampling with a pluggable correction, bonus row and
    acceptance ratio ``ratio(p, q, x)``."""
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rand.bernoulli(ratio(p, q, x)):
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


@chain_verifier(
    name="resample-target",
    kind="control",
    summary="a fresh target sample after a rejection instead of the residual",
    source=f"{AUDIT_ARTICLE}, section 3: the (0.4, 0.32, 0.28) example (proofs/thm_three_token_example.py)",
    acceptance=token_level_acceptance,
)
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


@chain_verifier(
    name="softmax-residual",
    kind="control",
    summary="softmax(clamp(p-q, 0)) as the residual instead of normalising",
    source="huggingface/transformers PR #28508",
    acceptance=token_level_acceptance,
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


# Controls wrong in the drafter: the token-level rule handed a q that is not the law the
# drafts came from (see verispec.verifiers.instance.DRAFTERS).
chain_verifier(
    name="greedy-draft-softmax-q",
    kind="control",
    drafter="argmax-declaring-softmax",
    summary="argmax drafting with the softmax q in the ratio and residual",
    source="huggingface/transformers #32867 -> PR #33534; jaymody/speculative-sampling #3",
    acceptance=token_level_acceptance,
)(token_level)
chain_verifier(
    name="raw-q-processed-draft",
    kind="control",
    drafter="processed-declaring-raw",
    summary="draft sampled after top-k/top-p while the ratio uses the unprocessed q",
    source="huggingface/transformers #47932 / PR #47961",
    acceptance=token_level_acceptance,
    settings=(
        SamplingConfig(top_k=2),
        SamplingConfig(top_p=Fraction(7, 10)),
        SamplingConfig(min_p=Fraction(1, 3)),
        SamplingConfig(temperature=Fraction(1, 2)),
    ),
)(token_level)


@chain_verifier(
    name="missing-bonus",
    kind="control",
    summary="no bonus token after full acceptance (law kept, round contract broken)",
    source="the round contract: accepted drafts plus one token (Leviathan et al., ICML 2023, Algorithm 1)",
    acceptance=token_level_acceptance,
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


@chain_verifier(
    name="bonus-wrong-row",
    kind="control",
    summary="bonus drawn from the last draft position's target row",
    source="row misindexing class: NVIDIA/TensorRT-LLM PR #15098, SafeAILab/EAGLE PR #47",
    acceptance=token_level_acceptance,
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


@chain_verifier(
    name="reused-uniform",
    kind="control",
    summary="one uniform for the acceptance test and the residual's inverse-CDF draw",
    source="flashinfer-ai/flashinfer PR #424",
    acceptance=token_level_acceptance,
)
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


chain_verifier(
    name="target-only-temperature",
    kind="control",
    drafter="untempered",
    summary="temperature reaches the target and the declared q but not the draft sampler",
    source="z-lab/dflash #74 (vllm-project/vllm #9834 is the mirror image)",
    acceptance=token_level_acceptance,
    settings=(
        SamplingConfig(temperature=Fraction(1, 2)),
        SamplingConfig(temperature=Fraction(1, 3)),
        SamplingConfig(temperature=Fraction(1, 2), top_k=3),
    ),
)(token_level)


@chain_verifier(
    name="block-first-failure",
    kind="control",
    summary="block verification with tau = first failing coin (top-down) instead of last passing",
    source="Sun et al., Block Verification Accelerates Speculative Decoding, ICLR 2025: "
    "tau is the last passing index",
    acceptance=block_acceptance,
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
