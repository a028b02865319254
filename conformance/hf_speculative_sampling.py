"""Adapter: transformers' chain verifier behind verispec's black-box signature.

``transformers.generation.utils._speculative_sampling(candidate_input_ids, candidate_logits,
candidate_length, new_logits)`` is the speculative-sampling step of assisted generation
(Leviathan et al., Algorithm 1). This adapter hands it verispec's rows as float32
log-probabilities, the width assisted generation gives it (``_assisted_decoding`` casts the
model's logits to float32; ``log 0 = -inf`` keeps zeros exact after its softmax), seeds
torch's global generator from the audit's numpy generator (the function draws with
``torch.rand_like`` and ``torch.multinomial``), and returns the committed tokens.

Audit it with::

    verispec audit --chain conformance.hf_speculative_sampling:verify
    verispec audit --chain conformance.hf_speculative_sampling:verify --boundary
    verispec audit --chain conformance.hf_speculative_sampling:verify_ensemble

``verify_ensemble`` runs the same function with ``assistant_ensemble_weight=0.5`` (transformers
5.25 and later): DIVERSE's static ensemble verification, which accepts against
``w p + (1 - w) q`` and is lossy by design, so the audit refutes it with its measured distance.

The audit runs it in a subprocess, so seeding torch's global generator there does not touch
verispec's own state.
"""

from __future__ import annotations

from typing import Any


def verify(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    """Speculative sampling as assisted generation runs it (no ensemble weight)."""
    return _verify(target_probs, draft_probs, draft_tokens, rng)


def verify_ensemble(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    """Static ensemble verification with weight 1/2 (a documented lossy option)."""
    import inspect

    from transformers.generation.utils import _speculative_sampling

    if "assistant_ensemble_weight" not in inspect.signature(_speculative_sampling).parameters:
        raise TypeError("this transformers has no assistant_ensemble_weight (it came with 5.25)")
    return _verify(target_probs, draft_probs, draft_tokens, rng, assistant_ensemble_weight=0.5)


def _verify(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any, **options: Any) -> list[int]:
    import numpy as np
    import torch
    from transformers.generation.utils import _speculative_sampling

    torch.manual_seed(int(rng.integers(2**62)))
    gamma = len(draft_tokens)
    with np.errstate(divide="ignore"):
        target_logits = torch.from_numpy(np.log(np.asarray(target_probs, dtype=np.float64))).float()[None]
        draft_logits = torch.from_numpy(np.log(np.asarray(draft_probs, dtype=np.float64))).float()[None]
    candidate_input_ids = torch.tensor([[0, *[int(t) for t in draft_tokens]]])
    valid_tokens, _ = _speculative_sampling(
        candidate_input_ids, draft_logits, gamma, target_logits, **options
    )
    return [int(t) for t in valid_tokens[0].tolist()]
