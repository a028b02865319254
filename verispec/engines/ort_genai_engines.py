"""ONNX Runtime GenAI's speculative decoding as built-in engines (``verispec[onnxruntime-genai]``).

Each engine loads ``onnxruntime_genai.Model`` on the float32 ONNX folders of the pair
(:func:`verispec.engines.onnx_files.onnx_pair`, the engine's own model builder at ``-p fp32
-e cpu``: float32 weights and KV cache) and decodes one request at a time with an
``onnxruntime_genai.Generator`` (read for 0.18.0; docs/audits/onnxruntime-genai.md has the
lines):

* ``ortgenai-ngram``: the generator's n-gram speculation (``set_speculative_options(ngram_size,
  max_draft_tokens)``), drafts copied from the context. It verifies by sample-and-match
  (``VerifyDeterministicProposal``): each position's token is the target's own sample, drawn
  from the request's random stream, and a draft is accepted when it equals it; one draw per
  committed token, the same draws as the plain path (``seeded-equivalence``).
* ``ortgenai-draft``: the draft model as ``model.draft`` of the configuration beside the two
  folders. It verifies by rejection sampling: a draft ``x`` is accepted with probability
  ``min(1, p(x)/q(x))``, a rejection resamples from the normalised ``max(0, p - q)``, and a
  fully accepted round draws a bonus token; ``p`` and ``q`` both under the request's settings.

On a CPU the engine cannot take drafts from outside: ``Request.set_draft_tokens`` belongs to
its continuous-batching ``Engine``, which needs a model built with paged attention, and the
builder writes that for CUDA and WebGPU only. So no ``scripted-drafts``; the draft method
takes verispec's bigram draft model as ``model.draft`` instead (``bigram-drafts``: a request
with a ``bigram`` script runs on a configuration of its own per table, the bigram built once by
the engine's builder; :mod:`verispec.engines.bigram`). Speculation refuses batches
(``batch_size > 1``), so no ``batch``.

The generator stops at the model's end-of-sequence id and does not append it; the protocol's
requests stop at their own ``stop_ids`` only. The adapter hands the end-of-sequence token out,
and unless the request stops there, appends it and decodes on: the target's law after it is
what the baseline conditions on, and on both paths the same draws follow. A round in which
the engine ended its request that way is recorded as such (``RoundStat.ended``).

``Completion.rounds`` come from the generator's own counters (``get_speculative_stats``), read
after each step: a step that starts a round reports its accepted drafts; the round commits
them and one more token. The drafts themselves are not reported, only how many were proposed
(``RoundStat.proposed``).

The baseline (``target-logits``, and ``draft-model`` for the draft's law) is a transformers
forward pass on the checkpoints the ONNX folders were built from; at start the adapter
compares it with the engine's own logits on a probe and refuses to run when they differ by
more than :data:`LOGIT_TOLERANCE`.

The sampler applies the repetition penalty (transformers' rule, over the prompt and the
output), then top-k, the temperature and top-p (``sampling_distribution.h``): top-k does not
depend on the temperature, so the order is the protocol's (``temperature-first``). It has no
min-p and no frequency or presence penalty; those are declared unsupported.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verispec.engines.bigram import Drafters, bigram_checkpoint
from verispec.engines.model_pairs import cache_dir, load_pair, write_once
from verispec.engines.onnx_files import build_onnx, onnx_pair, write_speculative_config
from verispec.engines.protocol import Completion, Request, RoundStat, probe_sequence, refuse_unsupported
from verispec.engines.registry import builtin_engine
from verispec.engines.torchlm import along
from verispec.errors import UsageError

__all__ = ["LOGIT_TOLERANCE", "ORDER", "UNSUPPORTED", "OrtGenaiEngine", "make_ort_genai"]

#: The largest difference allowed between the engine's logits and the transformers baseline's
#: on the same float32 weights, over a probe sequence (logit units).
LOGIT_TOLERANCE = 1e-3
#: The engine's sampler applies the temperature before top-k and top-p.
ORDER = "temperature-first"
#: Sampling settings the engine cannot take as the protocol defines them, with the reason.
UNSUPPORTED: dict[str, str] = {
    "min_p": "onnxruntime-genai's search options have no min-p",
    "frequency_penalty": "onnxruntime-genai's search options have no frequency penalty",
    "presence_penalty": "onnxruntime-genai's search options have no presence penalty",
}
#: The n-gram size the drafter matches (the engine takes 2 and more).
NGRAM_SIZE = 2
#: The speculative counters read after each step, as deltas.
_COUNTERS = ("rounds", "draft_tokens_proposed", "draft_tokens_accepted")

METHODS = {"ortgenai-ngram": "ngram", "ortgenai-draft": "draft"}
_COMMON = ("target-logits", "non-speculative", "seeded", "round-stats", "penalties", "token-times")


def rounds_from_counters(
    steps: Sequence[tuple[int, dict[str, float]]], n_tokens: int, resumed: Sequence[int] = ()
) -> list[RoundStat]:
    """The rounds of one request from the counter deltas after each step (the committed
    length before the step and ``rounds``, ``draft_tokens_proposed`` and
    ``draft_tokens_accepted`` deltas): a step whose ``rounds`` grew starts a round that commits
    its accepted drafts and one more token, fewer when the request ended first, or when the
    engine ended it at its end-of-sequence id and the adapter resumed it at a committed length
    in ``resumed`` (``RoundStat.ended``)."""
    out = []
    end = steps[0][0] + n_tokens if steps else 0
    for start, delta in steps:
        if delta.get("rounds", 0) < 1:
            continue
        accepted = int(delta.get("draft_tokens_accepted", 0))
        cut = min((r for r in resumed if r > start), default=end)
        committed = min(accepted + 1, cut - start)
        if committed > 0:
            proposed = int(delta.get("draft_tokens_proposed", 0))
            ended = cut < end and committed < accepted + 1
            out.append(RoundStat(start, min(accepted, committed), committed, proposed=proposed, ended=ended))
    return out


class OrtGenaiEngine:
    """One ONNX Runtime GenAI speculative method on a model pair."""

    def __init__(self, name: str, method: str, pair: Any, folder: Any, *, gamma: int = 3) -> None:
        import onnxruntime_genai as og  # deferred: optional

        self.og = og
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
        self.folder = folder
        self._bigrams = Drafters(self.vocab_size, keep=2)
        model_dir = folder / "target"
        try:
            self.model = og.Model(str(model_dir))
            # the draft method speculates with the configuration that names both models
            self.speculative_model = og.Model(str(folder)) if method == "draft" else self.model
            config = json.loads((model_dir / "genai_config.json").read_text())["model"]
        except (RuntimeError, OSError, KeyError, ValueError) as exc:
            raise UsageError(f"onnxruntime-genai refused to load {folder}: {exc}") from None
        if int(config["vocab_size"]) != self.vocab_size:
            raise UsageError(
                f"{name}: onnxruntime-genai reads {config['vocab_size']} tokens from {model_dir}, "
                f"the baseline has {self.vocab_size}"
            )
        eos = config.get("eos_token_id")
        self.eos = {int(t) for t in (eos if isinstance(eos, list) else [eos])}
        self.baseline_gap, self.logit_noise = self._compare_baseline(self.model, self.target)
        #: the draft model's largest logit gap to its baseline (the draft method only)
        self.draft_gap = (
            self._compare_baseline(og.Model(str(folder / "draft")), pair.draft, "draft")[0]
            if method == "draft"
            else None
        )
        version = getattr(og, "__version__", "?")
        drafter = f"n-gram size {NGRAM_SIZE}" if method == "ngram" else "draft model"
        self.notes = [
            f"onnxruntime-genai {version} {method} ({drafter}, up to {gamma} drafts), float32 "
            f"weights and KV cache (model builder -p fp32 -e cpu); baseline: transformers on the checkpoint "
            f"the ONNX model was built from, largest logit gap {self.baseline_gap:.2e} (tolerance "
            f"{LOGIT_TOLERANCE:g}); logits of one batch against one token at a time: largest gap "
            f"{self.logit_noise:.2e}; sampling order: temperature, then truncation"
            + (
                ""
                if self.draft_gap is None
                else f"; the draft model's largest logit gap {self.draft_gap:.2e}"
            )
        ]

    # ----------------------------------------------------------------- baseline
    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.target, prompt, tokens)

    def draft_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.pair.draft, prompt, tokens)

    def _bigram_model(self, script: dict[str, Any]) -> Any:
        """The speculative configuration whose draft is verispec's bigram with ``script``'s
        table (``bigram-drafts``): the bigram built once per table by the engine's builder,
        beside a link to the target's folder; the last few are kept loaded."""

        def build(successors: dict[int, int], default: int, name: str) -> Any:
            folder = cache_dir() / "onnx-bigram" / f"{self.folder.name}-{name}"

            def write(out: Path) -> None:
                source = bigram_checkpoint(successors, default, self.target.config, cache_dir() / "bigram")
                build_onnx(source, out / "draft")
                (out / "target").symlink_to((self.folder / "target").resolve(), target_is_directory=True)
                write_speculative_config(out)

            write_once(folder, write)
            try:
                return self.og.Model(str(folder))
            except RuntimeError as exc:
                raise UsageError(f"onnxruntime-genai refused the bigram draft in {folder}: {exc}") from None

        return self._bigrams.get(script, build)[1]

    def _generator(
        self, *, speculative: bool = False, script: dict[str, Any] | None = None, **search: Any
    ) -> Any:
        model = self.speculative_model if speculative else self.model
        if speculative and self.method == "draft" and (script or {}).get("kind") == "bigram":
            model = self._bigram_model(script or {})
        params = self.og.GeneratorParams(model)
        params.set_search_options(**search)
        if speculative and self.method == "ngram":
            params.set_speculative_options(ngram_size=NGRAM_SIZE, max_draft_tokens=self.gamma)
        elif speculative:
            params.set_speculative_options(max_draft_tokens=self.gamma)
        return self.og.Generator(model, params)

    def _compare_baseline(self, model: Any, baseline: Any, role: str = "target") -> tuple[float, float]:
        """The largest gap between the engine's logits of ``model`` along a probe sequence fed
        one token at a time and the transformers ``baseline``'s (over :data:`LOGIT_TOLERANCE`
        the baseline is not this engine's model), and the largest gap between its logits of
        each prefix fed in one batch (as a verify pass feeds drafts) and one token at a time:
        the engine's own numerical noise (``logit_noise``)."""
        import numpy as np  # deferred: heavy

        og = self.og

        def generator() -> Any:
            params = og.GeneratorParams(model)
            params.set_search_options(max_length=len(probe) + 1)
            return og.Generator(model, params)

        probe = probe_sequence(self.prompts, self.vocab_size)
        alone = []
        stepped = generator()
        for token in probe:
            stepped.append_tokens(np.asarray([token], dtype=np.int32))
            alone.append(np.asarray(stepped.get_logits(), dtype=np.float64).reshape(-1))
        batched = []
        for end in range(2, len(probe) + 1):
            whole = generator()
            whole.append_tokens(np.asarray(probe[:end], dtype=np.int32))
            batched.append(np.asarray(whole.get_logits(), dtype=np.float64).reshape(-1))
        theirs = np.asarray(along(baseline, probe[:1], probe[1:]), dtype=np.float64)
        gap = float(np.max(np.abs(np.asarray(alone[:-1]) - theirs)))
        if not gap <= LOGIT_TOLERANCE:
            raise UsageError(
                f"{self.name}: onnxruntime-genai's {role} logits differ from the transformers baseline by "
                f"{gap:.3g} (tolerance {LOGIT_TOLERANCE:g}): the ONNX model is not the baseline's model"
            )
        return gap, float(np.max(np.abs(np.asarray(batched) - np.asarray(alone[1:]))))

    # ----------------------------------------------------------------- generate
    def generate(self, requests: list[Request]) -> list[Completion]:
        return [self._one(r) for r in requests]

    def _search(self, request: Request) -> dict[str, Any]:
        s = request.sampling
        refuse_unsupported(self.name, self.unsupported, s)
        search: dict[str, Any] = {
            "max_length": len(request.prompt) + request.max_new_tokens,
            "random_seed": request.seed,
            "repetition_penalty": s.repetition_penalty,
            "do_sample": not s.greedy,
        }
        if not s.greedy:
            search.update(
                temperature=s.temperature,
                # no top-k is the whole vocabulary (0 with top-p 0 turns sampling greedy)
                top_k=self.vocab_size if s.top_k is None else s.top_k,
                top_p=1.0 if s.top_p is None else s.top_p,
            )
        return search

    def _one(self, request: Request) -> Completion:
        import numpy as np  # deferred: heavy

        generator = self._generator(
            speculative=request.speculative, script=request.script, **self._search(request)
        )
        generator.append_tokens(np.asarray(request.prompt, dtype=np.int32))
        tokens: list[int] = []
        times: list[float] = []
        steps: list[tuple[int, dict[str, float]]] = []
        resumed: list[int] = []
        before = self._counters(generator)
        stopped = False
        start = time.perf_counter()
        while len(tokens) < request.max_new_tokens:
            if generator.is_done():
                if not (tokens and tokens[-1] in self.eos):
                    break  # the engine's own length limit
                # the end-of-sequence id, which this request does not stop at: decode on after it
                generator.append_tokens(np.asarray([tokens[-1]], dtype=np.int32))
                resumed.append(len(request.prompt) + len(tokens))
            committed = len(request.prompt) + len(tokens)
            generator.generate_next_token()
            token = int(generator.get_next_tokens()[0])
            tokens.append(token)
            times.append(time.perf_counter() - start)
            after = self._counters(generator)
            steps.append((committed, {k: after[k] - before[k] for k in _COUNTERS}))
            before = after
            if token in request.stop_ids:
                stopped = True
                break
        if request.speculative and len(tokens) > 2 * self.gamma and not any(d["rounds"] for _, d in steps):
            raise UsageError(
                f"{self.name}: onnxruntime-genai reported no speculative round over {len(tokens)} tokens: "
                "speculation is off, so this would test the plain sampler"
            )
        rounds = rounds_from_counters(steps, len(tokens), resumed) if request.speculative else None
        return Completion(tokens, "stop" if stopped else "length", rounds=rounds, token_times=times)

    @staticmethod
    def _counters(generator: Any) -> dict[str, float]:
        stats = generator.get_speculative_stats()
        return {k: float(stats.get(k, 0)) for k in _COUNTERS}


@builtin_engine(
    "ortgenai-draft",
    summary="ONNX Runtime GenAI (onnxruntime-genai) with a draft model; rejection sampling",
    extra="onnxruntime-genai",
    capabilities=(*_COMMON, "draft-model", "bigram-drafts"),
    variant="ortgenai-draft",
)
@builtin_engine(
    "ortgenai-ngram",
    summary="ONNX Runtime GenAI (onnxruntime-genai) n-gram speculation; sample-and-match verification",
    extra="onnxruntime-genai",
    capabilities=(*_COMMON, "seeded-equivalence"),
    variant="ortgenai-ngram",
)
def make_ort_genai(
    *,
    variant: str = "ortgenai-ngram",
    size: str = "ci-wide",
    seed: int = 0,
    gamma: int = 3,
    target: str | None = None,
    draft: str | None = None,
) -> OrtGenaiEngine:
    """An ONNX Runtime GenAI speculative method on the pair ``size`` (or the checkpoints
    ``target``/``draft``)."""
    target_dir, _ = onnx_pair(size, seed=seed, target=target, draft=draft)
    pair = load_pair(size, seed=seed, target=target, draft=draft)
    return OrtGenaiEngine(variant, METHODS[variant], pair, target_dir.parent, gamma=gamma)
