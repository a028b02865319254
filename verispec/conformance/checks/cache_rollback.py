"""Cache rollback: after a rejection forced at every draft position, and after full
acceptance, the following tokens keep the target's law.

A scripted draft (capability ``scripted-drafts``) puts the first rejection of a round at a
chosen position ``0 .. gamma - 1``, or accepts every draft; a cache cropped one slot too far
or too short, or a bonus row sampled with the wrong settings, then changes the law of the
tokens that follow, which the PIT battery of the sampling-law check tests.
"""

from __future__ import annotations

from typing import Any

from verispec.conformance.checks.context import Context
from verispec.conformance.checks.registry import CheckResult, check
from verispec.conformance.checks.sampling_law import PIT_EFFECT, pit_check, with_penalties
from verispec.engines.protocol import Sampling


@check(
    name="cache-rollback",
    description="after a rejection forced at every position (and full acceptance) the following tokens "
    "keep the target's law",
    needs=("target-logits", "scripted-drafts"),
    statistical=True,
    effect=PIT_EFFECT,
)
def cache_rollback(ctx: Context) -> CheckResult:
    gamma = int(ctx.engine.gamma or 3)
    scripts: list[dict[str, Any] | None] = [{"kind": "forced-rejection", "position": j} for j in range(gamma)]
    scripts.append({"kind": "full-acceptance"})
    # a forced rejection needs a token the target cannot emit: a truncation; and once more with
    # the penalties, whose counts must be rolled back with the rejected drafts
    settings = ctx.settings(
        [
            (Sampling(1.0, top_k=8), Sampling(1.0, top_p=0.8)),
            (
                with_penalties(Sampling(1.0, top_k=8)),
                with_penalties(Sampling(1.0, top_p=0.8)),
                with_penalties(Sampling(1.0, top_k=8), repetition=False),
            ),
        ]
    )
    return pit_check(ctx, settings, scripts)
