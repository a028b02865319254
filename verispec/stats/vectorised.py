"""Vectorised samplers for calibration: millions of rounds per second in numpy.

* :func:`law_counts` samples any exact law (for example a registered verifier's round law,
  enumerated by the exact executor) as multinomial counts: this gives a vectorised sampler
  for *every* chain and tree verifier and control on instances small enough to enumerate.
* :func:`token_level_rounds` runs token-level speculative sampling (and the
  ``resample-target`` and ``reused-uniform`` controls) on per-position rows directly, for
  vocabularies too large to enumerate; a statistical test checks it against the exact
  executor's law.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from verispec.errors import UsageError

__all__ = ["VARIANTS", "law_counts", "token_level_rounds"]

VARIANTS = ("token-level", "resample-target", "reused-uniform")


def law_counts(law: Mapping[Any, Any], n: int, reps: int, rng: Any) -> tuple[list[Any], Any]:
    """``reps`` independent multinomial count vectors of ``n`` draws from ``law``."""
    import numpy as np  # deferred: heavy

    keys = sorted(law, key=repr)
    probs = np.array([float(law[k]) for k in keys], dtype=np.float64)
    probs /= probs.sum()
    return keys, rng.multinomial(n, probs, size=reps)


def _cdf(rows: Any) -> Any:
    import numpy as np  # deferred: heavy

    cdf = np.cumsum(rows, axis=-1)
    cdf[..., -1] = np.where(cdf[..., -1] > 0, 1.0, 0.0)  # close the last bin against rounding
    return cdf


def token_level_rounds(
    target: Any, draft: Any, n: int, rng: Any, *, variant: str = "token-level"
) -> tuple[Any, Any]:
    """``n`` rounds with per-position rows: ``target`` is ``[gamma+1, V]``, ``draft`` ``[gamma, V]``.

    Returns ``(lengths, tokens)``: the block length of each round and a ``[n, gamma+1]`` array
    whose first ``length`` entries are the committed block.
    """
    import numpy as np  # deferred: heavy

    if variant not in VARIANTS:
        raise UsageError(f"variant={variant!r} is not one of {', '.join(VARIANTS)}")
    target = np.asarray(target, dtype=np.float64)
    draft = np.asarray(draft, dtype=np.float64)
    gamma, vocab = draft.shape
    if target.shape != (gamma + 1, vocab):
        raise UsageError(
            f"target has shape {target.shape}; expected {(gamma + 1, vocab)} for draft {draft.shape}"
        )
    tokens = np.empty((n, gamma + 1), dtype=np.int64)
    coins = rng.random((n, gamma))
    accepted = np.ones(n, dtype=bool)
    first_reject = np.full(n, gamma, dtype=np.int64)
    q_cdf = _cdf(draft)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(draft > 0, np.minimum(1.0, target[:gamma] / draft), 0.0)
    for i in range(gamma):
        x = np.minimum(np.searchsorted(q_cdf[i], rng.random(n), side="right"), vocab - 1)
        tokens[:, i] = x
        ok = coins[:, i] < ratio[i, x]
        newly = accepted & ~ok
        first_reject[newly] = i
        accepted &= ok
    residual = np.maximum(target[:gamma] - draft, 0.0)
    sums = residual.sum(axis=1, keepdims=True)
    residual = np.divide(residual, sums, out=np.zeros_like(residual), where=sums > 0)
    correction_rows = target[:gamma] if variant == "resample-target" else residual
    cdfs = _cdf(np.vstack([correction_rows, target[gamma:]]))
    u = rng.random(n)
    for k in range(gamma + 1):
        mask = first_reject == k
        if not mask.any():
            continue
        draw = u[mask]
        if variant == "reused-uniform" and k < gamma:
            # the acceptance uniform, which given a rejection lies in [ratio, 1)
            draw = coins[mask, k]
        tokens[mask, k] = np.minimum(np.searchsorted(cdfs[k], draw, side="right"), vocab - 1)
    return first_reject + 1, tokens
