"""The conventions catalog: every convention engines use, with the verdict it must get.

Each entry pairs an obligation with an implementation (verispec's own index function or a
convention shipped by an engine) and the verdict the catalog expects. ``verispec smt``
checks every entry; a verdict other than the expected one fails the run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from verispec.smt import index as ix
from verispec.smt.obligations import OBLIGATIONS, SmtResult, check
from verispec.verdicts import RunVerdict, VerdictKind

#: Where the conventions are stated, derived and sourced.
DOC = "docs/explanation/index-conventions.md"

__all__ = ["CATALOG", "CatalogEntry", "CatalogResult", "catalog_verdict", "run_catalog"]


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    obligation: str
    convention: str
    implementation: Callable[..., Any]
    expected: VerdictKind
    source: str
    family: Literal["chain", "tree"] = "chain"


@dataclass
class CatalogResult:
    entry: CatalogEntry
    result: SmtResult

    @property
    def ok(self) -> bool:
        return self.result.verdict.kind == self.entry.expected

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.entry.name,
            "obligation": self.entry.obligation,
            "statement": OBLIGATIONS[self.entry.obligation].statement,
            "convention": self.entry.convention,
            "family": self.entry.family,
            "expected": self.entry.expected,
            "ok": self.ok,
            "source": self.entry.source,
            **self.result.to_json(),
        }


def _crop_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda L, gamma, accepted: fn(L, accepted)


def _per_row(offsets: Any, accepted: Any) -> tuple[Any, Any]:
    return ix.next_offset(offsets[0], accepted[0]), ix.next_offset(offsets[1], accepted[1])


def _shared_offset(offsets: Any, accepted: Any) -> tuple[Any, Any]:
    """mlx-vlm PR #1155: every row advanced by the first row's block."""
    return offsets[0] + accepted[0] + 1, offsets[1] + accepted[0] + 1


def _construction(*args: Any) -> Any:  # the inductive-step obligations check a construction
    return None


CATALOG: tuple[CatalogEntry, ...] = (
    CatalogEntry(
        "verify-mask",
        "visibility",
        "verispec.smt.index.visible (position causality)",
        ix.visible,
        VerdictKind.PROVED,
        f"{DOC}#the-verify-pass",
    ),
    CatalogEntry(
        "top-left-mask",
        "visibility",
        "top-left causal: key <= row",
        ix.wrong_visible_top_left,
        VerdictKind.REFUTED,
        "PyTorch SDPA is_causal on non-square inputs; FlashAttention < 2.1",
    ),
    CatalogEntry(
        "bottom-right-mask",
        "visibility",
        "bottom-right causal: key <= row + Sk - Sq",
        ix.visible_bottom_right,
        VerdictKind.PROVED,
        "FlashAttention >= 2.1, xformers FromBottomRight",
    ),
    CatalogEntry(
        "position-mask",
        "position-mask",
        "position-anchored, cache without stale tail",
        ix.position_anchored,
        VerdictKind.PROVED,
        "HF masking_utils, llama.cpp, gpt-fast",
    ),
    CatalogEntry(
        "position-mask-stale",
        "position-mask-stale-tail",
        "position-anchored, stale tail kept",
        ix.position_anchored,
        VerdictKind.REFUTED,
        f"ggml-org/llama.cpp position-anchored masks without llama_memory_seq_rm; {DOC}#crops",
    ),
    CatalogEntry(
        "crop",
        "crop",
        "crop to L + accepted",
        _crop_of(ix.target_crop_length),
        VerdictKind.PROVED,
        "HF crop(new_cur_len - 1), llama.cpp seq_rm(n_past, -1)",
    ),
    CatalogEntry(
        "crop-plus-one",
        "crop",
        "crop to L + accepted + 1",
        _crop_of(ix.wrong_crop_plus_one),
        VerdictKind.REFUTED,
        f"{DOC}#crops",
    ),
    CatalogEntry(
        "crop-full",
        "crop",
        "no crop: the full L + gamma written by the verify pass",
        lambda L, gamma, accepted: ix.wrong_crop_full(L, gamma),
        VerdictKind.REFUTED,
        f"{DOC}#crops",
    ),
    CatalogEntry(
        "crop-negative-slice",
        "crop",
        "keys[:-k] with k entries to remove (k may be 0)",
        ix.wrong_crop_negative_count,
        VerdictKind.REFUTED,
        "huggingface/transformers #47433",
    ),
    CatalogEntry(
        "draft-sync",
        "draft-sync",
        "crop to min(L+a, L-1+gamma), catch up d_gamma after full acceptance",
        ix.draft_sync,
        VerdictKind.PROVED,
        "gpt-fast speculative_decode extra forward",
    ),
    CatalogEntry(
        "draft-sync-no-catch-up",
        "draft-sync",
        "crop like the target, no catch-up",
        ix.wrong_draft_sync_no_catch_up,
        VerdictKind.REFUTED,
        "meta-pytorch/gpt-fast speculative_decode feeds the last draft after full acceptance; "
        f"{DOC}#draft-cache-sync",
    ),
    CatalogEntry(
        "positions",
        "positions",
        "absolute positions L-1+row",
        ix.query_position,
        VerdictKind.PROVED,
        f"{DOC}#positions",
    ),
    CatalogEntry(
        "positions-reset",
        "positions",
        "positions restarted after a crop",
        ix.wrong_position_reset,
        VerdictKind.REFUTED,
        "HF PR #30068 class (cache_position advanced wrongly)",
    ),
    CatalogEntry(
        "truncation",
        "truncation",
        "cut after the first EOS, then at the budget",
        ix.committed_count,
        VerdictKind.PROVED,
        f"sgl-project/sglang #31599 (stop ids before the budget); {DOC}#stops-and-budgets",
    ),
    CatalogEntry(
        "truncation-budget-first",
        "truncation",
        "length checked before stop tokens",
        ix.wrong_truncation_budget_first,
        VerdictKind.REFUTED,
        "sgl-project/sglang #31599",
    ),
    CatalogEntry(
        "paged-slots",
        "paged-slots",
        "table[pos // B] * B + pos % B",
        ix.slot,
        VerdictKind.PROVED,
        "vLLM _compute_slot_mapping_kernel",
    ),
    CatalogEntry(
        "paged-crop",
        "paged-crop",
        "pages kept = ceil(n / B)",
        ix.pages_needed,
        VerdictKind.PROVED,
        "vLLM KVCacheManager (cdiv)",
    ),
    CatalogEntry(
        "paged-crop-floor",
        "paged-crop",
        "pages kept = n // B",
        ix.wrong_pages_floor,
        VerdictKind.REFUTED,
        f"pages are allocated by ceiling division (vllm-project/vllm KV cache manager); {DOC}#paged-caches",
    ),
    CatalogEntry(
        "batch-offsets",
        "batch-offsets",
        "each row advanced by its own accepted + 1",
        _per_row,
        VerdictKind.PROVED,
        "vLLM num_computed_tokens per request",
    ),
    CatalogEntry(
        "batch-offsets-shared",
        "batch-offsets",
        "one offset advanced for every row",
        _shared_offset,
        VerdictKind.REFUTED,
        "Blaizzy/mlx-vlm PR #1155",
    ),
    CatalogEntry(
        "compaction-step",
        "compaction-step",
        "dst = L-1+j, src = L-1+r[j]",
        ix.compaction_plan,
        VerdictKind.PROVED,
        "EAGLE/Medusa update_inference_inputs",
        "tree",
    ),
    CatalogEntry(
        "compaction-ascending",
        "compaction-ascending",
        "copy in ascending order",
        ix.compaction_plan,
        VerdictKind.PROVED,
        "EAGLE/Medusa; FlexFlow commit_tokens_kernel",
        "tree",
    ),
    CatalogEntry(
        "compaction-descending",
        "compaction-descending",
        "copy in descending order",
        ix.compaction_plan,
        VerdictKind.REFUTED,
        f"SafeAILab/EAGLE copies the accepted path in ascending order; {DOC}#tree-verify-passes",
        "tree",
    ),
    CatalogEntry(
        "tree-mask",
        "tree-visibility",
        "ancestor-or-self walk",
        ix.tree_visible,
        VerdictKind.PROVED,
        "EAGLE-2 tree_mask, vLLM tree_attn, SGLang build_tree",
        "tree",
    ),
    CatalogEntry(
        "tree-mask-siblings",
        "tree-visibility",
        "siblings see each other",
        ix.wrong_tree_visible_siblings,
        VerdictKind.REFUTED,
        "vLLM PR #22226 class (broken tree attention)",
        "tree",
    ),
    CatalogEntry(
        "tree-mask-position-causal",
        "tree-visibility",
        "position-causal mask as a tree mask",
        ix.wrong_tree_position_causal,
        VerdictKind.REFUTED,
        f"{DOC}#tree-verify-passes",
        "tree",
    ),
    CatalogEntry(
        "tree-mask-step",
        "tree-mask-step",
        "row[x] = row[parent(x)] | {x}",
        _construction,
        VerdictKind.PROVED,
        "EAGLE-2 tree mask construction",
        "tree",
    ),
    CatalogEntry(
        "tree-positions",
        "tree-positions",
        "L-1+depth",
        ix.tree_position,
        VerdictKind.PROVED,
        "EAGLE tree_position_ids, SGLang positions",
        "tree",
    ),
    CatalogEntry(
        "tree-position-step",
        "tree-position-step",
        "depth(x) = depth(parent(x)) + 1",
        _construction,
        VerdictKind.PROVED,
        "EAGLE/Medusa position ids",
        "tree",
    ),
)


def run_catalog(
    names: list[str] | None = None,
    *,
    timeout_ms: int = 20_000,
    on_result: Callable[[CatalogResult], None] | None = None,
) -> list[CatalogResult]:
    """Check every catalog entry (or the named ones) and return the results in order."""
    selected = [e for e in CATALOG if names is None or e.name in names]
    out = []
    for entry in selected:
        result = CatalogResult(entry, check(entry.obligation, entry.implementation, timeout_ms=timeout_ms))
        out.append(result)
        if on_result:
            on_result(result)
    return out


def catalog_verdict(results: list[CatalogResult]) -> RunVerdict:
    """Fail when an entry got the opposite of its expected verdict; inconclusive when one
    could not be settled (``unknown``); else pass."""
    if any(not r.ok and r.result.verdict.kind != VerdictKind.UNKNOWN for r in results):
        return RunVerdict.FAIL
    return RunVerdict.PASS if all(r.ok for r in results) else RunVerdict.INCONCLUSIVE
