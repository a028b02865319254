"""Scripted drafts for engines whose drafter verispec supplies (a proposer or draft-model hook).

An engine with such a hook gives its drafts no draft law: the verifier treats each draft as a
point mass and accepts it with probability ``p(draft)`` (vLLM's custom proposer), or accepts
it when the target's own sample equals it (llama.cpp's sample-and-match). So a draft cannot be
made certain to pass. :func:`scripted_drafts` drafts the target's most likely token before the
scripted position (accepted with probability ``max p``), at the position a token the target
cannot emit under the request's settings (always rejected), and nothing after it. The first
rejection therefore falls at the scripted position or before it; the engine's round records
say where.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from verispec.core.transforms import apply_float

__all__ = ["impossible_token", "scripted_drafts"]


def scripted_drafts(
    script: Mapping[str, Any] | None,
    gamma: int,
    committed: tuple[int, ...],
    logits: Callable[[tuple[int, ...]], Any],
    impossible: Callable[[Any, tuple[int, ...]], int | None],
) -> list[int]:
    """The drafts of one round after ``committed`` by ``script`` (none without one):
    ``logits(ids)`` gives the target's next-token logits after ``ids``, ``impossible(logits,
    ids)`` a token the request's settings give probability 0 there, or None."""
    if not script:
        return []
    position = gamma if script.get("kind") == "full-acceptance" else int(script["position"])
    out: list[int] = []
    for i in range(min(position + 1, gamma)):
        row = logits((*committed, *out))
        if i < position:
            out.append(int(row.argmax()))
            continue
        token = impossible(row, (*committed, *out))
        if token is not None:
            out.append(int(token))
        break
    return out


def impossible_token(
    logits: Any, ids: tuple[int, ...], request: Any, order: str = "temperature-first"
) -> int | None:
    """The lowest id that ``request``'s settings (penalties, then temperature and truncation in
    the engine's ``order``) give probability 0 after ``ids``, or None."""
    import numpy as np  # deferred: heavy

    generated = list(ids[len(request.prompt) :])
    row = np.asarray(
        request.sampling.penalise(np.asarray(logits, dtype=np.float64), generated, request.prompt)
    )
    row = np.exp(row - row.max())
    p = apply_float(row / row.sum(), request.sampling.config(), order=order)
    zero = np.flatnonzero(p == 0)
    return int(zero[0]) if zero.size else None
