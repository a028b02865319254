"""transformers engines: assisted generation with a draft model, and prompt lookup.

Both wrap ``model.generate`` of an in-memory ``transformers`` model, so a team can test its
own models: ``HFAssistedEngine(target, draft)`` and ``HFLookupEngine(target)``. The request
seed seeds torch's global generator before each call (``generate`` samples from it), which
is why audits run engines in their own process.

``make_hf_assisted(mutations=[...])`` plants a known bug by patching transformers' own code
(the planted bugs at the end of this module), for the negative controls. The patch lives only
in the engine's process.

A request with a ``bigram`` script is assisted by verispec's bigram draft model with the
script's table (``bigram-drafts``, :mod:`verispec.engines.bigram`), built in memory.

Built through the registry, an engine declares :data:`HF_CAPABILITIES` (assisted generation
also ``bigram-drafts``); one built by hand in a factory of your own declares what it offers by
setting ``engine.capabilities``.
"""

from __future__ import annotations

import time
from typing import Any

from verispec.engines import registry
from verispec.engines.bigram import Drafters, bigram_model
from verispec.engines.bugs import planted_bug
from verispec.engines.model_pairs import load_pair
from verispec.engines.protocol import Completion, Request
from verispec.engines.registry import builtin_engine
from verispec.engines.torchlm import along
from verispec.verdicts import Evidence

__all__ = ["HFAssistedEngine", "HFLookupEngine", "make_hf_assisted", "make_hf_lookup"]

#: What both adapters declare: transformers' generate takes one request at a time and reports
#: no rounds; its drafts cannot be scripted; its streamer gives the token times.
HF_CAPABILITIES = ("target-logits", "non-speculative", "seeded", "token-times")
#: Assisted generation takes any draft model, so verispec's bigram too.
ASSISTED_CAPABILITIES = (*HF_CAPABILITIES, "bigram-drafts")


class _Clock:
    """A transformers streamer that notes when ``generate`` hands out each token: the prompt
    first (not counted), then each step's tokens (one per plain step, a round's accepted drafts
    and its correction or bonus together under assisted generation)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.times: list[float] = []
        self._prompt_seen = False

    def put(self, value: Any) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        now = time.perf_counter() - self.start
        self.times += [now] * int(value.numel())

    def end(self) -> None:
        pass


class _HFEngine:
    def __init__(self, target: Any, *, gamma: int = 3, name: str) -> None:
        import torch  # deferred: heavy

        self.torch = torch
        self.target = target
        self.gamma = gamma
        self.name = name
        #: set by the registry that builds it (declared on ``@builtin_engine``)
        self.capabilities: frozenset[str] = frozenset()
        self.vocab_size = int(target.config.vocab_size)
        self.device = str(target.device)
        #: real text prompts (token ids) of a trained model; none for seeded ones
        self.prompts: list[tuple[int, ...]] = []
        self.prompt_kinds: list[str] = []  # one per prompt ("rewrite", "open")

    def target_logits(self, prefixes: list[tuple[int, ...]]) -> Any:
        torch = self.torch
        with torch.no_grad():
            return torch.stack(
                [
                    self.target(torch.tensor([list(p)], device=self.target.device))
                    .logits[0, -1]
                    .float()
                    .cpu()
                    for p in prefixes
                ]
            )

    def target_logits_along(self, prompt: Any, tokens: Any) -> Any:
        return along(self.target, prompt, tokens)

    def _kwargs(self, request: Request) -> dict[str, Any]:
        s = request.sampling
        kwargs: dict[str, Any] = {
            "max_new_tokens": request.max_new_tokens,
            "do_sample": not s.greedy,
            "pad_token_id": 2,
            "eos_token_id": list(request.stop_ids) or None,
        }
        if s.greedy:
            kwargs.update(temperature=None, top_k=None, top_p=None)
        else:
            kwargs.update(temperature=s.temperature, top_k=s.top_k or 0, top_p=s.top_p or 1.0)
            if s.min_p is not None:
                kwargs["min_p"] = s.min_p
        return kwargs

    def _extra(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    def generate(self, requests: list[Request]) -> list[Completion]:
        torch = self.torch
        out = []
        for request in requests:
            torch.manual_seed(request.seed)
            ids = torch.tensor([list(request.prompt)], device=self.target.device)
            kwargs = self._kwargs(request)
            if request.speculative:
                kwargs.update(self._extra(request))
            # every prompt token is attended to: without a mask, generate masks the tokens equal
            # to pad_token_id, which a chat prompt holds (SmolLM2's id 2 is <|im_end|>)
            clock = _Clock()
            with torch.no_grad():
                result = self.target.generate(
                    ids, attention_mask=torch.ones_like(ids), streamer=clock, **kwargs
                )
            tokens = [int(t) for t in result[0, len(request.prompt) :].tolist()]
            stopped = any(t in request.stop_ids for t in tokens)
            # a stream that does not match the output (a transformers change) is not reported
            times = clock.times if len(clock.times) == len(tokens) else None
            out.append(Completion(tokens, "stop" if stopped else "length", token_times=times))
        return out


class HFAssistedEngine(_HFEngine):
    """Assisted generation: ``generate(..., assistant_model=draft)``; a request with a
    ``bigram`` script (``bigram-drafts``) is assisted by verispec's bigram draft model with
    the script's table instead."""

    def __init__(self, target: Any, draft: Any, *, gamma: int = 3, name: str = "hf-assisted") -> None:
        super().__init__(target, gamma=gamma, name=name)
        self.draft = self._assistant(draft)
        # a plan is one request's: keep only the last few
        self._bigrams = Drafters(self.vocab_size, keep=8)

    def _assistant(self, draft: Any) -> Any:
        """``draft`` set to propose ``gamma`` drafts every round, whatever its confidence."""
        draft.generation_config.num_assistant_tokens = self.gamma
        draft.generation_config.num_assistant_tokens_schedule = "constant"
        draft.generation_config.assistant_confidence_threshold = 0.0
        return draft

    def _extra(self, request: Request) -> dict[str, Any]:
        script = request.script or {}
        if script.get("kind") != "bigram":
            return {"assistant_model": self.draft}
        _, drafter = self._bigrams.get(
            script,
            lambda successors, default, _: self._assistant(
                bigram_model(successors, default, self.target.config).to(self.target.device)
            ),
        )
        return {"assistant_model": drafter}


class HFLookupEngine(_HFEngine):
    """Prompt lookup decoding: ``generate(..., prompt_lookup_num_tokens=gamma)``."""

    def __init__(self, target: Any, *, gamma: int = 3, name: str = "hf-lookup") -> None:
        super().__init__(target, gamma=gamma, name=name)

    def _extra(self, request: Request) -> dict[str, Any]:
        return {"prompt_lookup_num_tokens": self.gamma}


@builtin_engine(
    "hf-assisted",
    summary="transformers' assisted generation (generate with assistant_model) on a tiny seeded pair",
    extra="transformers",
    capabilities=ASSISTED_CAPABILITIES,
)
def make_hf_assisted(
    *,
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    device: str = "cpu",
    mutations: Any = (),
    target: str | None = None,
    draft: str | None = None,
) -> HFAssistedEngine:
    """transformers' assisted generation, with the planted bugs ``mutations`` patched into
    transformers in this process."""
    for bug in registry.planted("hf-assisted", mutations):
        bug.replacement()
    pair = load_pair(size, seed=seed, device=device, target=target, draft=draft)
    engine = HFAssistedEngine(pair.target, pair.draft, gamma=gamma)
    engine.prompts = list(pair.prompts)
    engine.prompt_kinds = list(pair.prompt_kinds)
    if mutations:
        engine.name += f"[{','.join(sorted(mutations))}]"
    return engine


@builtin_engine(
    "hf-lookup",
    summary="transformers' prompt lookup decoding (generate with prompt_lookup_num_tokens)",
    extra="transformers",
    capabilities=HF_CAPABILITIES,
)
def make_hf_lookup(
    *,
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    device: str = "cpu",
    target: str | None = None,
) -> HFLookupEngine:
    pair = load_pair(size, seed=seed, device=device, target=target, draft=target)
    engine = HFLookupEngine(pair.target, gamma=gamma)
    engine.prompts = list(pair.prompts)
    engine.prompt_kinds = list(pair.prompt_kinds)
    return engine


# ------------------------------------------------------------------------------ planted bugs
# Patches of transformers' own assisted generation, applied in the engine's process only.


def _softmax_residual_sampling(
    candidate_input_ids: Any, candidate_logits: Any, candidate_length: int, new_logits: Any, **_: Any
) -> tuple[Any, Any]:
    """transformers' ``_speculative_sampling`` for one row, with the residual passed through
    softmax instead of divided by its sum."""
    import torch  # deferred: heavy

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


@planted_bug(
    "softmax-residual",
    engine="hf-assisted",
    seam="transformers.generation.utils._speculative_sampling",
    mechanism="transformers' verification step with softmax(clamp(p - q, 0)) as the residual",
    source="huggingface/transformers PR #28508",
    caught_by={"sampling-law": Evidence.IMPOSSIBLE, "first-token-law": Evidence.STATISTIC},
)
def _patch_softmax_residual() -> None:
    import transformers.generation.utils as generation  # deferred: heavy

    generation._speculative_sampling = _softmax_residual_sampling  # type: ignore[assignment]


@planted_bug(
    "greedy-draft-softmax-q",
    engine="hf-assisted",
    seam="transformers.generation.candidate_generator.AssistedCandidateGenerator.__init__",
    mechanism="the assistant drafts by argmax while verification uses the softmax of its logits as q",
    source="huggingface/transformers #32867 -> PR #33534",
    caught_by={"sampling-law": Evidence.STATISTIC},
)
def _patch_greedy_assistant() -> None:
    from transformers.generation.candidate_generator import AssistedCandidateGenerator  # deferred: heavy

    original = AssistedCandidateGenerator.__init__

    def drafts_greedily(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.generation_config.do_sample = False  # the bug: q stays the softmax of the logits

    AssistedCandidateGenerator.__init__ = drafts_greedily  # type: ignore[method-assign]


def _crop_keeping_nothing_at_zero(self: Any, tokens_to_remove: int) -> None:
    """transformers' ``DynamicLayer.crop`` without its guard for 0: ``keys[..., :-0, :]``
    keeps nothing, so a round that accepted every draft (0 tokens to remove) empties the
    cache."""
    if tokens_to_remove > 0:  # the legacy absolute size, as transformers takes it
        tokens_to_remove = max(self.get_seq_length() - tokens_to_remove, 0)
    self.keys = self.keys[..., : -abs(tokens_to_remove), :]
    self.values = self.values[..., : -abs(tokens_to_remove), :]


@planted_bug(
    "crop-negative-slice",
    engine="hf-assisted",
    seam="transformers.cache_utils.DynamicLayer.crop",
    mechanism="the cache crop slices keys[:-k] with k the tokens to remove, so after a round that accepted "
    "every draft (k = 0) the target's cache keeps nothing",
    source="huggingface/transformers #47433 (crop(0) meant 'keep nothing' until PR #47720)",
    caught_by={"cache-rollback": Evidence.MISMATCH},
)
def _patch_crop_zero() -> None:
    from transformers.cache_utils import DynamicLayer  # deferred: heavy

    DynamicLayer.crop = _crop_keeping_nothing_at_zero  # type: ignore[method-assign]
