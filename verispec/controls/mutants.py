"""The planted bugs: one :class:`Mutant` record per bug, in one place.

A record names the bug, its layer, its mechanism, its public source (a repository and an
issue or PR number, or the document in this repository that derives it), the checks that
must catch it and, for an engine bug, the seam it replaces and the replacement.

* **engine** bugs are declared here. A reference-engine bug replaces one field of
  :class:`verispec.engines.reference.Hooks` (``hook``) with ``replacement``; a bug in
  transformers' assisted generation is a patch (``replacement()``) of the transformers
  function named by ``hook``, applied in the engine's worker process only.
* **verifier** bugs are the control verifiers, declared where they are written
  (``@chain_verifier(kind="control", ...)``, ``@tree_verifier(kind="control", ...)``); the exact
  checker must refute them.
* **index** bugs are the refuted conventions of the SMT catalog (:mod:`verispec.smt.catalog`);
  z3 must refute them.

:func:`catalog` gathers all three layers as records. The controls runner, ``verispec controls
list``, ``Check.mutants``, the docs' catalog and the tests all read these records.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from verispec.errors import UsageError, unknown_name

__all__ = [
    "ENGINE_MUTANTS",
    "LAYERS",
    "Layer",
    "Mutant",
    "catalog",
    "engine_mutants",
    "find",
    "for_engine",
    "plant",
    "quick_blind_spots",
]

Layer = Literal["verifier", "engine", "index"]
LAYERS: tuple[Layer, ...] = ("verifier", "engine", "index")
#: The engines whose bugs are the catalog's own (their controls are named ``engine:<bug>``);
#: another engine's are ``engine:<engine>/<bug>``.
REFERENCE_ENGINES = ("reference", "reference-tree")


@dataclass(frozen=True)
class Mutant:
    """One planted bug (see the module docstring)."""

    subject: str  # the bug's name: the verifier, engine mutation or SMT convention entry
    layer: Layer
    mechanism: str
    source: str
    engine: str | None = None  # engine layer: the built-in engine it is planted in
    caught_by: tuple[str, ...] = ()  # engine layer: the checks that must catch it
    hook: str | None = None  # engine layer: the seam (or transformers function) it replaces
    replacement: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    #: engine layer: fixes of the engine's own bugs applied with the mutant, so that what the
    #: checks catch is the planted bug (vLLM's CPU build needs ``cpu-expand``)
    fixes: tuple[str, ...] = ()
    #: reference engines: other seams replaced with ``hook``, each no bug alone: the behaviour
    #: of the engine the bug comes from that lets it through (vLLM's verifier rejects a draft
    #: the declared q gives 0 where verispec's raises)
    alongside: tuple[tuple[str, Callable[..., Any]], ...] = field(default=(), compare=False, repr=False)
    #: engine layer: why the quick sizes cannot see the bug (smaller than the quick design's
    #: effect), so that only the full sizes catch it; ``None``: caught at the quick sizes
    quick_miss: str | None = None

    @property
    def seams(self) -> dict[str, Callable[..., Any]]:
        """Reference engines: every seam the bug replaces, ``hook`` first, and its replacement."""
        assert self.hook is not None and self.replacement is not None, self.name
        return {self.hook: self.replacement, **dict(self.alongside)}

    @property
    def name(self) -> str:
        """Unique across layers: ``verifier:<name>``, ``engine:<bug>``, ``index:<entry>``."""
        if self.layer == "engine" and self.engine not in REFERENCE_ENGINES:
            return f"engine:{self.engine}/{self.subject}"
        return f"{self.layer}:{self.subject}"

    @property
    def reproduce(self) -> str:
        if self.layer == "verifier":
            return f"verispec prove {self.subject} --explain"
        if self.layer == "index":
            return f"verispec smt {self.subject}"
        checks = "".join(f" --check {c}" for c in self.caught_by)
        fixes = "".join(f" --fix {f}" for f in self.fixes)
        run = f"verispec conform --engine {self.engine} --mutation {self.subject}{fixes}"
        return f"{run} --quick --design sequential{checks}"

    @property
    def options(self) -> dict[str, Any]:
        """The engine options a run of this engine-layer control takes."""
        return {"mutations": [self.subject], **({"fixes": list(self.fixes)} if self.fixes else {})}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "subject": self.subject,
            "mechanism": self.mechanism,
            "source": self.source,
            "engine": self.engine,
            "expected": list(self.caught_by),
            "hook": self.hook,
            "alongside": [seam for seam, _ in self.alongside],
            "quick_miss": self.quick_miss,
            "reproduce": self.reproduce,
        }


# ------------------------------------------------------- the reference engine's bugs


def _registered_verify(name: str, accepted: Callable[[list[int], Sequence[int]], int] | None = None) -> Any:
    """A ``verify`` hook running the registered control verifier ``name`` on sampled requests
    (greedy ones keep the correct verifier)."""

    def verify(
        p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
    ) -> tuple[list[int], int]:
        from verispec.engines.reference import verify_correctly
        from verispec.verifiers import registry

        if greedy:
            return verify_correctly(p_rows, q_rows, drafts, rand, greedy)
        block = [int(t) for t in registry.get_chain(name).verify(p_rows, q_rows, drafts, rand)]
        return block, accepted(block, drafts) if accepted else len(block) - 1

    verify.__qualname__ = f"verify_with_{name.replace('-', '_')}"
    return verify


def _always_accept(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """Every draft accepted (a uniform fixed at 0), then a bonus token from the last row."""
    from verispec.engines.reference import verify_correctly

    if greedy:
        return verify_correctly(p_rows, q_rows, drafts, rand, greedy)
    return [*drafts, rand.categorical(p_rows[len(drafts)])], len(drafts)


def _vocab_overflow(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """A correction that lands on the residual's last positive bin comes back as the id
    ``vocab_size`` (the masked tail of the last tile wins the tie-break)."""
    from verispec.engines.reference import verify_correctly

    block, accepted = verify_correctly(p_rows, q_rows, drafts, rand, greedy)
    kept = len(block) - 1
    if kept < len(drafts):
        residual = [max(a - b, 0.0) for a, b in zip(p_rows[kept], q_rows[kept], strict=True)]
        if block[-1] == max(t for t, v in enumerate(residual) if v > 0):
            block[-1] = len(p_rows[kept])
    return block, accepted


def _missing_bonus_accepted(block: list[int], drafts: Sequence[int]) -> int:
    """The engine counts every draft accepted when the block holds them all (and no bonus)."""
    return len(drafts) if block == list(drafts) else len(block) - 1


#: The top-k a candidate generator applies by default in ``raw-q-processed-draft``.
RAW_Q_TOP_K = 2


def _greedy_draft_softmax_q(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    from verispec.engines.reference import probs

    declared = probs(logits, config)
    return max(range(len(declared)), key=lambda t: (declared[t], -t)), declared


def _raw_q_processed_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts from a top-k-processed law (a default top-k in the generator), q from raw logits."""
    from verispec.engines.reference import probs

    k = min(config.top_k or len(logits), RAW_Q_TOP_K)
    return rand.categorical(probs(logits, replace(config, top_k=k))), probs(logits, config)


def _draft_temperature_ignored(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts at T=1, kept inside the declared support (so no guard trips on them)."""
    from verispec.engines.reference import probs

    declared = probs(logits, config)
    law = probs(logits, config.without_temperature())
    return rand.categorical([a if d > 0 else 0.0 for a, d in zip(law, declared, strict=True)]), declared


def _untruncated_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """Drafts from the law at the request's temperature without top-k, top-p or min-p; q
    declared with them (a draft outside the declared support can come out)."""
    from verispec.core.transforms import SamplingConfig
    from verispec.engines.reference import probs

    declared = probs(logits, config)
    if config.is_greedy:
        return rand.categorical(declared), declared
    return rand.categorical(probs(logits, SamplingConfig(config.temperature))), declared


def _verify_rejecting_impossible_drafts(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: Any, greedy: bool
) -> tuple[list[int], int]:
    """Token-level verification with vLLM's acceptance rule, ``q(x) > 0 and p(x) / q(x) >= u``:
    a draft the declared q gives 0 is rejected and the correction drawn from the residual
    (verispec's verifier raises instead). No bug while the drafts follow q."""
    from verispec.core.ops import positive_part
    from verispec.engines.reference import verify_correctly
    from verispec.verifiers.chain import acceptance_ratio

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


def _draft_probs_none(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    from verispec.engines.reference import probs

    declared = probs(logits, config)
    token = rand.categorical(declared)
    return token, [1.0 if t == token else 0.0 for t in range(len(declared))]


def _unnormalised_draft(logits: Any, config: Any, rand: Any) -> tuple[int, list[float]]:
    """exp(l / T - max) over the vocabulary size instead of over its sum: q unnormalised (each
    entry at most its normalised value, so the residual never vanishes)."""
    import torch

    from verispec.engines.reference import probs

    declared = probs(logits, config)
    token = rand.categorical(declared)
    if config.is_greedy:
        return token, declared
    scaled = logits.double() / float(config.temperature)
    raw = (torch.exp(scaled - scaled.max()) / len(declared)).tolist()
    return token, [r if d > 0 else 0.0 for r, d in zip(raw, declared, strict=True)]


def _default_params(config: Any, gamma: int) -> list[Any]:
    from verispec.core.transforms import SamplingConfig

    return [SamplingConfig()] * (gamma + 1)


def _min_p_verify_ignored(config: Any, gamma: int) -> list[Any]:
    return [replace(config, min_p=None)] * gamma + [config]


def _bonus_untruncated(config: Any, gamma: int) -> list[Any]:
    return [config] * gamma + [replace(config, top_k=None, top_p=None, min_p=None)]


def _budget_first(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    from verispec.smt import index as ix

    count = ix.wrong_truncation_budget_first(block_len, eos, budget)
    return count, eos < count


def _no_eos_crop(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    return min(block_len, budget), False


def _crop_plus_one(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    from verispec.smt import index as ix

    return {b: min(ix.wrong_crop_plus_one(L, kept[b]), lengths[b]) for b, L in starts.items()}


def _crop_no_op(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """A cache that cannot be trimmed keeps the rejected drafts."""
    return {b: lengths[b] for b in starts}


def _ragged_shared_offset(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """Every row advanced by the first live row's block."""
    from verispec.smt import index as ix

    first = kept[next(iter(kept))]
    return {b: min(ix.next_offset(L - 1, first), lengths[b]) for b, L in starts.items()}


def _kept_by_live_position(starts: Any, kept: Any, lengths: Sequence[int]) -> dict[int, int]:
    """Accepted counts stored by position among the rows still running and read back by batch
    slot: while every row runs the two agree; once a row has finished, each later row is
    cropped by the next running row's count (the last row by its own)."""
    from verispec.smt import index as ix

    live = sorted(starts)
    by_position = [kept[b] for b in live]
    return {
        b: min(ix.target_crop_length(starts[b], by_position[min(b, len(live) - 1)]), lengths[b]) for b in live
    }


def _order_by_length(live: list[int], starts: dict[int, int], outputs: list[Any]) -> list[Any]:
    """Verify rows handed back in the order of the rows' lengths, not the batch order."""
    order = sorted(live, key=lambda b: starts[b])
    routed = list(outputs)
    for b, source in zip(live, order, strict=True):
        routed[b] = outputs[source]
    return routed


def _unseeded(request: Any) -> int:
    return int(time.time_ns() % 2**31)


def _index(name: str) -> Any:
    """A wrong convention of :mod:`verispec.smt.index` (the catalog refutes it), by name."""

    def lazy(*args: Any) -> Any:
        from verispec.smt import index as ix

        return getattr(ix, name)(*args)

    lazy.__qualname__ = name
    return lazy


def _positions_by_row(parents: Any, x: Any, L: Any, max_depth: int) -> Any:
    """Tree nodes at sequential positions ``L - 1 + node`` instead of ``L - 1 + depth``."""
    from verispec.smt import index as ix

    return ix.query_position(x, L)


def _no_compaction(cache: Any, path: Sequence[int], L: int) -> None:
    """The accepted path's KV is left where the tree put it."""


# -------------------------------------------------- transformers' assisted generation


def _softmax_residual_sampling(
    candidate_input_ids: Any, candidate_logits: Any, candidate_length: int, new_logits: Any, **_: Any
) -> tuple[Any, Any]:
    """transformers' ``_speculative_sampling`` for one row, with the residual passed through
    softmax instead of divided by its sum."""
    import torch

    drafted = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    p = new_logits.softmax(dim=-1)
    rows = torch.arange(candidate_length)
    ratio = p[0, rows, drafted[0]] / q[0, rows, drafted[0]]
    accepted = torch.rand_like(ratio) <= ratio
    n = int(((~accepted).cumsum(dim=-1) < 1).sum())
    full = n == candidate_logits.shape[1]
    law = p[:, n] if full else torch.clamp(p[:, n] - q[:, n], min=0).softmax(dim=-1)  # the bug
    token = torch.multinomial(law, num_samples=1)
    return torch.cat((drafted[:, :n], token), dim=-1), torch.tensor(n)


def _patch_softmax_residual() -> None:
    import transformers.generation.utils as generation

    generation._speculative_sampling = _softmax_residual_sampling  # type: ignore[assignment]


def _patch_greedy_assistant() -> None:
    from transformers.generation.candidate_generator import AssistedCandidateGenerator

    original = AssistedCandidateGenerator.__init__

    def drafts_greedily(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.generation_config.do_sample = False  # the bug: q stays the softmax of the logits

    AssistedCandidateGenerator.__init__ = drafts_greedily  # type: ignore[method-assign]


def _patch_vllm(attribute: str, replacement: Callable[[Any], Any]) -> Callable[[], None]:
    """A patch of ``vllm.v1.sample.rejection_sampler.<attribute>`` (the speculative path's
    verification, run in the engine's process): ``replacement(original)`` is the new value."""

    def patch() -> None:
        import vllm.v1.sample.rejection_sampler as rs

        owner: Any = rs
        path = attribute.split(".")
        for part in path[:-1]:
            owner = getattr(owner, part)
        setattr(owner, path[-1], replacement(getattr(owner, path[-1])))

    return patch


def _vllm_recovered_from_target(original: Any) -> Any:
    def recovered(
        max_spec_len: int,
        num_draft_tokens: list[int],
        cu_num_draft_tokens: Any,
        draft_token_ids: Any,
        draft_probs: Any,
        target_probs: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        import torch

        # the bug: a fresh sample of the target's law, the rejected draft included
        return torch.multinomial(target_probs, 1).view(-1).to(draft_token_ids.dtype)

    return recovered


def _vllm_draft_probs_dropped(original: Any) -> Any:
    def rejection_sample(
        draft_token_ids: Any,
        num_draft_tokens: list[int],
        max_spec_len: int,
        cu_num_draft_tokens: Any,
        draft_probs: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        # the bug: the draft's probabilities lost on the way, so each sampled draft is
        # verified as a point mass
        return original(
            draft_token_ids, num_draft_tokens, max_spec_len, cu_num_draft_tokens, None, *args, **kwargs
        )

    return rejection_sample


def _vllm_zero_uniforms(original: Any) -> Any:
    def uniforms(*args: Any, **kwargs: Any) -> Any:
        # the bug: the acceptance uniforms all 0, so every draft passes its test
        return original(*args, **kwargs).zero_()

    return uniforms


def _vllm_no_constraints(original: Any) -> Any:
    return lambda logits, cu_num_draft_tokens, sampling_metadata: logits


def _vllm_no_penalties(original: Any) -> Any:
    return staticmethod(lambda logits, *args, **kwargs: logits)


# ---------------------------------------------------------------------- the records


def _penalise_greedy_only(sampling: Any, logits: Any, generated: Sequence[int], prompt: Sequence[int]) -> Any:
    return sampling.penalise(logits, generated, prompt) if sampling.greedy else logits


def _engine(
    subject: str,
    hook: str,
    replacement: Callable[..., Any],
    *,
    mechanism: str,
    source: str,
    caught_by: tuple[str, ...],
    engine: str = "reference",
    fixes: tuple[str, ...] = (),
    alongside: tuple[tuple[str, Callable[..., Any]], ...] = (),
    quick_miss: str | None = None,
) -> Mutant:
    return Mutant(
        subject,
        "engine",
        mechanism,
        source,
        engine,
        caught_by,
        hook,
        replacement,
        fixes=fixes,
        alongside=alongside,
        quick_miss=quick_miss,
    )


#: Where the index conventions the engine bugs break are stated and proved.
CONVENTIONS = "docs/explanation/index-conventions.md"
#: The seed article the resampling example comes from (its numbers: proofs/thm_three_token_example.py).
AUDIT_ARTICLE = "'Why speculative decoding preserves distributions but may not be faster', section 3"

ENGINE_MUTANTS: tuple[Mutant, ...] = (
    # the verify pass: caches, masks and positions
    _engine(
        "crop-plus-one",
        "crop",
        _crop_plus_one,
        mechanism="target cache cropped to L + accepted + 1: the rejected draft's KV stays visible",
        source=f"the crop rule, {CONVENTIONS} (verispec smt crop-plus-one refutes it)",
        caught_by=("greedy-equivalence", "cache-rollback"),
    ),
    _engine(
        "top-left-mask",
        "visible",
        _index("wrong_visible_top_left"),
        mechanism="verify pass with a top-left causal mask (SDPA is_causal on non-square inputs)",
        source="pytorch/pytorch scaled_dot_product_attention is_causal (upper-left for Sq != Sk); "
        "Dao-AILab/flash-attention before 2.1 (#517)",
        caught_by=("greedy-equivalence",),
    ),
    _engine(
        "positions-reset",
        "position",
        _index("wrong_position_reset"),
        mechanism="verify-pass positions restart at zero (RoPE off by the prefix length)",
        source="position bugs of this class: sgl-project/sglang PR #25015, "
        "huggingface/transformers PR #30068",
        caught_by=("greedy-equivalence",),
    ),
    _engine(
        "draft-no-catch-up",
        "sync",
        _index("wrong_draft_sync_no_catch_up"),
        mechanism="draft cache not caught up after full acceptance (d_gamma never fed)",
        source="vllm-project/vllm PR #9730 (draft KV after a bonus token)",
        caught_by=("acceptance-accounting",),
    ),
    # verification
    _engine(
        "resample-target",
        "verify",
        _registered_verify("resample-target"),
        mechanism="fresh target sample after a rejection instead of the residual",
        source=AUDIT_ARTICLE,
        caught_by=("sampling-law", "first-token-law"),
    ),
    _engine(
        "softmax-residual",
        "verify",
        _registered_verify("softmax-residual"),
        mechanism="softmax of clamp(p - q, 0) as the residual",
        source="huggingface/transformers PR #28508",
        caught_by=("sampling-law", "first-token-law"),
    ),
    _engine(
        "bonus-wrong-row",
        "verify",
        _registered_verify("bonus-wrong-row"),
        mechanism="bonus token drawn from the last draft position's target row",
        source="NVIDIA/TensorRT-LLM PR #15098; SafeAILab/EAGLE PR #47",
        caught_by=("sampling-law",),
    ),
    _engine(
        "missing-bonus",
        "verify",
        _registered_verify("missing-bonus", _missing_bonus_accepted),
        mechanism="no bonus token after full acceptance",
        source="the round contract, accepted + 1 tokens (Leviathan et al., ICML 2023, Algorithm 1)",
        caught_by=("acceptance-accounting",),
    ),
    # stops, budgets and ids
    _engine(
        "eos-budget-first",
        "truncate",
        _budget_first,
        mechanism="length checked before stop ids: tokens after an EOS leak",
        source="sgl-project/sglang #31599 / PR #31569",
        caught_by=("eos-length",),
    ),
    _engine(
        "no-eos-crop",
        "truncate",
        _no_eos_crop,
        mechanism="generation continues past an EOS accepted mid-block",
        source="huggingface/transformers #47912",
        caught_by=("eos-length",),
    ),
    _engine(
        "vocab-overflow",
        "verify",
        _vocab_overflow,
        mechanism="a correction id outside the vocabulary when the residual's last bin wins",
        source="vllm-project/vllm GHSA-8wr5-jm2h-8r4f",
        caught_by=("ids-in-vocab",),
    ),
    _engine(
        "unseeded",
        "seed",
        _unseeded,
        mechanism="ignores the request seed (not reproducible)",
        source="vllm-project/vllm tests/samplers/test_rejection_sampler.py test_deterministic_when_seeded",
        caught_by=("determinism",),
    ),
    # the draft law declared to the verifier
    _engine(
        "draft-temperature-ignored",
        "propose",
        _draft_temperature_ignored,
        mechanism="drafts at T=1 inside the declared support, q declared at the request's T",
        source="z-lab/dflash #74",
        caught_by=("sampling-law",),
    ),
    _engine(
        "target-default-params",
        "target_configs",
        _default_params,
        mechanism="target probabilities scored with default settings (T=1, no truncation)",
        source="vllm-project/vllm #9834 -> PR #10198",
        caught_by=("sampling-law",),
    ),
    _engine(
        "greedy-draft-softmax-q",
        "propose",
        _greedy_draft_softmax_q,
        mechanism="drafts by argmax while q is declared as the softmax",
        source="huggingface/transformers #32867 -> PR #33534",
        caught_by=("sampling-law",),
    ),
    _engine(
        "raw-q-processed-draft",
        "propose",
        _raw_q_processed_draft,
        mechanism=f"drafts sampled after a default top-k of {RAW_Q_TOP_K}, q declared from raw logits",
        source="huggingface/transformers #47932 / PR #47961",
        caught_by=("first-token-law",),
    ),
    _engine(
        "draft-probs-none",
        "propose",
        _draft_probs_none,
        mechanism="q taken as a point mass at the sampled draft (draft_probs=None)",
        source="vllm-project/vllm #40149 -> PR #40269",
        caught_by=("acceptance-accounting",),
    ),
    _engine(
        "min-p-verify-ignored",
        "target_configs",
        _min_p_verify_ignored,
        mechanism="min_p applied to the bonus row only, not to the verified rows",
        source="vllm-project/vllm #42744 -> PR #42802",
        caught_by=("sampling-law",),
    ),
    _engine(
        "always-accept",
        "verify",
        _always_accept,
        mechanism="the acceptance uniform fixed at 0: every draft accepted",
        source="vllm-project/vllm-ascend #13730",
        caught_by=("sampling-law",),
    ),
    _engine(
        "reused-uniform",
        "verify",
        _registered_verify("reused-uniform"),
        mechanism="one uniform reused for the acceptance test and the residual draw",
        source="flashinfer-ai/flashinfer PR #424",
        caught_by=("first-token-law",),
        quick_miss="it moves the first token's law by a total variation of 0.050 at the quick prompt, a "
        "quarter of the quick design's effect (0.2); the full run plans for 0.1",
    ),
    _engine(
        "unnormalised-draft",
        "propose",
        _unnormalised_draft,
        mechanism="q from draft logits without their normaliser (exp(l - max) / V)",
        source="NVIDIA/TensorRT-LLM #3125 -> PR #3278",
        caught_by=("sampling-law",),
    ),
    _engine(
        "bonus-untruncated",
        "target_configs",
        _bonus_untruncated,
        mechanism="top-k, top-p and min-p not applied to the bonus row",
        source="SafeAILab/EAGLE PR #215",
        caught_by=("cache-rollback",),
    ),
    _engine(
        "untruncated-draft",
        "propose",
        _untruncated_draft,
        mechanism="drafts sampled without top-k, top-p or min-p while q is declared with them; the "
        "verifier rejects a draft q gives 0, as vLLM's kernel does",
        source="vllm-project/vllm PR #41044 (MTP draft sampling ignored top-k and top-p) and PR #56724 "
        "(the filters applied to the draft law must be applied before the draft is sampled)",
        caught_by=("sampling-law",),
        alongside=(("verify", _verify_rejecting_impossible_drafts),),
    ),
    _engine(
        "crop-no-op",
        "crop",
        _crop_no_op,
        mechanism="the target cache is never trimmed: rejected drafts stay in it",
        source="ml-explore/mlx-lm PR #1109 (#846)",
        caught_by=("greedy-equivalence",),
    ),
    _engine(
        "penalty-ignored",
        "penalise",
        lambda sampling, logits, generated, prompt: logits,
        mechanism="the frequency penalty applied without speculation only, not on the speculative path",
        source="vllm-project/vllm #18902",
        caught_by=("penalties",),
    ),
    _engine(
        "sampled-penalty-ignored",
        "penalise",
        _penalise_greedy_only,
        mechanism="the penalties applied to greedy requests only: on the speculative path of a sampled "
        "request they are dropped (the greedy penalty tests of vLLM and transformers pass it)",
        source="TensorRT-LLM PR #17701 (penalties silently ignored in one-model speculative decoding), "
        "confined to sampled requests",
        caught_by=("sampling-law", "cache-rollback"),
    ),
    # batches with ragged acceptance
    _engine(
        "ragged-shared-offset",
        "crop",
        _ragged_shared_offset,
        mechanism="every row's cache advanced by the first row's accepted count",
        source="Blaizzy/mlx-vlm PR #1155 (#1144)",
        caught_by=("ragged-batch",),
    ),
    _engine(
        "finished-row-shift",
        "crop",
        _kept_by_live_position,
        mechanism="once a row has finished, each later row's cache is cropped by the next running row's "
        "accepted count (counts kept by position among the running rows, read by batch slot)",
        source="requests leaving a batch mid-flight (vLLM's InputBatch.condense moves rows between "
        "slots); the bookkeeping class of vllm-project/vllm PR #14645, where values read in one order "
        "were written in another",
        caught_by=("ragged-batch",),
    ),
    _engine(
        "batch-order-by-length",
        "route",
        _order_by_length,
        mechanism="verify rows matched to requests in length order, not batch order",
        source="vllm-project/vllm PR #14645",
        caught_by=("ragged-batch",),
    ),
    # tree mode
    _engine(
        "tree-sibling-visible",
        "tree_visible",
        _index("wrong_tree_visible_siblings"),
        mechanism="tree mask lets siblings attend to each other",
        source="vllm-project/vllm PR #22226 (tree attention)",
        caught_by=("greedy-equivalence",),
        engine="reference-tree",
    ),
    _engine(
        "tree-depth-mask",
        "tree_visible",
        _index("wrong_tree_position_causal"),
        mechanism="a position-causal mask used as the tree mask (depth(y) <= depth(x))",
        source=f"the ancestor mask, {CONVENTIONS} (verispec smt tree-mask-position-causal-2nodes refutes it)",
        caught_by=("greedy-equivalence",),
        engine="reference-tree",
    ),
    _engine(
        "tree-positions-by-row",
        "tree_position",
        _positions_by_row,
        mechanism="tree nodes at sequential positions L - 1 + node instead of L - 1 + depth",
        source=f"tree positions, {CONVENTIONS}; SafeAILab/EAGLE tree_position_ids",
        caught_by=("greedy-equivalence",),
        engine="reference-tree",
    ),
    _engine(
        "tree-no-compaction",
        "compact",
        _no_compaction,
        mechanism="target cache cropped to the path length without moving the accepted KV",
        source="NVIDIA/TensorRT-LLM #10343: one rewind length cannot rewind a tree",
        caught_by=("greedy-equivalence",),
        engine="reference-tree",
    ),
    # transformers' own assisted generation, patched in the engine's process
    _engine(
        "softmax-residual",
        "transformers.generation.utils._speculative_sampling",
        _patch_softmax_residual,
        mechanism="transformers' verification step with softmax(clamp(p - q, 0)) as the residual",
        source="huggingface/transformers PR #28508",
        caught_by=("sampling-law", "first-token-law"),
        engine="hf-assisted",
    ),
    _engine(
        "greedy-draft-softmax-q",
        "transformers.generation.candidate_generator.AssistedCandidateGenerator.__init__",
        _patch_greedy_assistant,
        mechanism="the assistant drafts by argmax while verification uses the softmax of its logits as q",
        source="huggingface/transformers #32867 -> PR #33534",
        caught_by=("sampling-law",),
        engine="hf-assisted",
    ),
    # vLLM's rejection sampler (CPU build), patched in the engine's process
    _engine(
        "resample-target",
        "vllm.v1.sample.rejection_sampler.sample_recovered_tokens",
        _patch_vllm("sample_recovered_tokens", _vllm_recovered_from_target),
        # not first-token-law: vLLM samples a request's first token on its prefill step, with
        # the plain sampler, before any draft exists
        mechanism="vLLM's recovered token drawn from the target's law p instead of the residual",
        source=AUDIT_ARTICLE,
        caught_by=("sampling-law",),
        engine="vllm-draft",
        fixes=("cpu-expand",),
    ),
    _engine(
        "target-default-params",
        "vllm.v1.sample.rejection_sampler.apply_sampling_constraints",
        _patch_vllm("apply_sampling_constraints", _vllm_no_constraints),
        mechanism="vLLM's draft rows verified against the target without temperature, top-k or top-p "
        "(the bonus row keeps them)",
        source="vllm-project/vllm #9834 -> PR #10198",
        caught_by=("sampling-law",),
        engine="vllm-draft",
        fixes=("cpu-expand",),
    ),
    _engine(
        "always-accept",
        "vllm.v1.sample.rejection_sampler.generate_uniform_probs",
        _patch_vllm("generate_uniform_probs", _vllm_zero_uniforms),
        mechanism="vLLM's acceptance uniforms fixed at 0: every draft accepted (the point-mass test "
        "p(x) >= u always passes)",
        source="vllm-project/vllm-ascend #13730",
        # sampling-law catches it too (docs/audits/vllm.md); the record tests the point-mass
        # accounting, and each listed check costs CI a vLLM start
        caught_by=("acceptance-accounting",),
        engine="vllm-draft",
        fixes=("cpu-expand",),
    ),
    _engine(
        "draft-probs-none",
        "vllm.v1.sample.rejection_sampler.rejection_sample",
        _patch_vllm("rejection_sample", _vllm_draft_probs_dropped),
        mechanism="vLLM's sampled drafts verified as point masses (draft_probs=None reaches the "
        "rejection sampler)",
        source="vllm-project/vllm #40149 -> PR #40269",
        caught_by=("acceptance-accounting",),
        engine="vllm-draft-probs",
        fixes=("cpu-expand",),
    ),
    _engine(
        "penalty-ignored",
        "vllm.v1.sample.rejection_sampler.RejectionSampler.apply_penalties",
        _patch_vllm("RejectionSampler.apply_penalties", _vllm_no_penalties),
        mechanism="vLLM's draft rows verified without the frequency penalty (the bonus row keeps it)",
        source="vllm-project/vllm #18902",
        caught_by=("penalties",),
        engine="vllm-draft",
        fixes=("cpu-expand",),
    ),
)


def quick_blind_spots(checks: Sequence[str]) -> list[Mutant]:
    """The catalog's engine bugs that ``checks`` must catch and whose records say the quick
    sizes cannot see them: what a quick run of those checks is blind to."""
    return [m for m in ENGINE_MUTANTS if m.quick_miss and set(m.caught_by) & set(checks)]


def engine_mutants(engine: str | None = None) -> list[Mutant]:
    """The engine layer's records, all of them or those of one built-in engine."""
    return [m for m in ENGINE_MUTANTS if engine is None or m.engine == engine]


def plant(engine: str, mutations: Sequence[str]) -> Any:
    """Plant the named bugs in ``engine``: for a reference engine, the
    :class:`~verispec.engines.reference.Hooks` with their replacements swapped in (two bugs
    on one seam cannot be combined); for another engine, its patches applied in this process
    (returns ``None``)."""
    mine = {m.subject: m for m in engine_mutants(engine)}
    chosen = []
    for name in mutations:
        if name not in mine:
            elsewhere = sorted({m.engine or "" for m in ENGINE_MUTANTS if m.subject == name})
            if elsewhere:
                raise UsageError(
                    f"mutation={name!r} applies to the {' and '.join(elsewhere)} engine only, not {engine!r}"
                )
            raise unknown_name("mutation", name, mine)
        chosen.append(mine[name])
    if engine in REFERENCE_ENGINES:
        from verispec.engines.reference import with_hooks

        seams: dict[str, Any] = {}
        for m in chosen:
            for seam, replacement in m.seams.items():
                if seam in seams:
                    raise UsageError(
                        f"mutations {list(mutations)} replace the same hook {seam!r}; plant one of them"
                    )
                seams[seam] = replacement
        return with_hooks(**seams)
    for m in chosen:
        assert m.replacement is not None
        m.replacement()
    return None


def _verifier_mutants() -> list[Mutant]:
    from verispec.verifiers import registry

    return [Mutant(v.name, "verifier", v.summary, v.source) for v in registry.verifiers("control")]


def _index_mutants() -> list[Mutant]:
    from verispec.smt.catalog import CATALOG
    from verispec.verdicts import VerdictKind

    return [
        Mutant(e.name, "index", e.convention, e.source) for e in CATALOG if e.expected == VerdictKind.REFUTED
    ]


def catalog(layers: Sequence[Layer] = LAYERS) -> list[Mutant]:
    """Every planted bug of the given layers, verifier layer first."""
    for layer in layers:
        if layer not in LAYERS:
            raise UsageError(f"layer={layer!r} is not one of {', '.join(LAYERS)}")
    found: list[Mutant] = []
    if "verifier" in layers:
        found += _verifier_mutants()
    if "engine" in layers:
        found += engine_mutants()
    if "index" in layers:
        found += _index_mutants()
    return found


def for_engine(mutants: list[Mutant], engine: str | None) -> list[Mutant]:
    """``mutants`` with only the engine-layer ones of ``engine`` (all of them for ``None``)."""
    if engine is None:
        return mutants
    engines = sorted({m.engine or "" for m in mutants if m.layer == "engine"})
    if engine not in engines:
        raise UsageError(f"engine={engine!r} has no controls; engine controls exist for {engines}")
    return [m for m in mutants if m.layer != "engine" or m.engine == engine]


def find(name: str) -> Mutant:
    """A planted bug by its full name (``engine:crop-plus-one``) or by its subject alone."""
    mutants = catalog()
    by_name = {m.name: m for m in mutants}
    if name in by_name:
        return by_name[name]
    matches = [m for m in mutants if m.subject == name]
    if len(matches) == 1:
        return matches[0]
    raise unknown_name("control", name, by_name)
