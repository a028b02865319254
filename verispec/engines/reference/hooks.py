"""The reference engine's seams: each step of a round, its correct version, and the planted
bugs that replace them, each declared beside the seam.

:class:`Hooks` holds one callable per step of a round; its defaults are the correct algorithm
(the index functions z3 proves, the registered exact verifier). Each planted bug below replaces
one seam (and, where the engine it comes from needs one, others that are no bug alone) and
is declared with :func:`~verispec.engines.bugs.planted_bug` on its replacement: its name, its
mechanism, its public source (a repository and an issue or PR number, or the document in
this repository that derives it) and the checks that must catch it, with the evidence each
must fail through. ``verispec conform --engine reference --mutation NAME`` plants one; the
negative controls (``verispec controls``) plant each in turn. The tree mode's bugs are planted
in ``reference-tree``; ``reference-paged`` takes the chain bugs. The round never names a bug.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from verispec.core.ops import positive_part
from verispec.core.random import SeededRandom
from verispec.core.transforms import SamplingConfig, apply_float
from verispec.engines.bugs import AUDIT_ARTICLE, CONVENTIONS, PlantedBug, planted_bug
from verispec.engines.protocol import Request, Sampling
from verispec.errors import UsageError
from verispec.smt import index as ix
from verispec.verdicts import Evidence
from verispec.verifiers import registry
from verispec.verifiers.chain import acceptance_ratio

__all__ = ["RAW_Q_TOP_K", "Hooks", "planted_hooks", "probs", "verify_correctly", "with_hooks"]


def probs(logits: Any, config: Any) -> list[float]:
    """The law of one row of ``logits`` under the sampling settings ``config`` (float64)."""
    import torch  # deferred: heavy

    row = torch.softmax(logits.double(), dim=-1).cpu().numpy()
    return [float(v) for v in apply_float(row, config)]


# ------------------------------------------------------------------- the seams, correct


def _propose(logits: Any, config: SamplingConfig, rand: SeededRandom) -> tuple[int, list[float]]:
    declared = probs(logits, config)
    return rand.categorical(declared), declared


def verify_correctly(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: SeededRandom, greedy: bool
) -> tuple[list[int], int]:
    """The registered ``greedy`` verifier at temperature 0, ``token-level`` otherwise."""
    entry = registry.get_chain("greedy" if greedy else "token-level")
    block = [int(t) for t in entry.verify(p_rows, q_rows, drafts, rand)]
    return block, len(block) - 1


def _truncate(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    count = ix.committed_count(block_len, eos, budget)
    return count, eos < count


def _crop(starts: Mapping[int, int], kept: Mapping[int, int], lengths: Sequence[int]) -> dict[int, int]:
    return {b: ix.target_crop_length(L, kept[b]) for b, L in starts.items()}


def _compact(cache: Any, path: Sequence[int], L: int) -> None:
    for j, row in enumerate(path):
        src, dst = ix.compaction_plan(j, row, L)
        if src != dst:
            cache.move(src, dst)


@dataclass(frozen=True)
class Hooks:
    """The reference engine's seams. Each field is one step of a round; the defaults are the
    correct algorithm (the index functions z3 proves, the registered exact verifier).

    * ``seed(request)``: the seed of the request's random stream;
    * ``propose(logits, config, rand) -> (draft, q)``: one draft token from the draft's
      (penalised) logits, and the law declared to the verifier for it;
    * ``penalise(sampling, logits, generated, prompt)``: the request's penalties on the speculative path;
    * ``visible``, ``position``: the verify pass's mask and query positions;
    * ``route(live, starts, outputs)``: which verify output row belongs to which request
      (batch bookkeeping);
    * ``target_configs(config, gamma)``: the sampling settings of the ``gamma + 1`` verified
      rows (the last is the bonus row);
    * ``verify(p_rows, q_rows, drafts, rand, greedy) -> (block, accepted)``: verification
      (``greedy`` at temperature 0);
    * ``truncate(block_len, first_stop, budget) -> (committed, stopped)``: stop ids and budget;
    * ``crop(starts, kept, lengths) -> {row: entries}``: the target caches after the round;
    * ``sync(L, gamma, accepted) -> (draft crop, catch-up)``: the draft cache after the round;
    * ``tree_visible``, ``tree_position``, ``compact(cache, path, L)``: the tree mode's mask,
      positions and accepted-path KV compaction.
    """

    seed: Callable[[Request], int] = lambda request: request.seed
    propose: Callable[[Any, SamplingConfig, SeededRandom], tuple[int, list[float]]] = _propose
    penalise: Callable[[Sampling, Any, Sequence[int], Sequence[int]], Any] = Sampling.penalise
    visible: Callable[..., Any] = ix.visible
    position: Callable[..., Any] = ix.query_position
    route: Callable[[list[int], dict[int, int], list[Any]], list[Any]] = lambda live, starts, outputs: outputs
    target_configs: Callable[[SamplingConfig, int], list[SamplingConfig]] = lambda config, gamma: (
        [config] * (gamma + 1)
    )
    verify: Callable[..., tuple[list[int], int]] = verify_correctly
    truncate: Callable[[int, int, int], tuple[int, bool]] = _truncate
    crop: Callable[[Mapping[int, int], Mapping[int, int], Sequence[int]], dict[int, int]] = _crop
    sync: Callable[[Any, Any, Any], tuple[Any, Any]] = ix.draft_sync
    tree_visible: Callable[..., Any] = ix.tree_visible
    tree_position: Callable[..., Any] = ix.tree_position
    compact: Callable[[Any, Sequence[int], int], None] = _compact

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def with_hooks(**replaced: Any) -> Hooks:
    """The correct hooks with ``replaced`` swapped in; an unknown hook name is a usage error."""
    unknown = sorted(set(replaced) - set(Hooks.names()))
    if unknown:
        raise UsageError(f"hooks {unknown} are not among the reference engine's seams {Hooks.names()}")
    return replace(Hooks(), **replaced)


def planted_hooks(bugs: Sequence[PlantedBug]) -> Hooks:
    """The correct hooks with every seam of ``bugs`` replaced; two bugs on one seam cannot be
    combined (a usage error naming them)."""
    seams: dict[str, Any] = {}
    for bug in bugs:
        for seam, replacement in bug.seams.items():
            if seam in seams:
                names = [b.name for b in bugs]
                raise UsageError(f"mutations {names} replace the same hook {seam!r}; plant one of them")
            seams[seam] = replacement
    return with_hooks(**seams)


# ================================================================== the planted bugs

#: The top-k a candidate generator applies by default in ``raw-q-processed-draft``.
RAW_Q_TOP_K = 2

STATISTIC, IMPOSSIBLE, MISMATCH, COUNT = (
    Evidence.STATISTIC,
    Evidence.IMPOSSIBLE,
    Evidence.MISMATCH,
    Evidence.COUNT,
)


def _index(name: str) -> Callable[..., Any]:
    """A wrong convention of :mod:`verispec.smt.index` (the SMT catalog refutes it), by name."""
    return getattr(ix, name)  # type: ignore[no-any-return]


# ------------------------------------------------------- the verify pass: caches, masks, positions


@planted_bug(
    "crop-plus-one",
    engine="reference",
    seam="crop",
    mechanism="target cache cropped to L + accepted + 1: the rejected draft's KV stays visible",
    source=f"the crop rule, {CONVENTIONS} (verispec smt crop-plus-one refutes it)",
    caught_by={"greedy-equivalence": MISMATCH, "cache-rollback": IMPOSSIBLE},
)
def _crop_plus_one(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    return {b: min(ix.wrong_crop_plus_one(L, kept[b]), lengths[b]) for b, L in starts.items()}


planted_bug(
    "top-left-mask",
    engine="reference",
    seam="visible",
    mechanism="verify pass with a top-left causal mask (SDPA is_causal on non-square inputs)",
    source="pytorch/pytorch scaled_dot_product_attention is_causal (upper-left for Sq != Sk); "
    "Dao-AILab/flash-attention before 2.1 (#517)",
    caught_by={"greedy-equivalence": MISMATCH},
)(_index("wrong_visible_top_left"))
planted_bug(
    "positions-reset",
    engine="reference",
    seam="position",
    mechanism="verify-pass positions restart at zero (RoPE off by the prefix length)",
    source="position bugs of this class: sgl-project/sglang PR #25015, huggingface/transformers PR #30068",
    caught_by={"greedy-equivalence": MISMATCH},
)(_index("wrong_position_reset"))
planted_bug(
    "draft-no-catch-up",
    engine="reference",
    seam="sync",
    mechanism="draft cache not caught up after full acceptance (d_gamma never fed)",
    source="vllm-project/vllm PR #9730 (draft KV after a bonus token)",
    caught_by={"acceptance-accounting": MISMATCH},
)(_index("wrong_draft_sync_no_catch_up"))


# ------------------------------------------------------------------------------ verification


def _registered_verify(name: str, accepted: Callable[[list[int], Sequence[int]], int] | None = None) -> Any:
    """A ``verify`` hook running the registered control verifier ``name`` on sampled requests
    (greedy ones keep the correct verifier)."""

    def verify(
        p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
    ) -> tuple[list[int], int]:
        if greedy:
            return verify_correctly(p_rows, q_rows, drafts, rand, greedy)
        block = [int(t) for t in registry.get_chain(name).verify(p_rows, q_rows, drafts, rand)]
        return block, accepted(block, drafts) if accepted else len(block) - 1

    verify.__qualname__ = f"verify_with_{name.replace('-', '_')}"
    return verify


def _missing_bonus_accepted(block: list[int], drafts: Sequence[int]) -> int:
    """The engine counts every draft accepted when the block holds them all (and no bonus)."""
    return len(drafts) if block == list(drafts) else len(block) - 1


planted_bug(
    "resample-target",
    engine="reference",
    seam="verify",
    mechanism="fresh target sample after a rejection instead of the residual",
    source=AUDIT_ARTICLE,
    caught_by={"sampling-law": STATISTIC, "first-token-law": STATISTIC},
)(_registered_verify("resample-target"))
planted_bug(
    "softmax-residual",
    engine="reference",
    seam="verify",
    mechanism="softmax of clamp(p - q, 0) as the residual",
    source="huggingface/transformers PR #28508",
    caught_by={"sampling-law": IMPOSSIBLE, "first-token-law": STATISTIC},
)(_registered_verify("softmax-residual"))
planted_bug(
    "bonus-wrong-row",
    engine="reference",
    seam="verify",
    mechanism="bonus token drawn from the last draft position's target row",
    source="NVIDIA/TensorRT-LLM PR #15098; SafeAILab/EAGLE PR #47",
    caught_by={"sampling-law": IMPOSSIBLE},
)(_registered_verify("bonus-wrong-row"))
planted_bug(
    "missing-bonus",
    engine="reference",
    seam="verify",
    mechanism="no bonus token after full acceptance",
    source="the round contract, accepted + 1 tokens (Leviathan et al., ICML 2023, Algorithm 1)",
    caught_by={"acceptance-accounting": COUNT},
)(_registered_verify("missing-bonus", _missing_bonus_accepted))


# ----------------------------------------------------------------------- stops, budgets, ids


@planted_bug(
    "eos-budget-first",
    engine="reference",
    seam="truncate",
    mechanism="length checked before stop ids: tokens after an EOS leak",
    source="sgl-project/sglang #31599 / PR #31569",
    caught_by={"eos-length": COUNT},
)
def _budget_first(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    count = ix.wrong_truncation_budget_first(block_len, eos, budget)
    return count, eos < count


@planted_bug(
    "no-eos-crop",
    engine="reference",
    seam="truncate",
    mechanism="generation continues past an EOS accepted mid-block",
    source="huggingface/transformers #47912",
    caught_by={"eos-length": COUNT},
)
def _no_eos_crop(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    return min(block_len, budget), False


@planted_bug(
    "vocab-overflow",
    engine="reference",
    seam="verify",
    mechanism="a correction id outside the vocabulary when the residual's last bin wins",
    source="vllm-project/vllm GHSA-8wr5-jm2h-8r4f",
    caught_by={"ids-in-vocab": Evidence.BAD_OUTPUT},
)
def _vocab_overflow(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """A correction that lands on the residual's last positive bin comes back as the id
    ``vocab_size`` (the masked tail of the last tile wins the tie-break)."""
    block, accepted = verify_correctly(p_rows, q_rows, drafts, rand, greedy)
    kept = len(block) - 1
    if kept < len(drafts):
        residual = [max(a - b, 0.0) for a, b in zip(p_rows[kept], q_rows[kept], strict=True)]
        if block[-1] == max(t for t, v in enumerate(residual) if v > 0):
            block[-1] = len(p_rows[kept])
    return block, accepted


@planted_bug(
    "unseeded",
    engine="reference",
    seam="seed",
    mechanism="ignores the request seed (not reproducible)",
    source="vllm-project/vllm tests/samplers/test_rejection_sampler.py test_deterministic_when_seeded",
    caught_by={"determinism": MISMATCH},
)
def _unseeded(request: Any) -> int:
    return int(time.time_ns() % 2**31)


# ------------------------------------------------------------ the draft law declared to the verifier


@planted_bug(
    "draft-temperature-ignored",
    engine="reference",
    seam="propose",
    mechanism="drafts at T=1 inside the declared support, q declared at the request's T",
    source="z-lab/dflash #74",
    caught_by={"sampling-law": STATISTIC},
)
def _draft_temperature_ignored(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts at T=1, kept inside the declared support (so no guard trips on them)."""
    declared = probs(logits, config)
    law = probs(logits, config.without_temperature())
    return rand.categorical([a if d > 0 else 0.0 for a, d in zip(law, declared, strict=True)]), declared


@planted_bug(
    "target-default-params",
    engine="reference",
    seam="target_configs",
    mechanism="target probabilities scored with default settings (T=1, no truncation)",
    source="vllm-project/vllm #9834 -> PR #10198",
    caught_by={"sampling-law": IMPOSSIBLE},
)
def _default_params(config: Any, gamma: int) -> list[Any]:
    return [SamplingConfig()] * (gamma + 1)


@planted_bug(
    "greedy-draft-softmax-q",
    engine="reference",
    seam="propose",
    mechanism="drafts by argmax while q is declared as the softmax",
    source="huggingface/transformers #32867 -> PR #33534",
    caught_by={"sampling-law": STATISTIC},
)
def _greedy_draft_softmax_q(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    declared = probs(logits, config)
    return max(range(len(declared)), key=lambda t: (declared[t], -t)), declared


@planted_bug(
    "raw-q-processed-draft",
    engine="reference",
    seam="propose",
    mechanism=f"drafts sampled after a default top-k of {RAW_Q_TOP_K}, q declared from raw logits",
    source="huggingface/transformers #47932 / PR #47961",
    caught_by={"first-token-law": STATISTIC},
)
def _raw_q_processed_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts from a top-k-processed law (a default top-k in the generator), q from raw logits."""
    k = min(config.top_k or len(logits), RAW_Q_TOP_K)
    return rand.categorical(probs(logits, replace(config, top_k=k))), probs(logits, config)


@planted_bug(
    "draft-probs-none",
    engine="reference",
    seam="propose",
    mechanism="q taken as a point mass at the sampled draft (draft_probs=None)",
    source="vllm-project/vllm #40149 -> PR #40269",
    caught_by={"acceptance-accounting": STATISTIC},
)
def _draft_probs_none(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    declared = probs(logits, config)
    token = rand.categorical(declared)
    return token, [1.0 if t == token else 0.0 for t in range(len(declared))]


@planted_bug(
    "min-p-verify-ignored",
    engine="reference",
    seam="target_configs",
    mechanism="min_p applied to the bonus row only, not to the verified rows",
    source="vllm-project/vllm #42744 -> PR #42802",
    caught_by={"sampling-law": IMPOSSIBLE},
)
def _min_p_verify_ignored(config: Any, gamma: int) -> list[Any]:
    return [replace(config, min_p=None)] * gamma + [config]


@planted_bug(
    "always-accept",
    engine="reference",
    seam="verify",
    mechanism="the acceptance uniform fixed at 0: every draft accepted",
    source="vllm-project/vllm-ascend #13730",
    caught_by={"sampling-law": IMPOSSIBLE},
)
def _always_accept(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """Every draft accepted (a uniform fixed at 0), then a bonus token from the last row."""
    if greedy:
        return verify_correctly(p_rows, q_rows, drafts, rand, greedy)
    return [*drafts, rand.categorical(p_rows[len(drafts)])], len(drafts)


planted_bug(
    "reused-uniform",
    engine="reference",
    seam="verify",
    mechanism="one uniform reused for the acceptance test and the residual draw",
    source="flashinfer-ai/flashinfer PR #424",
    caught_by={"first-token-law": STATISTIC},
    quick_miss="it moves the first token's law by a total variation of 0.050 at the quick prompt, a "
    "quarter of the quick design's effect (0.2); the full run plans for 0.1",
)(_registered_verify("reused-uniform"))


@planted_bug(
    "unnormalised-draft",
    engine="reference",
    seam="propose",
    mechanism="q from draft logits without their normaliser (exp(l - max) / V)",
    source="NVIDIA/TensorRT-LLM #3125 -> PR #3278",
    caught_by={"sampling-law": STATISTIC},
)
def _unnormalised_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """exp(l / T - max) over the vocabulary size instead of over its sum: q unnormalised (each
    entry at most its normalised value, so the residual never vanishes)."""
    import torch  # deferred: heavy

    declared = probs(logits, config)
    token = rand.categorical(declared)
    if config.is_greedy:
        return token, declared
    scaled = logits.double() / float(config.temperature)
    raw = (torch.exp(scaled - scaled.max()) / len(declared)).tolist()
    return token, [r if d > 0 else 0.0 for r, d in zip(raw, declared, strict=True)]


@planted_bug(
    "bonus-untruncated",
    engine="reference",
    seam="target_configs",
    mechanism="top-k, top-p and min-p not applied to the bonus row",
    source="SafeAILab/EAGLE PR #215",
    caught_by={"cache-rollback": IMPOSSIBLE},
)
def _bonus_untruncated(config: Any, gamma: int) -> list[Any]:
    return [config] * gamma + [replace(config, top_k=None, top_p=None, min_p=None)]


def _verify_rejecting_impossible_drafts(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """Token-level verification with vLLM's acceptance rule, ``q(x) > 0 and p(x) / q(x) >= u``:
    a draft the declared q gives 0 is rejected and the correction drawn from the residual
    (verispec's verifier raises instead). No bug while the drafts follow q."""
    if greedy:
        return verify_correctly(p_rows, q_rows, drafts, rand, greedy)
    block: list[int] = []
    for i, x in enumerate(drafts):
        p, q = p_rows[i], q_rows[i]
        if q[x] > 0 and rand.bernoulli(acceptance_ratio(p, q, x)):
            block.append(x)
            continue
        residual = positive_part(p, q)
        block.append(rand.categorical(residual if sum(residual) > 0 else p))
        return block, i
    block.append(rand.categorical(p_rows[len(drafts)]))
    return block, len(drafts)


@planted_bug(
    "untruncated-draft",
    engine="reference",
    seam="propose",
    mechanism="drafts sampled without top-k, top-p or min-p while q is declared with them; the "
    "verifier rejects a draft q gives 0, as vLLM's kernel does",
    source="vllm-project/vllm PR #41044 (MTP draft sampling ignored top-k and top-p) and PR #56724 "
    "(the filters applied to the draft law must be applied before the draft is sampled)",
    caught_by={"sampling-law": STATISTIC},
    alongside=(("verify", _verify_rejecting_impossible_drafts),),
)
def _untruncated_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts from the law at the request's temperature without top-k, top-p or min-p; q
    declared with them (a draft outside the declared support can come out)."""
    declared = probs(logits, config)
    if config.is_greedy:
        return rand.categorical(declared), declared
    return rand.categorical(probs(logits, SamplingConfig(config.temperature))), declared


@planted_bug(
    "crop-no-op",
    engine="reference",
    seam="crop",
    mechanism="the target cache is never trimmed: rejected drafts stay in it",
    source="ml-explore/mlx-lm PR #1109 (#846)",
    caught_by={"greedy-equivalence": MISMATCH},
)
def _crop_no_op(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """A cache that cannot be trimmed keeps the rejected drafts."""
    return {b: lengths[b] for b in starts}


@planted_bug(
    "penalty-ignored",
    engine="reference",
    seam="penalise",
    mechanism="the frequency penalty applied without speculation only, not on the speculative path",
    source="vllm-project/vllm #18902",
    caught_by={"penalties": MISMATCH},
)
def _no_penalty(sampling: Any, logits: Any, generated: Sequence[int], prompt: Sequence[int]) -> Any:
    return logits


@planted_bug(
    "sampled-penalty-ignored",
    engine="reference",
    seam="penalise",
    mechanism="the penalties applied to greedy requests only: on the speculative path of a sampled "
    "request they are dropped (the greedy penalty tests of vLLM and transformers pass it)",
    source="TensorRT-LLM PR #17701 (penalties silently ignored in one-model speculative decoding), "
    "confined to sampled requests",
    caught_by={"sampling-law": IMPOSSIBLE, "cache-rollback": IMPOSSIBLE},
)
def _penalise_greedy_only(sampling: Any, logits: Any, generated: Sequence[int], prompt: Sequence[int]) -> Any:
    return sampling.penalise(logits, generated, prompt) if sampling.greedy else logits


# ------------------------------------------------------------------ batches with ragged acceptance


@planted_bug(
    "ragged-shared-offset",
    engine="reference",
    seam="crop",
    mechanism="every row's cache advanced by the first row's accepted count",
    source="Blaizzy/mlx-vlm PR #1155 (#1144)",
    caught_by={"ragged-batch": MISMATCH},
)
def _ragged_shared_offset(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """Every row advanced by the first live row's block."""
    first = kept[next(iter(kept))]
    return {b: min(ix.next_offset(L - 1, first), lengths[b]) for b, L in starts.items()}


@planted_bug(
    "finished-row-shift",
    engine="reference",
    seam="crop",
    mechanism="once a row has finished, each later row's cache is cropped by the next running row's "
    "accepted count (counts kept by position among the running rows, read by batch slot)",
    source="requests leaving a batch mid-flight (vLLM's InputBatch.condense moves rows between "
    "slots); the bookkeeping class of vllm-project/vllm PR #14645, where values read in one order "
    "were written in another",
    caught_by={"ragged-batch": MISMATCH},
)
def _kept_by_live_position(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """Accepted counts stored by position among the rows still running and read back by batch
    slot: while every row runs the two agree; once a row has finished, each later row is
    cropped by the next running row's count (the last row by its own)."""
    live = sorted(starts)
    by_position = [kept[b] for b in live]
    return {
        b: min(ix.target_crop_length(starts[b], by_position[min(b, len(live) - 1)]), lengths[b]) for b in live
    }


@planted_bug(
    "batch-order-by-length",
    engine="reference",
    seam="route",
    mechanism="verify rows matched to requests in length order, not batch order",
    source="vllm-project/vllm PR #14645",
    caught_by={"ragged-batch": MISMATCH},
)
def _order_by_length(live: list[int], starts: dict[int, int], outputs: list[Any]) -> list[Any]:
    """Verify rows handed back in the order of the rows' lengths, not the batch order."""
    order = sorted(live, key=lambda b: starts[b])
    routed = list(outputs)
    for b, source in zip(live, order, strict=True):
        routed[b] = outputs[source]
    return routed


# ------------------------------------------------------------------------------------ tree mode

planted_bug(
    "tree-sibling-visible",
    engine="reference-tree",
    seam="tree_visible",
    mechanism="tree mask lets siblings attend to each other",
    source="vllm-project/vllm PR #22226 (tree attention)",
    caught_by={"greedy-equivalence": MISMATCH},
)(_index("wrong_tree_visible_siblings"))
planted_bug(
    "tree-depth-mask",
    engine="reference-tree",
    seam="tree_visible",
    mechanism="a position-causal mask used as the tree mask (depth(y) <= depth(x))",
    source=f"the ancestor mask, {CONVENTIONS} (verispec smt tree-mask-position-causal-2nodes refutes it)",
    caught_by={"greedy-equivalence": MISMATCH},
)(_index("wrong_tree_position_causal"))


@planted_bug(
    "tree-positions-by-row",
    engine="reference-tree",
    seam="tree_position",
    mechanism="tree nodes at sequential positions L - 1 + node instead of L - 1 + depth",
    source=f"tree positions, {CONVENTIONS}; SafeAILab/EAGLE tree_position_ids",
    caught_by={"greedy-equivalence": MISMATCH},
)
def _positions_by_row(parents: Any, x: Any, L: Any, max_depth: int) -> Any:
    """Tree nodes at sequential positions ``L - 1 + node`` instead of ``L - 1 + depth``."""
    return ix.query_position(x, L)


@planted_bug(
    "tree-no-compaction",
    engine="reference-tree",
    seam="compact",
    mechanism="target cache cropped to the path length without moving the accepted KV",
    source="NVIDIA/TensorRT-LLM #10343: one rewind length cannot rewind a tree",
    caught_by={"greedy-equivalence": MISMATCH},
)
def _no_compaction(cache: Any, path: Sequence[int], L: int) -> None:
    """The accepted path's KV is left where the tree put it."""
