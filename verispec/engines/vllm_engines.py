"""vLLM's speculative methods as built-in engines, through its CPU build (``verispec[vllm]``).

Each engine starts one ``vllm.LLM`` in the engine worker's process (the engine core runs in
that process: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``), on float32 checkpoints of the model pair
(:func:`verispec.engines.model_pairs.checkpoint_dirs`), with ``skip_tokenizer_init=True`` and
prompt token ids. The rejection sampler under test is vLLM's own: on CPU its Triton kernels are
replaced by vLLM's CPU implementations (``vllm/platforms/cpu.py``).

* ``vllm-draft``: ``method="draft_model"``, the draft drafts by argmax (vLLM's default
  ``draft_sample_method="greedy"``) and the rejection sampler gets no draft law: a point mass.
* ``vllm-draft-probs``: the same with ``draft_sample_method="probabilistic"``: the draft
  samples at the request's temperature and hands its probabilities to the rejection sampler.
* ``vllm-ngram``: ``method="ngram"`` (prompt lookup), point-mass drafts.
* ``vllm-suffix``: ``method="suffix"`` (suffix decoding, Arctic Inference's suffix trees over the
  prompt and past responses), point-mass drafts of varying length; needs ``arctic_inference``,
  built from its source (docs/reference/vllm.md).
* ``vllm-scripted``: ``method="custom_class"`` with :class:`~verispec.engines.vllm_proposer.ScriptedProposer`,
  which puts the first rejection at a scripted position (see there for what vLLM allows).

Requests run step by step through vLLM's engine (what ``LLM.generate`` does), so each token's
time is noted as it comes out (``token-times``). ``Request(speculative=False)`` runs on a second
``vllm.LLM`` in the same process with the same checkpoint and settings and no speculative config
(``non-speculative``), started at the first such request: vLLM cannot turn speculation off per
request. ``verispec serve`` times the two against each other; ``greedy-equivalence`` compares
them.

The baseline (``target-logits``) is a plain transformers forward pass on the same checkpoint;
at start the adapter compares it with vLLM's own prompt log-probabilities on a probe and
refuses to run when they differ by more than :data:`LOGPROB_TOLERANCE`.

What the speculative path takes of a request's settings (read from vLLM 0.32 source):
temperature, top-k, top-p, the per-request seed (the rejection sampler's uniforms and the
recovered and bonus tokens) and frequency, presence and repetition penalties; min-p and
logit bias are refused with speculation on (``SamplingParams._validate_spec_decode``). The
probabilistic draft uses the temperature only and ignores the seed (vLLM's own TODO in
``compute_probs_and_sample_next_token``). Those the engine cannot take are declared in
:data:`UNSUPPORTED` and the checks leave them out, saying why.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verispec.engines import registry, vllm_proposer
from verispec.engines.bugs import AUDIT_ARTICLE, planted_bug
from verispec.engines.model_pairs import checkpoint_dirs, load_pair
from verispec.engines.protocol import Completion, Request, RoundStat, probe_sequence, refuse_unsupported
from verispec.engines.registry import builtin_engine
from verispec.engines.scripted import impossible_token
from verispec.engines.torchlm import along
from verispec.errors import UsageError
from verispec.verdicts import Evidence

__all__ = ["LOGPROB_TOLERANCE", "UNSUPPORTED", "VLLMEngine", "make_vllm"]

#: The largest difference (nats) allowed between vLLM's prompt log-probabilities and the
#: transformers baseline on the same float32 weights, over the probe's top tokens.
LOGPROB_TOLERANCE = 1e-3

#: Sampling settings vLLM's speculative path does not take, with the reason.
UNSUPPORTED: dict[str, str] = {
    "min_p": "vLLM refuses min_p with speculative decoding ('The min_p and logit_bias sampling parameters "
    "are not yet supported with speculative decoding', SamplingParams._validate_spec_decode)",
    "top_k": "vLLM's CPU build crashes on every speculative step with top-k and no drafts in the batch "
    "(the prefill step included): apply_top_k_only calls k.max() on an empty tensor "
    "(docs/audits/vllm.md, 'top-k crash', has the three-line reproduction)",
}

#: KV cache reserved per engine (bytes): the models are small; vLLM's default takes most of RAM.
KV_CACHE_BYTES = 1 << 28
#: Tokens a request emits after which a draft method has certainly proposed drafts.
MIN_DRAFTED = 3
MAX_MODEL_LEN = 1024

METHODS = {
    "vllm-draft": "draft_model",
    "vllm-draft-probs": "draft_model",
    "vllm-ngram": "ngram",
    "vllm-suffix": "suffix",
    "vllm-scripted": "custom_class",
}

_COMMON = ("target-logits", "seeded", "batch", "penalties", "round-stats", "non-speculative", "token-times")

#: The rounds vLLM's scheduler verified during the current ``generate`` call, by vLLM's
#: internal request id (filled by :func:`record_rounds`).
ROUNDS: dict[str, list[RoundStat]] = {}


def record_rounds() -> None:
    """Wrap vLLM's ``Scheduler.update_from_output`` (once per process) so that every step
    that verified drafts leaves a round in :data:`ROUNDS`: the request's committed length
    before the step, the drafts the scheduler sent to verification, and the tokens the step
    committed (accepted drafts + 1). The record is the scheduler's own view, the same one
    vLLM's spec-decode counters are built from (``VLLMEngine._check_counters`` holds them
    to each other)."""
    from vllm.v1.core.sched.scheduler import Scheduler  # deferred: optional

    original = Scheduler.update_from_output
    if getattr(original, "verispec_records", False):
        return

    def update_from_output(self: Any, scheduler_output: Any, model_runner_output: Any) -> Any:
        sampled = model_runner_output.sampled_token_ids
        index = model_runner_output.req_id_to_index
        for req_id, drafts in (scheduler_output.scheduled_spec_decode_tokens or {}).items():
            request = self.requests.get(req_id)
            if request is None or not drafts or not sampled or req_id not in index:
                continue
            committed = len(sampled[index[req_id]])
            if committed:
                ROUNDS.setdefault(req_id, []).append(
                    RoundStat(request.num_tokens, committed - 1, committed, tuple(int(t) for t in drafts))
                )
        return original(self, scheduler_output, model_runner_output)

    update_from_output.verispec_records = True  # type: ignore[attr-defined]
    Scheduler.update_from_output = update_from_output


class VLLMEngine:
    """One vLLM speculative method on a model pair."""

    def __init__(
        self,
        name: str,
        method: str,
        pair: Any,
        target_dir: Path,
        draft_dir: Path,
        *,
        gamma: int = 3,
        seed: int = 0,
        speculative: dict[str, Any] | None = None,
    ) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        # vLLM itself under test, without the plugins installed beside it (Arctic Inference,
        # which suffix decoding needs, registers one that patches vLLM); a user's own list wins
        os.environ.setdefault("VLLM_PLUGINS", "")
        import torch  # deferred: heavy
        from vllm import LLM  # deferred: optional

        self.torch = torch
        self.name = name
        self.method = method
        self.gamma = gamma
        self.pair = pair
        self.target = pair.target
        self.vocab_size = pair.vocab_size
        #: set by the registry that builds it (declared on ``@builtin_engine``)
        self.capabilities: frozenset[str] = frozenset()
        self.unsupported = dict(UNSUPPORTED)
        self.prompts = list(pair.prompts)
        self.prompt_kinds = list(pair.prompt_kinds)
        record_rounds()
        config: dict[str, Any] = {"method": method, "num_speculative_tokens": gamma, **(speculative or {})}
        if method == "draft_model":
            config["model"] = str(draft_dir)
        #: vLLM's settings but for speculation, which the non-speculative engine shares
        self._settings: dict[str, Any] = {
            "model": str(target_dir),
            "skip_tokenizer_init": True,
            "dtype": "float32",
            "max_model_len": MAX_MODEL_LEN,
            "seed": seed,
            "enforce_eager": True,
            "kv_cache_memory_bytes": KV_CACHE_BYTES,
            "gpu_memory_utilization": 0.2,
            "max_logprobs": 20,
        }
        self._plain_llm: Any = None  # started at the first non-speculative request
        self._request_ids = itertools.count()
        try:
            self.llm = LLM(**self._settings, speculative_config=config, disable_log_stats=False)
        except (ValueError, RuntimeError, NotImplementedError) as exc:
            raise UsageError(f"vLLM refused to start {name} on {target_dir}: {exc}") from None
        self.baseline_gap = self._compare_baseline()
        self.notes = [
            f"vLLM {self._version()} {method} (gamma {gamma}); baseline: transformers on the same float32 "
            f"checkpoint, largest gap to vLLM's prompt log-probabilities {self.baseline_gap:.2e} nats "
            f"(tolerance {LOGPROB_TOLERANCE:g})"
        ]

    @staticmethod
    def _version() -> str:
        import vllm  # deferred: optional

        return str(vllm.__version__)

    # ----------------------------------------------------------------- baseline
    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.target, prompt, tokens)

    def draft_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.pair.draft, prompt, tokens)

    def _compare_baseline(self) -> float:
        """The largest gap between vLLM's prompt log-probabilities and the baseline's on a
        probe sequence; over :data:`LOGPROB_TOLERANCE` the baseline is not this engine's model."""
        from vllm import SamplingParams  # deferred: optional
        from vllm.inputs import TokensPrompt  # deferred: optional

        torch = self.torch
        probe = probe_sequence(self.prompts, self.vocab_size)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=20, detokenize=False)
        try:  # the first forward pass: where vLLM refuses a shape its kernels lack
            out = self.llm.generate([TokensPrompt(prompt_token_ids=probe)], params, use_tqdm=False)[0]
        except RuntimeError as exc:
            raise UsageError(f"vLLM cannot run {self.name} on this model: {exc}") from None
        logits = self.target_logits_along(probe[:1], probe[1:])
        ours = torch.log_softmax(torch.as_tensor(logits, dtype=torch.float64), dim=-1)
        gap = 0.0
        for i, entry in enumerate(out.prompt_logprobs[1:]):
            for token, lp in (entry or {}).items():
                gap = max(gap, abs(float(lp.logprob) - float(ours[i, int(token)])))
        if gap > LOGPROB_TOLERANCE:
            raise UsageError(
                f"{self.name}: the transformers baseline differs from vLLM's prompt log-probabilities by "
                f"{gap:.3g} nats (tolerance {LOGPROB_TOLERANCE:g}): the baseline is not this engine's model"
            )
        return gap

    # ----------------------------------------------------------------- generate
    def _params(self, request: Request) -> Any:
        from vllm import SamplingParams  # deferred: optional

        s = request.sampling
        refuse_unsupported(self.name, self.unsupported, s)
        return SamplingParams(
            n=1,
            max_tokens=request.max_new_tokens,
            temperature=0.0 if s.greedy else s.temperature,
            top_k=0 if s.top_k is None else s.top_k,
            top_p=1.0 if s.top_p is None else s.top_p,
            frequency_penalty=s.frequency_penalty,
            presence_penalty=s.presence_penalty,
            repetition_penalty=s.repetition_penalty,
            seed=request.seed,
            stop_token_ids=list(request.stop_ids),
            ignore_eos=True,
            detokenize=False,
        )

    def generate(self, requests: list[Request]) -> list[Completion]:
        """The speculative requests on the speculative engine, the others on the same model
        with speculation off (a second ``vllm.LLM``, vLLM cannot turn it off per request)."""
        out: list[Completion | None] = [None] * len(requests)
        for speculative in (True, False):
            indices = [i for i, r in enumerate(requests) if r.speculative == speculative]
            if indices:
                batch = [requests[i] for i in indices]
                completions = self._speculative(batch) if speculative else self._plain(batch)
                for i, completion in zip(indices, completions, strict=True):
                    out[i] = completion
        return [c for c in out if c is not None]

    def _speculative(self, requests: list[Request]) -> list[Completion]:
        before = self.counters()
        ROUNDS.clear()
        streamed = self._stream(self.llm, requests)
        rounds: dict[str, list[RoundStat]] = {}
        for internal, recorded in ROUNDS.items():
            rounds.setdefault(internal.rsplit("-", 1)[0], []).extend(recorded)
        completions = [self._completion(o, times, rounds.get(o.request_id, [])) for o, times in streamed]
        self._check_counters(before, completions)
        self._require_drafts(before, requests, completions)
        return completions

    def _plain(self, requests: list[Request]) -> list[Completion]:
        """Token by token: the same checkpoint and settings, no speculative config. Its stats
        stay off: a second engine's stat logger would unregister the first one's counters."""
        if self._plain_llm is None:
            self._plain_llm = _second_llm(self._settings)
        return [self._completion(o, times, None) for o, times in self._stream(self._plain_llm, requests)]

    def _stream(self, llm: Any, requests: list[Request]) -> list[tuple[Any, list[float]]]:
        """Run ``requests`` to completion step by step through vLLM's engine (what
        ``LLM.generate`` does), noting when each token comes out: the stream a server sends."""
        from vllm.inputs import TokensPrompt  # deferred: optional

        engine = llm.llm_engine
        params = [self._params(r) for r in requests]  # refuses an unsupported setting before any runs
        start = time.perf_counter()
        ids = [f"v{next(self._request_ids)}" for _ in requests]  # no '-': internal ids append one
        for request_id, r, p in zip(ids, requests, params, strict=True):
            engine.add_request(request_id, TokensPrompt(prompt_token_ids=list(r.prompt)), p)
        times: dict[str, list[float]] = {i: [] for i in ids}
        finished: dict[str, Any] = {}
        while engine.has_unfinished_requests():
            for out in engine.step():
                now = time.perf_counter() - start
                seen = times[out.request_id]
                seen += [now] * (len(out.outputs[0].token_ids) - len(seen))
                if out.finished:
                    finished[out.request_id] = out
        return [(finished[i], times[i]) for i in ids]

    @staticmethod
    def _completion(out: Any, times: list[float], rounds: list[RoundStat] | None) -> Completion:
        tokens = [int(t) for t in out.outputs[0].token_ids]
        stopped = out.outputs[0].finish_reason == "stop"
        return Completion(tokens, "stop" if stopped else "length", rounds=rounds, token_times=times)

    def _check_counters(self, before: dict[str, Any], completions: list[Completion]) -> None:
        """The rounds recorded from the scheduler must add up to vLLM's own spec-decode
        counters over the call (drafts, draft tokens, accepted tokens); if they do not, the
        record (or vLLM's accounting) is wrong and no check may read it."""
        after = self.counters()
        rounds = [r for c in completions for r in c.rounds or []]
        recorded = {
            "num_drafts": len(rounds),
            "num_draft_tokens": sum(len(r.drafts) for r in rounds),
            "num_accepted_tokens": sum(r.accepted for r in rounds),
        }
        counted = {key: after.get(key, 0) - before.get(key, 0) for key in recorded}
        if counted != recorded:
            raise RuntimeError(
                f"{self.name}: the rounds recorded from vLLM's scheduler ({recorded}) do not add up to "
                f"vLLM's spec-decode counters over the same call ({counted})"
            )

    def counters(self) -> dict[str, Any]:
        """vLLM's spec-decode counters (cumulative): drafts, draft tokens, accepted tokens and
        accepted tokens per position."""
        out: dict[str, Any] = {}
        for metric in self.llm.get_metrics():
            if metric.name.startswith("vllm:spec_decode_"):
                key = metric.name.removeprefix("vllm:spec_decode_")
                out[key] = list(metric.values) if hasattr(metric, "values") else metric.value
        return out

    def _require_drafts(
        self, before: dict[str, Any], requests: list[Request], completions: list[Completion]
    ) -> None:
        """A draft method that proposed nothing while a request decoded several tokens has
        silently turned speculation off (the drafter proposes after every step from the
        first token on): fail rather than test the plain sampler."""
        if self.method in ("ngram", "suffix"):
            return  # prompt lookup and suffix trees propose only where the text repeats
        if max((len(c.tokens) for c in completions), default=0) < MIN_DRAFTED:
            return
        after = self.counters()
        if after.get("num_drafts", 0) == before.get("num_drafts", 0):
            raise UsageError(
                f"{self.name}: vLLM's counters show no drafts over {len(requests)} requests: "
                "speculation is off, so this would test the plain sampler"
            )


def _second_llm(settings: dict[str, Any]) -> Any:
    """A second ``vllm.LLM`` in this process, without speculation and without stats (a second
    stat logger unregisters the first engine's counters).

    vLLM's CPU worker registers its kernel overrides at every start, scanning every loaded
    module; once llvmlite is loaded (numba, which the n-gram proposer imports) the scan fails
    (``'_lib_fn_wrapper' object has no attribute 'get'``: docs/audits/vllm.md, finding 7). The
    first engine registered the overrides for the whole process, so the second skips it."""
    from vllm import LLM  # deferred: optional
    from vllm.platforms import current_platform  # deferred: optional

    platform = type(current_platform)
    name = "register_triton_kernel_overrides"
    original = platform.__dict__.get(name)
    if original is not None:
        setattr(platform, name, classmethod(lambda cls: None))
    try:
        return LLM(**settings, disable_log_stats=True)
    finally:
        if original is not None:
            setattr(platform, name, original)


class VLLMScriptedEngine(VLLMEngine):
    """``vllm-scripted``: scripted drafts through a custom proposer."""

    def generate(self, requests: list[Request]) -> list[Completion]:
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(repr((r.script, r.sampling)), []).append(i)
        out: list[Completion | None] = [None] * len(requests)
        for indices in groups.values():
            first = requests[indices[0]]
            vllm_proposer.STATE.update(
                script=first.script,
                logits=lambda ids: self.target_logits_along(ids[:1], [*ids[1:], 0])[-1],
                impossible=lambda logits, ids, r=first: self._impossible(logits, ids, r),
            )
            batch = [requests[i] for i in indices]
            for i, completion in zip(indices, VLLMEngine.generate(self, batch), strict=True):
                out[i] = completion
        return [c for c in out if c is not None]

    def _require_drafts(
        self, before: dict[str, Any], requests: list[Request], completions: list[Completion]
    ) -> None:
        if requests[0].script:
            super()._require_drafts(before, requests, completions)

    @staticmethod
    def _impossible(logits: Any, ids: tuple[int, ...], request: Request) -> int | None:
        return impossible_token(logits, ids, request)


def fix_cpu_expand() -> None:
    """Patch vLLM's CPU ``expand_kernel`` override to write into its output (the fix of the bug
    in docs/audits/vllm.md, 'uninitialised sampling parameters'), so that the rest of the
    speculative path can be tested. Applied only when asked (``fixes=("cpu-expand",)``)."""
    import torch  # deferred: heavy
    import vllm.utils.cpu_triton_utils as cpu  # deferred: optional

    def expand(
        output: Any, input_val: Any, cu_num_tokens: Any, replace_from: Any, replace_to: Any, *_: Any
    ) -> None:
        ends = cu_num_tokens
        counts = (ends - torch.cat([ends.new_zeros(1), ends[:-1]])).long()
        to = torch.as_tensor(replace_to, dtype=input_val.dtype)
        replaced = torch.where(input_val == replace_from, to, input_val)
        output.copy_(torch.repeat_interleave(replaced, counts, output_size=output.numel()))

    cpu._expand_kernel_impl = expand


#: Fixes of vLLM bugs a run may apply in the engine's process (``--fix NAME``), to test the rest.
FIXES = {"cpu-expand": fix_cpu_expand}


# ------------------------------------------------------------------------------ planted bugs
# Each bug is a patch of vLLM's rejection sampler (the speculative path's verification),
# applied in the engine's process only; every method shares the ``vllm-draft`` records.

_SAMPLER = "vllm.v1.sample.rejection_sampler"


def _patch(attribute: str) -> Callable[[Callable[[Any], Any]], Callable[[], None]]:
    """Turn ``replacement(original) -> new value`` into a patch of ``<_SAMPLER>.<attribute>``."""

    def decorate(replacement: Callable[[Any], Any]) -> Callable[[], None]:
        def patch() -> None:
            import vllm.v1.sample.rejection_sampler as rs  # deferred: optional

            owner: Any = rs
            path = attribute.split(".")
            for part in path[:-1]:
                owner = getattr(owner, part)
            setattr(owner, path[-1], replacement(getattr(owner, path[-1])))

        patch.__qualname__ = f"patch_{replacement.__name__.lstrip('_')}"
        return patch

    return decorate


@planted_bug(
    "resample-target",
    engine="vllm-draft",
    seam=f"{_SAMPLER}.sample_recovered_tokens",
    # not first-token-law: vLLM samples a request's first token on its prefill step, with the
    # plain sampler, before any draft exists
    mechanism="vLLM's recovered token drawn from the target's law p instead of the residual",
    source=AUDIT_ARTICLE,
    caught_by={"sampling-law": Evidence.STATISTIC},
    fixes=("cpu-expand",),
)
@_patch("sample_recovered_tokens")
def _recovered_from_target(original: Any) -> Any:
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
        import torch  # deferred: heavy

        # the bug: a fresh sample of the target's law, the rejected draft included
        return torch.multinomial(target_probs, 1).view(-1).to(draft_token_ids.dtype)

    return recovered


@planted_bug(
    "target-default-params",
    engine="vllm-draft",
    seam=f"{_SAMPLER}.apply_sampling_constraints",
    mechanism="vLLM's draft rows verified against the target without temperature, top-k or top-p "
    "(the bonus row keeps them)",
    source="vllm-project/vllm #9834 -> PR #10198",
    caught_by={"sampling-law": Evidence.IMPOSSIBLE},
    fixes=("cpu-expand",),
)
@_patch("apply_sampling_constraints")
def _no_constraints(original: Any) -> Any:
    return lambda logits, cu_num_draft_tokens, sampling_metadata: logits


@planted_bug(
    "always-accept",
    engine="vllm-draft",
    seam=f"{_SAMPLER}.generate_uniform_probs",
    mechanism="vLLM's acceptance uniforms fixed at 0: every draft accepted (the point-mass test "
    "p(x) >= u always passes)",
    source="vllm-project/vllm-ascend #13730",
    # sampling-law catches it too (docs/audits/vllm.md); the record tests the point-mass
    # accounting, and each listed check costs CI a vLLM start
    caught_by={"acceptance-accounting": Evidence.STATISTIC},
    fixes=("cpu-expand",),
)
@_patch("generate_uniform_probs")
def _zero_uniforms(original: Any) -> Any:
    def uniforms(*args: Any, **kwargs: Any) -> Any:
        # the bug: the acceptance uniforms all 0, so every draft passes its test
        return original(*args, **kwargs).zero_()

    return uniforms


@planted_bug(
    "draft-probs-none",
    engine="vllm-draft-probs",
    seam=f"{_SAMPLER}.rejection_sample",
    mechanism="vLLM's sampled drafts verified as point masses (draft_probs=None reaches the "
    "rejection sampler)",
    source="vllm-project/vllm #40149 -> PR #40269",
    caught_by={"acceptance-accounting": Evidence.STATISTIC},
    fixes=("cpu-expand",),
)
@_patch("rejection_sample")
def _draft_probs_dropped(original: Any) -> Any:
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


@planted_bug(
    "penalty-ignored",
    engine="vllm-draft",
    seam=f"{_SAMPLER}.RejectionSampler.apply_penalties",
    mechanism="vLLM's draft rows verified without the frequency penalty (the bonus row keeps it)",
    source="vllm-project/vllm #18902",
    caught_by={"penalties": Evidence.MISMATCH},
    fixes=("cpu-expand",),
)
@_patch("RejectionSampler.apply_penalties")
def _no_penalties(original: Any) -> Any:
    return staticmethod(lambda logits, *args, **kwargs: logits)


@builtin_engine(
    "vllm-scripted",
    summary="vLLM (CPU build) with verispec's custom proposer: the first rejection at a scripted position",
    extra="vllm",
    capabilities=(*_COMMON, "scripted-drafts", "point-mass-drafts"),
    mutants_of="vllm-draft",
    variant="vllm-scripted",
    speculative={"model": "verispec.engines.vllm_proposer.ScriptedProposer"},
)
@builtin_engine(
    "vllm-suffix",
    summary="vLLM (CPU build) suffix decoding (method suffix, Arctic Inference); point-mass q",
    extra="vllm-suffix",
    capabilities=(*_COMMON, "point-mass-drafts"),
    mutants_of="vllm-draft",
    variant="vllm-suffix",
)
@builtin_engine(
    "vllm-ngram",
    summary="vLLM (CPU build) prompt lookup (method ngram); point-mass q",
    extra="vllm",
    capabilities=(*_COMMON, "point-mass-drafts"),
    mutants_of="vllm-draft",
    variant="vllm-ngram",
    speculative={"prompt_lookup_max": 3, "prompt_lookup_min": 1},
)
@builtin_engine(
    "vllm-draft-probs",
    summary="vLLM (CPU build) with a draft model that samples its drafts and hands their law on",
    extra="vllm",
    capabilities=(*_COMMON, "draft-model"),
    mutants_of="vllm-draft",
    variant="vllm-draft-probs",
    speculative={"draft_sample_method": "probabilistic"},
)
@builtin_engine(
    "vllm-draft",
    summary="vLLM (CPU build) with a draft model; argmax drafts, point-mass q",
    extra="vllm",
    capabilities=(*_COMMON, "draft-model", "point-mass-drafts"),
    variant="vllm-draft",
)
def make_vllm(
    *,
    variant: str = "vllm-draft",
    size: str = "ci-wide",
    seed: int = 0,
    gamma: int = 3,
    target: str | None = None,
    draft: str | None = None,
    speculative: dict[str, Any] | None = None,
    mutations: Sequence[str] = (),
    fixes: Sequence[str] = (),
) -> VLLMEngine:
    """A vLLM speculative method on the pair ``size`` (or the checkpoints ``target``/``draft``),
    with the planted bugs ``mutations`` patched into vLLM in this process."""
    # every method shares vLLM's rejection sampler (the vllm-draft records); a method's own
    # records, and any name unknown to it, go to the method (which refuses it by name)
    shared = {b.name for b in registry.bugs("vllm-draft")}
    chosen = registry.planted(variant, [m for m in mutations if m not in shared])
    for bug in chosen + registry.planted("vllm-draft", [m for m in mutations if m in shared]):
        bug.replacement()
    for fix in fixes:
        if fix not in FIXES:
            raise UsageError(f"fix={fix!r} is not one of {', '.join(FIXES)}")
        FIXES[fix]()
    target_dir, draft_dir = checkpoint_dirs(size, seed=seed, target=target, draft=draft)
    pair = load_pair(size, seed=seed, target=target, draft=draft)
    cls = VLLMScriptedEngine if variant == "vllm-scripted" else VLLMEngine
    engine = cls(
        variant,
        METHODS[variant],
        pair,
        target_dir,
        draft_dir,
        gamma=gamma,
        seed=seed,
        speculative=speculative,
    )
    if mutations:
        engine.name += f"[{','.join(sorted(mutations))}]"
    if fixes:
        engine.name += f"+fix[{','.join(sorted(fixes))}]"
    return engine
