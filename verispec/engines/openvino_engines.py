"""OpenVINO GenAI's speculative decoding as built-in engines (``verispec[openvino]``).

Each engine runs OpenVINO GenAI's continuous-batching pipeline on the float32 OpenVINO folders
of the pair (:func:`verispec.engines.openvino_files.openvino_pair`) on the CPU, with float32
inference and a float32 KV cache (``INFERENCE_PRECISION_HINT``, ``KV_CACHE_PRECISION``; no
dynamic quantisation). Read for 2026.4.1; docs/audits/openvino.md has the lines.

* ``openvino-lookup``: prompt lookup (``prompt_lookup=True``; ``max_ngram_size``,
  ``num_assistant_tokens``). It verifies by sample-and-match: the main model samples each
  position from the request's random stream (``rng_seed``) and a candidate is accepted when
  it equals the sample; one draw per committed token (``seeded-equivalence``).
* ``openvino-draft``: a draft model (``draft_model=``), the continuous-batching speculative
  pipeline. Its verification at T > 0 is not rejection sampling (docs/audits/openvino.md,
  finding 1: sampling-law catches it), and a rejected last draft makes the next step read a
  token id past the end of the sequence (finding 2: determinism catches it). A request with a
  ``bigram`` script (``bigram-drafts``) drafts with verispec's bigram draft model instead, on a
  pipeline of its own per table (:mod:`verispec.engines.bigram`), for ``cache-rollback``.

Every path runs on the continuous-batching pipeline (``ContinuousBatchingPipeline``: each
request with its own settings and seed, stepped by the scheduler, so a batch of requests runs
together and each step's tokens are read as they commit). The scheduler caches prefixes, as
``LLMPipeline``'s default does; then a sampled draft-model request fails an internal check
(``content_length <= prompt_ids.size() + m_generated_ids.size()``, openvino.genai #4190) and
the pipeline then stops speculating; ``fixes=("no-prefix-caching",)`` (``--fix``) turns
prefix caching off to test the rest. The adapter builds the pipeline again after any
failure, so one failed request does not leave the next one without speculation, and a
draft-model request that drafted nothing fails with that reason.

The sampler (``logit_processor.hpp``) applies the repetition penalty over the prompt and the
output (transformers' rule), then top-k, the temperature, min-p without renormalising, and
top-p: min-p before top-p is not the protocol's order, and its presence and frequency
penalties move a logit toward zero rather than down, so those three settings are declared
unsupported. Top-k commutes with the temperature, so the order is otherwise the protocol's.

The baseline (``target-logits``, and ``draft-model``) is a transformers forward pass on the
checkpoints the folders were written from; at start the adapter runs each OpenVINO model
through OpenVINO's runtime on a probe and refuses to run when its logits differ from the
baseline's by more than :data:`LOGIT_TOLERANCE`. The pipeline's paged attention itself
exposes no logits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verispec.engines.bigram import Drafters, bigram_model
from verispec.engines.model_pairs import cache_dir, load_pair, write_once
from verispec.engines.openvino_files import openvino_pair, write_llama_openvino
from verispec.engines.protocol import Completion, Request, RoundStat, probe_sequence, refuse_unsupported
from verispec.engines.registry import builtin_engine
from verispec.engines.torchlm import along
from verispec.errors import UsageError

__all__ = ["FIXES", "LOGIT_TOLERANCE", "ORDER", "UNSUPPORTED", "OpenVinoEngine", "make_openvino"]

#: The largest difference allowed between OpenVINO's logits and the transformers baseline's on
#: the same float32 weights, over a probe sequence (logit units).
LOGIT_TOLERANCE = 1e-3
#: Top-k, then the temperature, then the other truncations (top-k commutes with the temperature).
ORDER = "temperature-first"
#: Sampling settings the engine cannot take as the protocol defines them, with the reason.
UNSUPPORTED: dict[str, str] = {
    "min_p": "OpenVINO GenAI applies min-p before top-p and without renormalising "
    "(logit_processor.hpp), not after top-p as the protocol does",
    "frequency_penalty": "OpenVINO GenAI's frequency penalty moves a logit toward zero (a negative logit "
    "is raised), where the protocol lowers it",
    "presence_penalty": "OpenVINO GenAI's presence penalty moves a logit toward zero (a negative logit "
    "is raised), where the protocol lowers it",
}
#: float32 inference and KV cache, no dynamic quantisation (set on the target and the draft:
#: the draft's properties replace the target's rather than adding to them)
PRECISION = {
    "INFERENCE_PRECISION_HINT": "f32",
    "KV_CACHE_PRECISION": "f32",
    "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0,
}
#: The n-gram size prompt lookup matches.
NGRAM_SIZE = 2
#: Tokens a draft-model request emits after which it has certainly drafted.
MIN_DRAFTED = 3
#: The known engine bugs' workarounds (``--fix``).
FIXES = {
    "no-prefix-caching": "the scheduler's prefix caching off: with it on, a sampled speculative request "
    "fails openvino.genai's content_length check (#4190) and the pipeline stops speculating",
}

METHODS = {"openvino-lookup": "lookup", "openvino-draft": "draft"}
_COMMON = ("target-logits", "non-speculative", "seeded", "penalties", "token-times", "batch")


class OpenVinoEngine:
    """One OpenVINO GenAI speculative method on a model pair."""

    def __init__(
        self, name: str, method: str, pair: Any, folder: Any, *, gamma: int = 3, fixes: Sequence[str] = ()
    ) -> None:
        import openvino_genai as og  # deferred: optional

        self.og = og
        self.name = name
        self.method = method
        self.gamma = gamma
        self.fixes = tuple(fixes)
        self.pair = pair
        self.target = pair.target
        self.vocab_size = pair.vocab_size
        self.folder = folder
        #: set by the registry that builds it (declared on ``@builtin_engine``)
        self.capabilities: frozenset[str] = frozenset()
        self.unsupported = dict(UNSUPPORTED)
        self.sampling_order = ORDER
        #: the prompt's step commits one token without drafts (a bigram request runs alone on
        #: its table's pipeline, so its prompt is deferred only past 256 tokens)
        self.drafting_lead = 1
        self.prompts = list(pair.prompts)
        self.prompt_kinds = list(pair.prompt_kinds)
        self.baseline_gap, self.logit_noise = self._compare_baseline(folder / "target", self.target, "target")
        self.draft_gap = (
            self._compare_baseline(folder / "draft", pair.draft, "draft")[0] if method == "draft" else None
        )
        self.plain = self._pipeline(speculative=False)
        self.speculative = self._pipeline(speculative=True)
        self._bigrams = Drafters(self.vocab_size, keep=2)
        version = og.__version__ if hasattr(og, "__version__") else "?"
        scheduler = "prefix caching off (fix no-prefix-caching)" if self.fixes else "the default scheduler"
        self.notes = [
            f"openvino-genai {version} {method} (up to {gamma} drafts), float32 weights, inference and KV "
            f"cache, {scheduler}; baseline: transformers on the checkpoint the OpenVINO model was written "
            f"from, largest logit gap {self.baseline_gap:.2e} through OpenVINO's runtime (tolerance "
            f"{LOGIT_TOLERANCE:g}); logits of one batch against one token at a time: largest gap "
            f"{self.logit_noise:.2e}"
            + (
                ""
                if self.draft_gap is None
                else f"; the draft model's largest logit gap {self.draft_gap:.2e}"
            )
        ]

    # ----------------------------------------------------------------- pipelines
    def _pipeline(self, *, speculative: bool, draft: Path | None = None) -> Any:
        og = self.og
        properties: dict[str, Any] = dict(PRECISION)
        scheduler = og.SchedulerConfig()
        # LLMPipeline's own default (the scheduler most users get) caches prefixes
        scheduler.enable_prefix_caching = "no-prefix-caching" not in self.fixes
        if speculative and self.method == "draft":
            properties["draft_model"] = og.draft_model(
                str(draft or self.folder / "draft"), "CPU", **PRECISION
            )
        elif speculative:
            properties["prompt_lookup"] = True
        try:
            return og.ContinuousBatchingPipeline(str(self.folder / "target"), scheduler, "CPU", properties)
        except RuntimeError as exc:
            raise UsageError(f"OpenVINO GenAI refused to load {self.folder}: {exc}") from None

    # ----------------------------------------------------------------- baseline
    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.target, prompt, tokens)

    def draft_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.pair.draft, prompt, tokens)

    def _compare_baseline(self, folder: Any, baseline: Any, role: str) -> tuple[float, float]:
        """The largest gap between the OpenVINO model in ``folder`` along a probe sequence fed
        one token at a time (through OpenVINO's runtime) and the transformers ``baseline``
        (over :data:`LOGIT_TOLERANCE` the baseline is not this engine's model), and the largest
        gap between its logits of the probe fed in one batch and one token at a time."""
        import numpy as np  # deferred: heavy
        import openvino  # deferred: optional

        probe = probe_sequence(self.prompts, self.vocab_size)
        compiled = openvino.Core().compile_model(str(folder / "openvino_model.xml"), "CPU", PRECISION)
        request = compiled.create_infer_request()

        def run(ids: list[int], past: int) -> Any:
            feed = {
                "input_ids": np.asarray([ids], dtype=np.int64),
                "attention_mask": np.ones((1, past + len(ids)), dtype=np.int64),
                "position_ids": np.arange(past, past + len(ids), dtype=np.int64)[None],
                "beam_idx": np.zeros(1, dtype=np.int32),
            }
            return np.asarray(request.infer(feed)["logits"][0], dtype=np.float64)

        request.reset_state()
        batched = run(probe, 0)
        request.reset_state()
        alone = np.concatenate([run([token], i) for i, token in enumerate(probe)])
        theirs = np.asarray(along(baseline, probe[:1], probe[1:]), dtype=np.float64)
        gap = float(np.max(np.abs(alone[:-1] - theirs)))
        if not gap <= LOGIT_TOLERANCE:
            raise UsageError(
                f"{self.name}: OpenVINO's {role} logits differ from the transformers baseline by {gap:.3g} "
                f"(tolerance {LOGIT_TOLERANCE:g}): the OpenVINO model is not the baseline's model"
            )
        return gap, float(np.max(np.abs(batched - alone)))

    # ----------------------------------------------------------------- generate
    def _bigram_pipeline(self, script: dict[str, Any]) -> tuple[str, Any]:
        """The speculative pipeline whose draft is verispec's bigram with ``script``'s table
        (``bigram-drafts``), written as an OpenVINO folder once per table; the last few are kept."""

        def build(successors: dict[int, int], default: int, name: str) -> Any:
            folder = cache_dir() / "openvino-bigram" / name
            model = bigram_model(successors, default, self.target.config)
            write_once(folder, lambda out: write_llama_openvino(model, out, name="bigram draft"))
            return self._pipeline(speculative=True, draft=folder)

        return self._bigrams.get(script, build)

    def generate(self, requests: list[Request]) -> list[Completion]:
        """Run ``requests`` together, speculative ones and plain ones each on their pipeline
        (a request with a bigram script on the pipeline of its table), stepping the scheduler
        and reading each request's tokens after every step."""
        groups: dict[Any, list[int]] = {}
        for i, r in enumerate(requests):
            script = r.script or {}
            bigram = r.speculative and self.method == "draft" and script.get("kind") == "bigram"
            key = json.dumps(script, sort_keys=True) if bigram else r.speculative
            groups.setdefault(key, []).append(i)
        out: dict[int, Completion] = {}
        for key, chosen in groups.items():
            batch = [requests[i] for i in chosen]
            if isinstance(key, str):
                name, pipeline = self._bigram_pipeline(json.loads(key))
                try:
                    completions = self._batch(batch, True, pipeline)
                except RuntimeError:
                    self._bigrams.drop(name)
                    raise
            else:
                completions = self._batch(batch, key)
            out.update(zip(chosen, completions, strict=True))
        return [out[i] for i in range(len(requests))]

    def _config(self, request: Request) -> Any:
        s = request.sampling
        refuse_unsupported(self.name, self.unsupported, s)
        config = self.og.GenerationConfig()
        config.max_new_tokens = request.max_new_tokens
        config.rng_seed = request.seed
        config.repetition_penalty = s.repetition_penalty
        config.do_sample = not s.greedy
        if not s.greedy:
            config.temperature = s.temperature
            if s.top_k is not None:
                config.top_k = s.top_k
            if s.top_p is not None:
                config.top_p = s.top_p
        if request.stop_ids:
            config.eos_token_id = request.stop_ids[0]
            config.stop_token_ids = set(request.stop_ids)
        else:
            config.ignore_eos = True
        if request.speculative:
            config.num_assistant_tokens = self.gamma
            if self.method == "lookup":
                config.max_ngram_size = NGRAM_SIZE
        return config

    def _batch(self, requests: list[Request], speculative: bool, pipeline: Any = None) -> list[Completion]:
        import numpy as np  # deferred: heavy
        import openvino  # deferred: optional

        configs = [self._config(r) for r in requests]
        own = pipeline is None
        if pipeline is None:
            pipeline = self.speculative if speculative else self.plain
        tokens: list[list[int]] = [[] for _ in requests]
        steps: list[list[int]] = [[] for _ in requests]
        times: list[list[float]] = [[] for _ in requests]
        try:
            handles = [
                pipeline.add_request(i, openvino.Tensor(np.asarray([r.prompt], dtype=np.int64)), config)
                for i, (r, config) in enumerate(zip(requests, configs, strict=True))
            ]
            start = time.perf_counter()
            while pipeline.has_non_finished_requests():
                pipeline.step()
                now = time.perf_counter() - start
                for i, handle in enumerate(handles):
                    if not handle.can_read():
                        continue
                    new = [int(t) for output in handle.read().values() for t in output.generated_ids]
                    if new:
                        tokens[i] += new
                        steps[i].append(len(new))
                        times[i] += [now] * len(new)
        except RuntimeError:
            # the pipeline may go on without speculation after a failure: build it again (a
            # bigram pipeline is dropped by its caller)
            if own and speculative:
                self.speculative = self._pipeline(speculative=True)
            elif own:
                self.plain = self._pipeline(speculative=False)
            raise
        return [
            self._completion(r, t, n, ts, speculative)
            for r, t, n, ts in zip(requests, tokens, steps, times, strict=True)
        ]

    def _completion(
        self, request: Request, tokens: list[int], steps: list[int], times: list[float], speculative: bool
    ) -> Completion:
        """One request's completion from its tokens and how many each step committed. The
        first step is the prompt's and is never listed as a round: it commits one token without
        drafts, except for a prompt the scheduler deferred, which the draft pipeline prefills
        first and then proposes one token at (audit finding 1), and step counts cannot tell
        that round's rejection from a plain prompt step. A draft-model step after it is a
        round (the draft proposes every step): its tokens are the accepted drafts and one more.
        Prompt lookup proposes only where an n-gram matches, which the pipeline does not
        report: only the steps that committed more than one token are certainly rounds, and
        only those are listed (so ``openvino-lookup`` does not declare ``round-stats``)."""
        rounds = None
        if speculative:
            rounds = []
            start = len(request.prompt) + (steps[0] if steps else 0)
            for committed in steps[1:]:
                if self.method == "draft" or committed > 1:
                    rounds.append(RoundStat(start, committed - 1, committed))
                start += committed
            if self.method == "draft" and len(tokens) >= MIN_DRAFTED and not rounds:
                raise UsageError(
                    f"{self.name}: OpenVINO GenAI drafted nothing over {len(tokens)} tokens: speculation is "
                    "off, so this would test the plain sampler"
                )
        stopped = bool(tokens) and tokens[-1] in request.stop_ids
        return Completion(tokens, "stop" if stopped else "length", rounds=rounds, token_times=times)


@builtin_engine(
    "openvino-draft",
    summary="OpenVINO GenAI with a draft model (continuous-batching speculative pipeline)",
    extra="openvino",
    capabilities=(*_COMMON, "draft-model", "round-stats", "bigram-drafts"),
    variant="openvino-draft",
)
@builtin_engine(
    "openvino-lookup",
    summary="OpenVINO GenAI prompt lookup; sample-and-match verification",
    extra="openvino",
    capabilities=(*_COMMON, "seeded-equivalence"),
    variant="openvino-lookup",
)
def make_openvino(
    *,
    variant: str = "openvino-lookup",
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    target: str | None = None,
    draft: str | None = None,
    fixes: Sequence[str] = (),
) -> OpenVinoEngine:
    """An OpenVINO GenAI speculative method on the pair ``size`` (or the checkpoints
    ``target``/``draft``), with the workarounds ``fixes`` (:data:`FIXES`)."""
    for fix in fixes:
        if fix not in FIXES:
            raise UsageError(f"fix={fix!r} is not one of {', '.join(FIXES)}")
    target_dir, _ = openvino_pair(size, seed=seed, target=target, draft=draft)
    pair = load_pair(size, seed=seed, target=target, draft=draft)
    engine = OpenVinoEngine(variant, METHODS[variant], pair, target_dir.parent, gamma=gamma, fixes=fixes)
    if fixes:
        engine.name += f"+fix[{','.join(sorted(fixes))}]"
    return engine
