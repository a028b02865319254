"""One registry of verifiers: the exact ones and the known-wrong controls.

A registered chain verifier is a verify function plus the drafter it is used with, the
sampling settings its claim is about, and the acceptance profile of the algorithm it
implements (for the tail-sum identity). A registered tree verifier is a verify function
plus the candidate laws it is used with. Controls name their public source. Names are
unique across both families.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from verispec.core.ops import argmax
from verispec.core.random import Random
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError, unknown_name
from verispec.verifiers import chain, controls
from verispec.verifiers import tree_verifiers as tv
from verispec.verifiers.instance import DRAFTERS, ChainInstance, Drafter, Verify, run_round
from verispec.verifiers.trees import LAWS, DraftTree, TreeInstance, TreeVerify, draft_tree, run_tree_round

__all__ = [
    "ChainVerifier",
    "TreeVerifier",
    "Verifier",
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
greedy_acceptance = _product_acceptance(lambda p, q, x: Fraction(int(x == argmax(p))))


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

    def round(self, instance: ChainInstance, rand: Random) -> tuple[int, ...]:
        """One round of this verifier with its drafter on ``instance``."""
        return run_round(self.verify, self.draft, instance, rand)

    def accepted_given_drafts(self, instance: ChainInstance, rand: Random) -> tuple[Hashable, Any]:
        """Draw the drafts and return them with ``E[accepted | drafts]`` (tail-sum identity)."""
        assert self.acceptance is not None
        tokens, draft_rows = self.draft(instance, rand)
        target_rows = [instance.target_probs(tuple(tokens[:i])) for i in range(instance.gamma + 1)]
        tail = sum(
            (self.acceptance(target_rows, draft_rows, tokens, i) for i in range(1, instance.gamma + 1)),
            Fraction(0),
        )
        return tuple(tokens), tail

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


@dataclass(frozen=True)
class TreeVerifier:
    """A registered tree verifier (exact or control) and the candidate laws it is used with.

    For an exact verifier ``laws`` are the laws it is meant for (where it must be proved);
    for a control, the law under which it is wrong. ``acceptance(tree)`` optionally gives
    ``E[accepted | tree]`` in closed form, enabling round accounting.
    """

    name: str
    kind: Kind
    verify: TreeVerify
    laws: tuple[str, ...]
    summary: str
    source: str
    tree_acceptance: Callable[[DraftTree], Any] | None = None
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS[:4]
    family: str = field(default="tree")

    def __post_init__(self) -> None:
        for law in self.laws:
            if law not in LAWS:
                raise UsageError(f"laws contains {law!r}, not one of {', '.join(LAWS)}")

    @property
    def acceptance(self) -> Any:
        return self.tree_acceptance

    def round(self, instance: TreeInstance, rand: Random) -> tuple[int, ...]:
        return run_tree_round(self.verify, instance, rand)

    def accepted_given_drafts(self, instance: TreeInstance, rand: Random) -> tuple[Hashable, Any]:
        assert self.tree_acceptance is not None
        tree = draft_tree(instance, rand)
        return (tree.tokens, tree.parents), self.tree_acceptance(tree)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "family": self.family,
            "laws": list(self.laws),
            "summary": self.summary,
            "source": self.source,
            "settings": [s.describe() for s in self.settings],
        }


Verifier = ChainVerifier | TreeVerifier
_REGISTRY: dict[str, Verifier] = {}


def register(entry: Verifier) -> Verifier:
    """Add a verifier to the registry; names are unique."""
    if entry.name in _REGISTRY:
        raise UsageError(f"name={entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry
    return entry


def get(name: str) -> Verifier:
    """The registered verifier called ``name``; unknown names suggest the closest ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_name("verifier", name, _REGISTRY) from None


def names(kind: Kind | None = None, family: str | None = None) -> list[str]:
    """Registered names in registration order, optionally one kind and one family."""
    return [
        n
        for n, e in _REGISTRY.items()
        if (kind is None or e.kind == kind) and (family is None or e.family == family)
    ]


def verifiers(kind: Kind | None = None, family: str | None = None) -> list[Verifier]:
    return [_REGISTRY[n] for n in names(kind, family)]


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

# ------------------------------------------------------------------------ tree, exact

TREE_GREEDY_SETTINGS = (SamplingConfig(temperature=Fraction(0)),)

register(
    TreeVerifier(
        "mss",
        "exact",
        tv.mss,
        ("iid", "multi"),
        "SpecInfer multi-step speculative sampling: recursive rejection with replacement",
        "Miao et al., SpecInfer, ASPLOS 2024, Algorithm 2 (VerifyStochastic)",
    )
)
register(
    TreeVerifier(
        "rrs-without-replacement",
        "exact",
        tv.rrs_without_replacement,
        ("wor",),
        "recursive rejection without replacement: q_j conditions on the earlier siblings",
        "Jeon et al., Recursive Speculative Decoding, arXiv 2402.14160; Sequoia SpecTree",
    )
)
register(
    TreeVerifier(
        "point-mass-tree",
        "exact",
        tv.point_mass_tree,
        ("det", "adaptive-det"),
        "EAGLE verification of deterministic candidates: accept x with P(x), zero it on rejection",
        "Li et al., EAGLE/EAGLE-2/EAGLE-3, evaluate_posterior",
        tree_acceptance=tv.tree_match_acceptance,
    )
)
register(
    TreeVerifier(
        "sample-and-match-tree",
        "exact",
        tv.sample_and_match_tree,
        ("det", "iid"),
        "one target sample per node; descend while it matches a child",
        "SpecInfer naive sampling; FlexFlow traverse_verify_tree",
        tree_acceptance=tv.tree_match_acceptance,
    )
)
register(
    TreeVerifier(
        "traversal",
        "exact",
        tv.traversal,
        ("wor",),
        "traversal verification: leaf-to-root, p_alpha weights, residualised parents",
        "Weng et al., Traversal Verification for Speculative Tree Decoding, NeurIPS 2025",
    )
)
register(
    TreeVerifier(
        "k-seq",
        "exact",
        tv.k_seq,
        ("iid",),
        "SpecTr K-SEQ at each node with the smallest valid rho",
        "Sun et al., SpecTr, NeurIPS 2023",
    )
)
register(
    TreeVerifier(
        "greedy-tree",
        "exact",
        tv.greedy_tree,
        ("det", "iid"),
        "follow the child equal to the target argmax (temperature 0)",
        "greedy contract; Medusa/EAGLE greedy tree verification",
        tree_acceptance=tv.tree_match_acceptance,
        settings=TREE_GREEDY_SETTINGS,
    )
)

# --------------------------------------------------------------------- tree, controls

register(
    TreeVerifier(
        "mss-without-replacement",
        "control",
        tv.mss,
        ("wor",),
        "MSS applied to children drawn without replacement (unchanged q)",
        "verifiers.md section 3; Sequoia sampling_with_replacement uses replacement=False",
    )
)
register(
    TreeVerifier(
        "mss-deterministic-softmax-q",
        "control",
        tv.mss,
        ("det",),
        "top-k children verified by MSS with the softmax q",
        "Sequoia tests/specinfer_run.py; SafeAILab/EAGLE #329 misreading",
    )
)
register(
    TreeVerifier(
        "mss-merged-duplicates",
        "control",
        tv.mss_merged_duplicates,
        ("iid",),
        "MSS on a trie that merged duplicate siblings (residual updated once)",
        "verifiers.md section 3 (p=(0,1/3,2/3), q=(2/3,0,1/3) gives (0, 2/9, 7/9))",
    )
)
register(
    TreeVerifier(
        "typical-acceptance",
        "control",
        tv.typical_acceptance,
        ("det",),
        "Medusa typical acceptance: a deterministic entropy threshold",
        "FasterDecoding/Medusa get_typical_posterior_mask (Cai et al., ICML 2024)",
    )
)
register(
    TreeVerifier(
        "best-of-rows",
        "control",
        tv.best_of_rows,
        ("iid",),
        "independently verified rows, the longest kept",
        "Medusa nucleus/typical non-fast paths (verifiers.md section 8)",
    )
)
register(
    TreeVerifier(
        "k-seq-rho-one",
        "control",
        tv.k_seq_rho_one,
        ("iid",),
        "K-SEQ with rho = 1 and k >= 2 (negative residual, clamped)",
        "Sun et al., SpecTr, NeurIPS 2023: validity needs 1-(1-beta)^k <= rho beta",
    )
)
