"""The sampling law: every sampled token follows the target's conditional.

The token-by-token baseline gives the target's own law before each emitted token (a plain
forward pass along the output, transformed with the request's sampling settings). Each
token becomes a randomized PIT value (:mod:`verispec.stats.pit`), exactly uniform when the
engine is right whatever the prefix; a battery of prefix-dependent orderings with exact KS
tests catches a wrong law. The sample size is the Dvoretzky-Kiefer-Wolfowitz bound
(:func:`verispec.stats.plan.dkw_sample_size`) for the declared KS distance, at the alpha
each setting gets from the check's budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verispec.conformance.checks.context import Context
from verispec.conformance.checks.registry import POWER, CheckResult, Effect, check
from verispec.engines.protocol import Request, Sampling
from verispec.stats.pit import pit_battery
from verispec.stats.plan import dkw_sample_size

#: Tokens per request of the PIT checks.
PIT_TOKENS = 24
#: The PIT checks' declared effect: the KS distance between the PIT law and uniform.
PIT_EFFECT = Effect("KS distance {} on the PIT law", 0.1)


def law_settings(quick: bool) -> list[Sampling]:
    """The sampling-law settings; the quick run folds every truncation into its second."""
    settings = [Sampling(1.5), Sampling(0.5, top_k=8, min_p=0.1)]
    if not quick:
        settings += [Sampling(1.5), Sampling(1.0, top_p=0.8), Sampling(1.0, min_p=0.2)]
    return settings


def _prompt_skipper(starts: dict[tuple[int, ...], int]) -> Callable[[Any, int], bool]:
    """Skip the prompt's tokens: they are not samples."""

    def skip(seq: Any, t: int) -> bool:
        return t < starts[tuple(seq)]

    return skip


def pit_check(
    ctx: Context,
    settings: list[Sampling],
    scripts: list[dict[str, Any] | None],
) -> CheckResult:
    """Sample each setting until the planned number of tokens, then test their PIT values.

    The check's alpha is split evenly over the settings (and, inside the battery, over its
    orderings); a setting is rejected at the alpha it was planned at. ``scripts`` cycle over
    the requests (forced rejections for the cache-rollback check)."""
    draft = "draft-model" in ctx.engine.capabilities
    orderings = ("target-probability", "draft-ratio") if draft else ("target-probability", "token-id")
    assert ctx.budget is not None
    labels = [f"{i}: {s.describe()}" for i, s in enumerate(settings)]
    alphas = ctx.budget.allocate({label: 1.0 for label in labels})
    plans = {
        label: dkw_sample_size(ctx.effect, alphas[label], POWER, tests=len(orderings)) for label in labels
    }
    pvalues: dict[str, float] = {}
    histograms: dict[str, list[int]] = {}
    total = 0
    planned_total = sum(plans.values())
    for c_index, (label, sampling) in enumerate(zip(labels, settings, strict=True)):
        sequences: list[tuple[tuple[int, ...], list[int]]] = []
        tokens_so_far = 0
        k = 0
        while tokens_so_far < plans[label]:
            batch = [
                Request(
                    ctx.prompts(1, f"{c_index}:{j}")[0],
                    PIT_TOKENS,
                    sampling,
                    seed=ctx.seed_for("request", c_index, j),
                    script=scripts[j % len(scripts)],
                )
                for j in range(k, k + ctx.batch_size)
            ]
            for request, completion in zip(batch, ctx.run_many(batch), strict=True):
                sequences.append((request.prompt, completion.tokens))
                tokens_so_far += len(completion.tokens)
            k += len(batch)
            ctx.tick(total + tokens_so_far, planned_total)
        target_rows: dict[tuple[int, ...], list[float]] = {}
        draft_rows: dict[tuple[int, ...], list[float]] = {}
        for prompt, tokens in sequences:
            for row_index, row in enumerate(ctx.probs_along("target", prompt, tokens, sampling)):
                target_rows[(*prompt, *tokens[:row_index])] = row
            if draft:
                for row_index, row in enumerate(ctx.probs_along("draft", prompt, tokens, sampling)):
                    draft_rows[(*prompt, *tokens[:row_index])] = row
        full = [(*prompt, *tokens) for prompt, tokens in sequences]
        starts = {seq: len(prompt) for seq, (prompt, _) in zip(full, sequences, strict=True)}
        battery = pit_battery(
            full,
            target_rows.__getitem__,
            draft=draft_rows.__getitem__ if draft else None,
            orderings=orderings,
            rng=ctx.rng("pit", c_index),
            skip=_prompt_skipper(starts),
        )
        if battery.impossible:
            return ctx.failed(
                f"{sampling.describe()}: the engine emitted {battery.impossible} "
                "token(s) the target cannot emit",
                alpha=ctx.alpha,
                power=POWER,
                pvalue=0.0,
                samples=total + battery.n,
            )
        pvalues[label] = battery.pvalue
        histograms[label] = battery.histogram
        total += battery.n
    details = {
        "pvalues": pvalues,
        "pit_histograms": histograms,
        "orderings": list(orderings),
        "tokens_per_setting": plans,
    }
    return ctx.decide(
        pvalues,
        alphas,
        samples=total,
        details=details,
        failed=lambda worst, p: (
            f"the law at {worst.split(': ', 1)[1]} differs from the target's (p = {p:.3g})"
        ),
        passed=f"{total} tokens over {len(settings)} settings follow the target's law",
    )


@check(
    name="sampling-law",
    description="sampled tokens follow the target's conditionals (randomized PIT battery) at several "
    "temperatures, top-k, top-p and min-p",
    needs=("target-logits",),
    statistical=True,
    effect=PIT_EFFECT,
)
def sampling_law(ctx: Context) -> CheckResult:
    return pit_check(ctx, law_settings(ctx.quick), [None])
