"""One registry of verifiers: the exact ones and the known-wrong controls.

A registered chain verifier is a verify function plus the drafter it is used with, the
sampling settings its claim is about, and the acceptance profile of the algorithm it
implements (for the tail-sum identity). Controls name their public source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError, unknown_name
from verispec.verifiers import chain, controls
from verispec.verifiers.instance import DRAFTERS, Drafter, Verify

__all__ = [
    "ChainVerifier",
    "get",
    "names",
    "register",
    "verifiers",
]

Kind = Literal["exact", "control"]
#: ``acceptance(target_rows, draft_rows, drafts, i)``: the probability, given the drafts,
#: that at least ``i`` of them are accepted. Summed over ``i`` and averaged over the drafts it
#: gives ``E[accepted]`` by the tail-sum identity.
Acceptance = Callable[[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[int], int], Any]


def _product_acceptance(per_position: Callable[[Sequence[Any], Sequence[Any], int], Any]) -> Acceptance:
    def acceptance(target_rows: Any, draft_rows: Any, drafts: Sequence[int], i: int) -> Any:
        prob: Any = Fraction(1)
        for j in range(i):
            prob = prob * per_position(target_rows[j], draft_rows[j], drafts[j])
            if prob == 0:
                break
        return prob

    return acceptance


token_level_acceptance = _product_acceptance(chain.acceptance_ratio)
#: Point-mass verification and sample-and-match both accept draft ``x`` with probability ``p(x)``.
match_acceptance = _product_acceptance(lambda p, q, x: p[x])
greedy_acceptance = _product_acceptance(
    lambda p, q, x: Fraction(int(x == max(range(len(p)), key=lambda t: (p[t], -t))))
)


def block_acceptance(target_rows: Any, draft_rows: Any, drafts: Sequence[int], i: int) -> Any:
    """Block verification: ``Pr(tau >= i | drafts) = p_i(X^i)`` (Sun et al., Theorem 2)."""
    if i == 0:
        return Fraction(1)
    weights, _ = chain.block_weights(target_rows, draft_rows, drafts)
    return weights[i]


#: Settings every stochastic verifier is checked under: plain sampling, a sharper
#: temperature, and each truncation, with and without temperature.
STOCHASTIC_SETTINGS: tuple[SamplingConfig, ...] = (
    SamplingConfig(),
    SamplingConfig(temperature=Fraction(1, 2)),
    SamplingConfig(top_k=2),
    SamplingConfig(top_p=Fraction(7, 10)),
    SamplingConfig(min_p=Fraction(1, 3)),
    SamplingConfig(temperature=Fraction(1, 2), top_k=3, top_p=Fraction(9, 10)),
)
GREEDY_SETTINGS: tuple[SamplingConfig, ...] = (
    SamplingConfig(temperature=Fraction(0)),
    SamplingConfig(temperature=Fraction(0), top_k=2),
)


@dataclass(frozen=True)
class ChainVerifier:
    """A registered chain verifier (exact or control)."""

    name: str
    kind: Kind
    verify: Verify
    drafter: str
    summary: str
    source: str
    #: the acceptance profile of the algorithm it implements; ``None`` skips round accounting
    acceptance: Acceptance | None = None
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS
    family: str = field(default="chain")

    def __post_init__(self) -> None:
        if self.drafter not in DRAFTERS:
            raise UsageError(f"drafter={self.drafter!r} is not one of {sorted(DRAFTERS)}")

    @property
    def draft(self) -> Drafter:
        return DRAFTERS[self.drafter]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "family": self.family,
            "drafter": self.drafter,
            "summary": self.summary,
            "source": self.source,
            "settings": [s.describe() for s in self.settings],
        }


_REGISTRY: dict[str, ChainVerifier] = {}


def register(entry: ChainVerifier) -> ChainVerifier:
    """Add a verifier to the registry; names are unique."""
    if entry.name in _REGISTRY:
        raise UsageError(f"name={entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry
    return entry


def get(name: str) -> ChainVerifier:
    """The registered verifier called ``name``; unknown names suggest the closest ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_name("verifier", name, _REGISTRY) from None


def names(kind: Kind | None = None) -> list[str]:
    """Registered names in registration order, optionally only one kind."""
    return [n for n, e in _REGISTRY.items() if kind is None or e.kind == kind]


def verifiers(kind: Kind | None = None) -> list[ChainVerifier]:
    return [_REGISTRY[n] for n in names(kind)]


# ----------------------------------------------------------------------------- exact

register(
    ChainVerifier(
        "token-level",
        "exact",
        chain.token_level,
        "sample",
        "accept with min(1, p/q), correct from the normalised residual [p-q]+, bonus from p",
        "Leviathan et al., ICML 2023, Algorithm 1; Chen et al., arXiv 2302.01318",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "greedy",
        "exact",
        chain.greedy,
        "sample",
        "accept while the draft equals the target argmax (lowest id wins ties)",
        "greedy contract; Leviathan et al. 2023, Section 2.3",
        greedy_acceptance,
        settings=GREEDY_SETTINGS,
    )
)
register(
    ChainVerifier(
        "point-mass",
        "exact",
        chain.point_mass,
        "argmax",
        "deterministic drafts: accept with p(x), correct from p without x",
        "vLLM v1 rejection sampler, IS_NGRAM path; verifiers.md section 1",
        match_acceptance,
    )
)
register(
    ChainVerifier(
        "sample-and-match",
        "exact",
        chain.sample_and_match,
        "sample",
        "draw y ~ p, accept while y equals the draft, emit y at the first mismatch",
        "transformers _assisted_decoding Case 2; SpecInfer naive sampling",
        match_acceptance,
    )
)
register(
    ChainVerifier(
        "block",
        "exact",
        chain.block_verification,
        "sample",
        "block verification: last passing coin over h_i, weighted residual",
        "Sun et al., Block Verification Accelerates Speculative Decoding, ICLR 2025",
        block_acceptance,
    )
)

# -------------------------------------------------------------------------- controls

register(
    ChainVerifier(
        "resample-target",
        "control",
        controls.resample_target,
        "sample",
        "a fresh target sample after a rejection instead of the residual",
        "seed article, section 3 (the (0.4, 0.32, 0.28) example)",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "softmax-residual",
        "control",
        controls.softmax_residual,
        "sample",
        "softmax(clamp(p-q, 0)) as the residual instead of normalising",
        "huggingface/transformers PR #28508",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "greedy-draft-softmax-q",
        "control",
        chain.token_level,
        "argmax-declaring-softmax",
        "argmax drafting with the softmax q in the ratio and residual",
        "huggingface/transformers #32867 -> PR #33534; jaymody/speculative-sampling #3",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "raw-q-processed-draft",
        "control",
        chain.token_level,
        "processed-declaring-raw",
        "draft sampled after top-k/top-p while the ratio uses the unprocessed q",
        "huggingface/transformers #47932 / PR #47961",
        token_level_acceptance,
        settings=(
            SamplingConfig(top_k=2),
            SamplingConfig(top_p=Fraction(7, 10)),
            SamplingConfig(min_p=Fraction(1, 3)),
            SamplingConfig(temperature=Fraction(1, 2)),
        ),
    )
)
register(
    ChainVerifier(
        "missing-bonus",
        "control",
        controls.missing_bonus,
        "sample",
        "no bonus token after full acceptance (law kept, round contract broken)",
        "round contract; the verifiers.md section 1 note on the bonus token",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "bonus-wrong-row",
        "control",
        controls.bonus_wrong_row,
        "sample",
        "bonus drawn from the last draft position's target row",
        "row misindexing class: TensorRT-LLM PR #15098, EAGLE PR #47",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "reused-uniform",
        "control",
        controls.reused_uniform,
        "sample",
        "one uniform for the acceptance test and the residual's inverse-CDF draw",
        "flashinfer-ai/flashinfer PR #424",
        token_level_acceptance,
    )
)
register(
    ChainVerifier(
        "target-only-temperature",
        "control",
        chain.token_level,
        "untempered",
        "temperature reaches the target and the declared q but not the draft sampler",
        "z-lab/dflash #74 (vllm-project/vllm #9834 is the mirror image)",
        token_level_acceptance,
        settings=(
            SamplingConfig(temperature=Fraction(1, 2)),
            SamplingConfig(temperature=Fraction(1, 3)),
            SamplingConfig(temperature=Fraction(1, 2), top_k=3),
        ),
    )
)
register(
    ChainVerifier(
        "block-first-failure",
        "control",
        controls.block_first_failure,
        "sample",
        "block verification with tau = first failing coin (top-down) instead of last passing",
        "verifiers.md section 2 pitfalls; Sun et al. 2025",
        block_acceptance,
    )
)
