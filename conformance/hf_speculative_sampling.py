"""Adapter: transformers' chain verifier behind verispec's black-box signature.

``transformers.generation.utils._speculative_sampling(candidate_input_ids, candidate_logits,
candidate_length, new_logits)`` is the speculative-sampling step of assisted generation
(Leviathan et al., Algorithm 1). This adapter hands it verispec's rows as log-probabilities
(``log 0 = -inf`` keeps zeros exact after its softmax), seeds torch's global generator from
the audit's numpy generator (the function draws with ``torch.rand_like`` and
``torch.multinomial``), and returns the committed tokens.

Audit it with::

    verispec audit --chain conformance.hf_speculative_sampling:verify

The audit runs it in a subprocess, so seeding torch's global generator there does not touch
verispec's own state.
"""

from __future__ import annotations

from typing import Any


def verify(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    import numpy as np
    import torch
    from transformers.generation.utils import _speculative_sampling

    torch.manual_seed(int(rng.integers(2**62)))
    gamma = len(draft_tokens)
    with np.errstate(divide="ignore"):
        target_logits = torch.from_numpy(np.log(np.asarray(target_probs, dtype=np.float64)))[None]
        draft_logits = torch.from_numpy(np.log(np.asarray(draft_probs, dtype=np.float64)))[None]
    candidate_input_ids = torch.tensor([[0, *[int(t) for t in draft_tokens]]])
    valid_tokens, _ = _speculative_sampling(candidate_input_ids, draft_logits, gamma, target_logits)
    return [int(t) for t in valid_tokens[0].tolist()]
