"""llama.cpp's speculative decoding as built-in engines, through ``llama-cpp-python``
(``verispec[llama-cpp]``).

Each engine loads one ``llama_cpp.Llama`` on the float32 GGUF file of the pair's target
(:func:`verispec.engines.gguf_files.gguf_pair`), with a float32 KV cache and flash attention
off, and hands it a draft model (``Llama(draft_model=...)``). ``Llama.generate`` then runs
llama.cpp's speculative loop (``llama_cpp/llama.py``, read for 0.3.36): each round evaluates
the last token and the drafts in one batch, samples the target's token at each position with
the request's sampler chain, commits it, and stops at the first sample that differs from
the draft (cropping the KV cache there). That is sample-and-match verification: a draft is
accepted with probability ``p(draft)`` and the law is the target's, one sampler draw per
committed token, the same draws as the non-speculative path (``seeded-equivalence``).

* ``llamacpp-lookup``: ``LlamaPromptLookupDecoding`` (prompt lookup, llama-cpp-python's own
  drafter), up to ``gamma`` drafts copied from the context.
* ``llamacpp-scripted``: a ``LlamaDraftModel`` of verispec's that drafts by the request's
  script (:func:`verispec.engines.scripted.scripted_drafts`).

Both record each drafter call (the committed context and the drafts) and derive the rounds
from them and the committed tokens (``round-stats``). ``Request(speculative=False)`` runs the
same ``Llama`` with its draft model unset (``non-speculative``). The baseline
(``target-logits``) is a plain transformers forward pass on the checkpoint the GGUF file was
written from; at start the adapter compares it with llama.cpp's own logits on a probe and
refuses to run when they differ by more than :data:`LOGIT_TOLERANCE`.

llama.cpp's sampler chain (``Llama._init_sampler``) is penalties, top-k, typical, top-p,
min-p, temperature, then the draw: the truncations act on the untempered law
(``sampling_order = "truncation-first"``), the engine's documented order, which the baseline
follows. Its repetition penalty counts the generated tokens only (the chain never sees the
prompt), so it is declared unsupported; the frequency and presence penalties match the
protocol's over the last 64 tokens, longer than any request here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from verispec.engines import registry
from verispec.engines.bugs import planted_bug
from verispec.engines.gguf_files import gguf_pair
from verispec.engines.model_pairs import load_pair
from verispec.engines.protocol import Completion, Request, RoundStat, probe_sequence, refuse_unsupported
from verispec.engines.registry import builtin_engine
from verispec.engines.scripted import impossible_token, scripted_drafts
from verispec.engines.torchlm import along
from verispec.errors import UsageError
from verispec.verdicts import Evidence

__all__ = ["LOGIT_TOLERANCE", "ORDER", "UNSUPPORTED", "LlamaCppEngine", "make_llama_cpp"]

#: The largest difference allowed between llama.cpp's logits and the transformers baseline's
#: on the same float32 weights, over a probe sequence (logit units).
LOGIT_TOLERANCE = 1e-3
#: llama.cpp's sampler chain truncates before it applies the temperature.
ORDER = "truncation-first"
#: Sampling settings the engine cannot take as the protocol defines them, with the reason.
UNSUPPORTED: dict[str, str] = {
    "repetition_penalty": "llama-cpp-python's penalty sampler counts the generated tokens only: the prompt "
    "is never fed to it (Llama._init_sampler, Llama.generate), while the protocol's repetition penalty "
    "also covers the prompt",
}
#: The context the engine reserves (tokens): prompts and outputs here are far shorter.
N_CTX = 1024
#: Tokens a request emits after which a scripted drafter has certainly been called.
MIN_DRAFTED = 3
#: ``Llama``'s penalty window (``last_n_tokens_size``): penalties count at most this many tokens.
PENALTY_WINDOW = 64

METHODS = {"llamacpp-lookup": "lookup", "llamacpp-scripted": "scripted"}
_COMMON = (
    "target-logits",
    "non-speculative",
    "seeded",
    "seeded-equivalence",
    "round-stats",
    "point-mass-drafts",
    "penalties",
    "token-times",
)


class _Drafter:
    """llama-cpp-python's draft-model hook (``LlamaDraftModel``): called with the committed
    ids each round, it answers the drafts; every call is recorded for the rounds."""

    def __init__(self, propose: Any) -> None:
        self.propose = propose
        self.calls: list[tuple[int, tuple[int, ...]]] = []

    def __call__(self, input_ids: Any, /, **kwargs: Any) -> Any:
        import numpy as np  # deferred: heavy

        drafts = np.asarray(self.propose(input_ids), dtype=np.intc)
        self.calls.append((len(input_ids), tuple(int(t) for t in drafts)))
        return drafts


def rounds_from_calls(
    calls: Sequence[tuple[int, tuple[int, ...]]], prompt_length: int, tokens: Sequence[int]
) -> list[RoundStat]:
    """The rounds of one request from its drafter calls (the committed length and the drafts)
    and its committed tokens: a round accepts the drafts its committed tokens repeat, then
    commits one more (the target's own sample), unless the request ended first."""
    rounds = []
    for start, drafts in calls:
        if not drafts:
            continue
        after = list(tokens[start - prompt_length :])
        accepted = 0
        while accepted < len(drafts) and accepted < len(after) and after[accepted] == drafts[accepted]:
            accepted += 1
        committed = min(accepted + 1, len(after))
        if committed:
            rounds.append(RoundStat(start, min(accepted, committed), committed, drafts))
    return rounds


class LlamaCppEngine:
    """One llama.cpp speculative method on a model pair."""

    def __init__(
        self, name: str, method: str, pair: Any, target_gguf: Any, *, gamma: int = 3, seed: int = 0
    ) -> None:
        import llama_cpp  # deferred: optional

        self.name = name
        self.method = method
        self.gamma = gamma
        self.pair = pair
        self.target = pair.target
        self.vocab_size = pair.vocab_size
        #: set by the registry that builds it (declared on ``@builtin_engine``)
        self.capabilities: frozenset[str] = frozenset()
        self.unsupported = dict(UNSUPPORTED)
        self.sampling_order = ORDER
        self.prompts = list(pair.prompts)
        self.prompt_kinds = list(pair.prompt_kinds)
        self._request: Request | None = None
        self.drafter = _Drafter(self._propose_lookup() if method == "lookup" else self._propose_scripted)
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(target_gguf),
                n_ctx=N_CTX,
                # with a draft model llama-cpp-python keeps every row's logits, but sizes the
                # buffer by this argument: left False it overflows past n_batch tokens
                logits_all=True,
                seed=seed,
                draft_model=self.drafter,
                type_k=llama_cpp.GGML_TYPE_F32,
                type_v=llama_cpp.GGML_TYPE_F32,
                flash_attn=False,
                last_n_tokens_size=PENALTY_WINDOW,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise UsageError(f"llama.cpp refused to load {target_gguf}: {exc}") from None
        if int(self.llm.n_vocab()) != self.vocab_size:
            raise UsageError(
                f"{name}: llama.cpp reads {self.llm.n_vocab()} tokens from {target_gguf}, "
                f"the baseline has {self.vocab_size}"
            )
        self.baseline_gap, self.logit_noise = self._compare_baseline()
        self.notes = [
            f"llama-cpp-python {llama_cpp.__version__} {method} (gamma {gamma}), float32 weights and KV "
            f"cache; baseline: transformers on the checkpoint the GGUF file was written from, largest "
            f"logit gap {self.baseline_gap:.2e} (tolerance {LOGIT_TOLERANCE:g}); logits of one batch against "
            f"one token at a time: largest gap {self.logit_noise:.2e}; sampling order: truncation, then "
            "temperature"
        ]

    # ----------------------------------------------------------------- drafters
    def _propose_lookup(self) -> Any:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding  # deferred: optional

        return LlamaPromptLookupDecoding(max_ngram_size=3, num_pred_tokens=self.gamma)

    def _propose_scripted(self, input_ids: Any) -> list[int]:
        request = self._request
        if request is None:
            return []
        return scripted_drafts(
            request.script,
            self.gamma,
            tuple(int(t) for t in input_ids),
            lambda ids: self.target_logits_along(ids[:1], [*ids[1:], 0])[-1],
            lambda logits, ids: impossible_token(logits, ids, request, ORDER),
        )

    # ----------------------------------------------------------------- baseline
    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.target, prompt, tokens)

    def draft_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.pair.draft, prompt, tokens)

    def _compare_baseline(self) -> tuple[float, float]:
        """The largest gap between llama.cpp's logits along a probe sequence and the baseline's
        (over :data:`LOGIT_TOLERANCE` the baseline is not this engine's model), and the largest
        gap between llama.cpp's logits of the probe evaluated in one batch (as a verify pass
        evaluates drafts) and one token at a time (as plain decoding does): the engine's own
        numerical noise (``logit_noise``)."""
        import numpy as np  # deferred: heavy

        probe = probe_sequence(self.prompts, self.vocab_size)
        self.llm.reset()
        self.llm.eval(probe)
        batched = np.asarray(self.llm.scores[: len(probe) - 1], dtype=np.float64)
        self.llm.reset()
        for token in probe:
            self.llm.eval([token])
        alone = np.asarray(self.llm.scores[: len(probe) - 1], dtype=np.float64)
        self.llm.reset()
        theirs = np.asarray(self.target_logits_along(probe[:1], probe[1:]), dtype=np.float64)
        gap = float(np.max(np.abs(alone - theirs)))
        if not gap <= LOGIT_TOLERANCE:
            raise UsageError(
                f"{self.name}: llama.cpp's logits differ from the transformers baseline by {gap:.3g} "
                f"(tolerance {LOGIT_TOLERANCE:g}): the GGUF file is not the baseline's model"
            )
        return gap, float(np.max(np.abs(batched - alone)))

    # ----------------------------------------------------------------- generate
    def generate(self, requests: list[Request]) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _one(self, request: Request) -> Completion:
        s = request.sampling
        refuse_unsupported(self.name, self.unsupported, s)
        self.drafter.calls.clear()
        self._request = request
        self.llm.draft_model = self.drafter if request.speculative else None
        self.llm.set_seed(request.seed)
        tokens: list[int] = []
        times: list[float] = []
        stopped = False
        start = time.perf_counter()
        stream = self.llm.generate(
            list(request.prompt),
            temp=0.0 if s.greedy else s.temperature,
            top_k=0 if s.top_k is None else s.top_k,
            top_p=1.0 if s.top_p is None else s.top_p,
            min_p=0.0 if s.min_p is None else s.min_p,
            typical_p=1.0,
            repeat_penalty=1.0,
            frequency_penalty=s.frequency_penalty,
            presence_penalty=s.presence_penalty,
            reset=True,
        )
        try:
            for token in stream:
                tokens.append(int(token))
                times.append(time.perf_counter() - start)
                if int(token) in request.stop_ids:
                    stopped = True
                    break
                if len(tokens) >= request.max_new_tokens:
                    break
        finally:
            stream.close()
            self.llm.draft_model = self.drafter
            self._request = None
        rounds = (
            rounds_from_calls(self.drafter.calls, len(request.prompt), tokens)
            if request.speculative
            else None
        )
        self._require_drafts(request, tokens)
        return Completion(tokens, "stop" if stopped else "length", rounds=rounds, token_times=times)

    def _require_drafts(self, request: Request, tokens: list[int]) -> None:
        """A scripted request that decoded several tokens without one drafter call has turned
        speculation off: fail rather than test the plain sampler."""
        if request.speculative and request.script and len(tokens) >= MIN_DRAFTED and not self.drafter.calls:
            raise UsageError(
                f"{self.name}: llama.cpp never called the draft model over {len(tokens)} tokens: "
                "speculation is off, so this would test the plain sampler"
            )


# ------------------------------------------------------------------------------ planted bugs
@planted_bug(
    "penalty-sees-drafts",
    engine="llamacpp-lookup",
    seam="llama_cpp.llama.Llama._init_sampler",
    mechanism="the frequency and presence penalties are applied by a logits processor, which "
    "llama-cpp-python hands the whole evaluated batch: while a draft position is verified, the "
    "drafts after it, not yet committed, are counted as generated tokens",
    source="llama-cpp-python 0.3.36 passes every logits processor self._input_ids, which holds the "
    "verify batch's uncommitted drafts (Llama._init_sampler; docs/audits/llama-cpp.md, finding 2)",
    caught_by={"seeded-equivalence": Evidence.MISMATCH, "penalties": Evidence.MISMATCH},
)
def _penalty_sees_drafts() -> None:
    import numpy as np  # deferred: heavy
    from llama_cpp import llama  # deferred: optional

    init_sampler, generate = llama.Llama._init_sampler, llama.Llama.generate

    def generate_(self: Any, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
        self.verispec_prompt = len(tokens)  # the penalties count the generated tokens only
        return generate(self, tokens, *args, **kwargs)

    def init_sampler_(self: Any, *args: Any, **kwargs: Any) -> Any:
        frequency = kwargs.pop("frequency_penalty", 0.0)
        presence = kwargs.pop("presence_penalty", 0.0)
        if not (frequency or presence):
            return init_sampler(self, *args, **kwargs)

        def penalise(ids: Any, logits: Any) -> Any:
            # the bug: ``ids`` is the evaluated batch, drafts after this position included
            generated = np.asarray(ids[getattr(self, "verispec_prompt", len(ids)) :], dtype=np.int64)
            counts = np.bincount(generated, minlength=len(logits))[: len(logits)]
            return logits - frequency * counts - presence * (counts > 0)

        kwargs["logits_processor"] = [penalise, *(kwargs.get("logits_processor") or [])]
        return init_sampler(self, *args, **kwargs)

    llama.Llama.generate = generate_
    llama.Llama._init_sampler = init_sampler_


@planted_bug(
    "verify-row-shift",
    engine="llamacpp-lookup",
    seam="llama_cpp.llama.Llama.sample",
    mechanism="llama.cpp's verification samples each draft position from the logits row one position "
    "later (the row after the draft); the last row, all that plain decoding reads, stays right",
    source="the row-index slip in llama-cpp-python 0.3.36's Llama.generate, whose stopping criteria read "
    "self._scores[sample_idx - self.n_tokens] after the increment (docs/audits/llama-cpp.md)",
    caught_by={"seeded-equivalence": Evidence.MISMATCH, "sampling-law": Evidence.IMPOSSIBLE},
)
def _verify_row_shift() -> None:
    from llama_cpp import llama  # deferred: optional

    original = llama.Llama.sample

    def sample(self: Any, *args: Any, idx: int | None = None, **kwargs: Any) -> Any:
        if idx is not None and idx + 1 < self.n_tokens:
            idx += 1  # the bug: the next position's row
        return original(self, *args, idx=idx, **kwargs)

    llama.Llama.sample = sample


@builtin_engine(
    "llamacpp-scripted",
    summary="llama.cpp (llama-cpp-python) with verispec's draft model: the first rejection at a "
    "scripted position",
    extra="llama-cpp",
    capabilities=(*_COMMON, "scripted-drafts"),
    mutants_of="llamacpp-lookup",
    variant="llamacpp-scripted",
)
@builtin_engine(
    "llamacpp-lookup",
    summary="llama.cpp (llama-cpp-python) prompt lookup; sample-and-match verification",
    extra="llama-cpp",
    capabilities=_COMMON,
    variant="llamacpp-lookup",
)
def make_llama_cpp(
    *,
    variant: str = "llamacpp-lookup",
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    target: str | None = None,
    draft: str | None = None,
    mutations: Sequence[str] = (),
) -> LlamaCppEngine:
    """A llama.cpp speculative method on the pair ``size`` (or the checkpoints
    ``target``/``draft``), with the planted bugs ``mutations`` patched in this process."""
    for bug in registry.planted("llamacpp-lookup", mutations):
        bug.replacement()
    target_gguf, _ = gguf_pair(size, seed=seed, target=target, draft=draft)
    pair = load_pair(size, seed=seed, target=target, draft=draft)
    engine = LlamaCppEngine(variant, METHODS[variant], pair, target_gguf, gamma=gamma, seed=seed)
    if mutations:
        engine.name += f"[{','.join(sorted(mutations))}]"
    return engine
