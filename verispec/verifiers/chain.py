"""Chain verifiers that preserve the target law, each a short function mirroring its paper.

Every verifier has the black-box signature of DESIGN.md, with a :class:`~verispec.core.random.Random`
in place of the numpy generator::

    verify(target_probs, draft_probs, draft_tokens, rand) -> list[int]

``target_probs[i]`` is the target law after the prefix and the first ``i`` drafts
(``gamma + 1`` rows), ``draft_probs[i]`` the law draft ``i`` was drawn from (``gamma`` rows),
and the result is the committed block: the accepted drafts followed by exactly one
correction or bonus token. Rows may hold ``Fraction`` (exact execution) or ``float``
(sampling execution); the code is the same.

Inside each function the papers' notation (``p``, ``q``, ``x``) is used on purpose.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from verispec.core.ops import argmax, one_like, positive_part, zero_like
from verispec.core.random import Random
from verispec.errors import NonConformance
from verispec.verifiers.registry import GREEDY_SETTINGS, Acceptance, chain_verifier

__all__ = [
    "acceptance_ratio",
    "block_acceptance",
    "block_verification",
    "greedy",
    "greedy_acceptance",
    "likelihood_ratio",
    "match_acceptance",
    "point_mass",
    "sample_and_match",
    "token_level",
    "token_level_acceptance",
]

Rows = Sequence[Sequence[Any]]


def likelihood_ratio(p: Sequence[Any], q: Sequence[Any], x: int) -> Any:
    """``p(x) / q(x)``; a draft token the declared ``q`` cannot produce is an error."""
    if not q[x] > 0:
        raise NonConformance(
            f"draft token {x} has probability {q[x]} under the declared draft law: the drafts "
            "were not drawn from the q handed to the verifier"
        )
    return p[x] / q[x]


def _cap(value: Any) -> Any:
    one = one_like(value)
    return one if value >= one else value


def acceptance_ratio(p: Sequence[Any], q: Sequence[Any], x: int) -> Any:
    """``min(1, p(x) / q(x))``, the acceptance probability of token-level verification."""
    return _cap(likelihood_ratio(p, q, x))


# ------------------------------------------------------------ acceptance profiles


def _product_acceptance(per_position: Callable[[Sequence[Any], Sequence[Any], int], Any]) -> Acceptance:
    def acceptance(target_rows: Any, draft_rows: Any, drafts: Sequence[int], i: int) -> Any:
        prob: Any = Fraction(1)
        for j in range(i):
            prob = prob * per_position(target_rows[j], draft_rows[j], drafts[j])
            if prob == 0:
                break
        return prob

    return acceptance


token_level_acceptance = _product_acceptance(acceptance_ratio)
#: Point-mass verification and sample-and-match both accept draft ``x`` with probability ``p(x)``.
match_acceptance = _product_acceptance(lambda p, q, x: p[x])
greedy_acceptance = _product_acceptance(lambda p, q, x: Fraction(int(x == argmax(p))))


def block_acceptance(target_rows: Any, draft_rows: Any, drafts: Sequence[int], i: int) -> Any:
    """Block verification: ``Pr(tau >= i | drafts) = p_i(X^i)`` (Sun et al., Theorem 2)."""
    if i == 0:
        return Fraction(1)
    weights, _ = block_weights(target_rows, draft_rows, drafts)
    return weights[i]


# -------------------------------------------------------------------- the verifiers


@chain_verifier(
    name="token-level",
    kind="exact",
    summary="accept with min(1, p/q), correct from the normalised residual [p-q]+, bonus from p",
    source="Leviathan et al., ICML 2023, Algorithm 1; Chen et al., arXiv 2302.01318",
    acceptance=token_level_acceptance,
)
def token_level(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Speculative sampling (Leviathan et al. 2023, Algorithm 1; Chen et al. 2023).

    Accept draft ``x_i`` with probability ``min(1, p_i(x)/q_i(x))``; at the first rejection
    emit a sample of the residual ``[p_i - q_i]_+`` (normalised) and stop; after ``gamma``
    acceptances emit a bonus token from ``p_gamma``. Exact for any drafter whose ``q`` is the
    law the drafts were really drawn from.
    """
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        p, q = target_probs[i], draft_probs[i]
        if rand.bernoulli(acceptance_ratio(p, q, x)):
            block.append(x)
        else:
            block.append(rand.categorical(positive_part(p, q)))
            return block
    block.append(rand.categorical(target_probs[len(draft_tokens)]))
    return block


@chain_verifier(
    name="greedy",
    kind="exact",
    summary="accept while the draft equals the target argmax (lowest id wins ties)",
    source="greedy contract; Leviathan et al. 2023, Section 2.3",
    acceptance=greedy_acceptance,
    settings=GREEDY_SETTINGS,
)
def greedy(target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random) -> list[int]:
    """Greedy verification: accept while the draft equals the target argmax.

    The target law is a point mass at the argmax (lowest id wins ties); the correction and
    the bonus are that argmax. No randomness is used.
    """
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        best = argmax(target_probs[i])
        block.append(best)
        if x != best:
            return block
    block.append(argmax(target_probs[len(draft_tokens)]))
    return block


@chain_verifier(
    name="point-mass",
    kind="exact",
    drafter="argmax",
    summary="deterministic drafts: accept with p(x), correct from p without x",
    source="vllm-project/vllm v1 rejection sampler, IS_NGRAM path (proofs/thm_point_mass_lemma.py)",
    acceptance=match_acceptance,
)
def point_mass(target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random) -> list[int]:
    """Verification of deterministic drafts (greedy drafter, n-gram or prompt lookup).

    The draft law is a point mass at ``x``, so the ratio is ``p(x)`` and the residual
    ``[p - δ_x]_+`` is ``p`` with ``x`` removed (vLLM's ``IS_NGRAM`` path). Exact for any
    drafter independent of the verifier's coins.
    """
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        p = target_probs[i]
        if rand.bernoulli(p[x]):
            block.append(x)
        else:
            without_x = list(p)
            without_x[x] = zero_like(p[x])
            block.append(rand.categorical(without_x))
            return block
    block.append(rand.categorical(target_probs[len(draft_tokens)]))
    return block


@chain_verifier(
    name="sample-and-match",
    kind="exact",
    summary="draw y ~ p, accept while y equals the draft, emit y at the first mismatch",
    source="transformers _assisted_decoding Case 2; SpecInfer naive sampling",
    acceptance=match_acceptance,
)
def sample_and_match(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Sample-and-match (strict acceptance; transformers "Case 2", SpecInfer's naive sampling).

    Draw ``y_i ~ p_i`` independently of the draft; accept while ``y_i == x_i``; on the first
    mismatch emit ``y_i`` itself. This is ancestral sampling from ``p``, exact for any drafter.
    """
    block: list[int] = []
    for i, x in enumerate(draft_tokens):
        y = rand.categorical(target_probs[i])
        block.append(y)
        if y != x:
            return block
    block.append(rand.categorical(target_probs[len(draft_tokens)]))
    return block


def block_weights(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int]
) -> tuple[list[Any], list[Any]]:
    """Block verification's weights ``p_i`` (``p_0 = 1``) and stopping probabilities ``h_i``.

    Sun et al., "Block Verification Accelerates Speculative Decoding" (ICLR 2025)::

        p_i = min(p_{i-1} * M_b(X_i | X^{i-1}) / M_s(X_i | X^{i-1}), 1)
        h_i = Z_i / (Z_i + 1 - p_i),  Z_i = sum_x max(p_i M_b(x | X^i) - M_s(x | X^i), 0)   (i < gamma)
        h_gamma = p_gamma

    The 0/0 case (``p_i = 1`` and ``Z_i = 0``) is never decisive; it is set to 1 as in SGLang's
    reference. Returns ``(weights, h)`` with ``weights[0] = 1`` and ``h[i - 1] = h_i``.
    """
    one = one_like(target_probs[0][0])
    gamma = len(draft_tokens)
    weights: list[Any] = [one]
    h: list[Any] = []
    for i in range(1, gamma + 1):
        x = draft_tokens[i - 1]
        weights.append(_cap(weights[i - 1] * likelihood_ratio(target_probs[i - 1], draft_probs[i - 1], x)))
        if i < gamma:
            scaled = [weights[i] * v for v in target_probs[i]]
            z = sum(positive_part(scaled, draft_probs[i]), zero_like(one))
            denominator = z + (one - weights[i])
            h.append(z / denominator if denominator > 0 else one)
        else:
            h.append(weights[i])
    return weights, h


@chain_verifier(
    name="block",
    kind="exact",
    summary="block verification: last passing coin over h_i, weighted residual",
    source="Sun et al., Block Verification Accelerates Speculative Decoding, ICLR 2025",
    acceptance=block_acceptance,
)
def block_verification(
    target_probs: Rows, draft_probs: Rows, draft_tokens: Sequence[int], rand: Random
) -> list[int]:
    """Block verification (Sun, Mendlovic, Leviathan et al., ICLR 2025).

    ``tau`` is the *last* index whose coin ``eta_i <= h_i`` passes (scanning down from
    ``gamma`` and stopping at the first pass gives the same law with fewer coins). After
    ``tau = gamma`` the bonus comes from ``M_b(. | X^gamma)``; otherwise the correction comes
    from ``[p_tau M_b(. | X^tau) - M_s(. | X^tau)]_+``, normalised. Optimal among lossless
    chain verifiers.
    """
    gamma = len(draft_tokens)
    weights, h = block_weights(target_probs, draft_probs, draft_tokens)
    tau = 0
    for i in range(gamma, 0, -1):
        if rand.bernoulli(h[i - 1]):
            tau = i
            break
    if tau == gamma:
        last = rand.categorical(target_probs[gamma])
    else:
        scaled = [weights[tau] * v for v in target_probs[tau]]
        last = rand.categorical(positive_part(scaled, draft_probs[tau]))
    return [*draft_tokens[:tau], last]
