"""transformers engines: assisted generation with a draft model, and prompt lookup.

Both wrap ``model.generate`` of an in-memory ``transformers`` model, so a team can test its
own models: ``HFAssistedEngine(target, draft)`` and ``HFLookupEngine(target)``. The request
seed seeds torch's global generator before each call (``generate`` samples from it), which
is why audits run engines in their own process.

``make_hf_assisted(mutations=[...])`` plants a known bug by patching transformers' own code
(:data:`MUTATIONS`), for the negative controls. The patch lives only in the engine's process.
"""

from __future__ import annotations

from typing import Any

from verispec.engines.protocol import Completion, Request

__all__ = ["MUTATIONS", "HFAssistedEngine", "HFLookupEngine"]

#: Planted bugs of the assisted-generation adapter: name -> what the patch does.
MUTATIONS = {
    "softmax-residual": "transformers' verification step with softmax(clamp(p - q, 0)) as the residual "
    "(the bug transformers PR #28508 fixed)",
    "greedy-draft-softmax-q": "the assistant drafts by argmax while verification uses the softmax of its "
    "logits as q (transformers #32867)",
}


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


def _plant(mutations: Any) -> None:
    """Patch transformers in this process (the engine's worker) with the named bugs."""
    from verispec.errors import unknown_name

    for m in mutations:
        if m not in MUTATIONS:
            raise unknown_name("mutation", m, MUTATIONS)
    if "softmax-residual" in mutations:
        import transformers.generation.utils as generation

        generation._speculative_sampling = _softmax_residual_sampling  # type: ignore[assignment]
    if "greedy-draft-softmax-q" in mutations:
        from transformers.generation.candidate_generator import AssistedCandidateGenerator

        original = AssistedCandidateGenerator.__init__

        def drafts_greedily(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            self.generation_config.do_sample = False  # the bug: q stays the softmax of the logits

        AssistedCandidateGenerator.__init__ = drafts_greedily  # type: ignore[method-assign]


class _HFEngine:
    capabilities = frozenset({"non-speculative", "seeded"})

    def __init__(self, target: Any, *, gamma: int = 3, name: str) -> None:
        import torch

        self.torch = torch
        self.target = target
        self.gamma = gamma
        self.name = name
        self.vocab_size = int(target.config.vocab_size)

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
        from verispec.engines.reference import _along

        return _along(self.target, prompt, tokens)

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
            with torch.no_grad():
                result = self.target.generate(ids, **kwargs)
            tokens = [int(t) for t in result[0, len(request.prompt) :].tolist()]
            stopped = any(t in request.stop_ids for t in tokens)
            out.append(Completion(tokens, "stop" if stopped else "length"))
        return out


class HFAssistedEngine(_HFEngine):
    """Assisted generation: ``generate(..., assistant_model=draft)``."""

    def __init__(self, target: Any, draft: Any, *, gamma: int = 3, name: str = "hf-assisted") -> None:
        super().__init__(target, gamma=gamma, name=name)
        self.draft = draft
        draft.generation_config.num_assistant_tokens = gamma
        draft.generation_config.num_assistant_tokens_schedule = "constant"
        draft.generation_config.assistant_confidence_threshold = 0.0

    def _extra(self, request: Request) -> dict[str, Any]:
        return {"assistant_model": self.draft}


class HFLookupEngine(_HFEngine):
    """Prompt lookup decoding: ``generate(..., prompt_lookup_num_tokens=gamma)``."""

    def __init__(self, target: Any, *, gamma: int = 3, name: str = "hf-lookup") -> None:
        super().__init__(target, gamma=gamma, name=name)

    def _extra(self, request: Request) -> dict[str, Any]:
        return {"prompt_lookup_num_tokens": self.gamma}


def make_hf_assisted(
    *, size: str = "ci", seed: int = 0, gamma: int = 3, device: str = "cpu", mutations: Any = ()
) -> HFAssistedEngine:
    from verispec.engines.tiny import tiny_pair

    _plant(mutations)
    pair = tiny_pair(size, seed=seed, device=device)
    engine = HFAssistedEngine(pair.target, pair.draft, gamma=gamma)
    if mutations:
        engine.name += f"[{','.join(sorted(mutations))}]"
    return engine


def make_hf_lookup(*, size: str = "ci", seed: int = 0, gamma: int = 3, device: str = "cpu") -> HFLookupEngine:
    from verispec.engines.tiny import tiny_pair

    pair = tiny_pair(size, seed=seed, device=device)
    return HFLookupEngine(pair.target, gamma=gamma)
