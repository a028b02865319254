"""The sampling law: every sampled token follows the target's conditional.

The token-by-token baseline gives the target's own law before each emitted token (a plain
forward pass along the output, transformed with the request's sampling settings). Each
token becomes a randomized PIT value (:mod:`verispec.stats.pit`), exactly uniform when the
engine is right whatever the prefix; a battery of prefix-dependent orderings with exact KS
tests catches a wrong law. The sample size is the Dvoretzky-Kiefer-Wolfowitz bound
(:func:`verispec.stats.plan.dkw_sample_size`) for the declared KS distance, at the alpha
each setting gets from the check's budget: half the budget split over the settings, half to
Fisher's combination of their p-values, which catches a bug spread thinly over every setting
(vLLM's recovered token drawn from p instead of the residual: p between 3e-6 and 7e-4 in
each of the four quick settings, none below its share).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from verispec.conformance.checks.context import Context
from verispec.conformance.checks.registry import POWER, CheckResult, Effect, check
from verispec.engines.protocol import Request, Sampling
from verispec.stats.multiplicity import fisher
from verispec.stats.pit import pit_battery
from verispec.stats.plan import dkw_sample_size
from verispec.verdicts import Evidence

#: Tokens per request of the PIT checks.
PIT_TOKENS = 24
#: The label of Fisher's combination of a PIT check's settings (half the check's alpha).
COMBINED = "all settings (Fisher)"
#: The PIT checks' declared effect: the KS distance between the PIT law and uniform.
PIT_EFFECT = Effect("KS distance {} on the PIT law", 0.1)


def with_penalties(sampling: Sampling, *, repetition: bool = True) -> Sampling:
    """``sampling`` with the penalties of the sampled settings (engines with ``penalties``): all
    three at once, each strong enough to move a 24-token law within a request of
    :data:`PIT_TOKENS` tokens; without the repetition penalty for the engines that cannot take
    it (llama.cpp, whose repetition penalty never sees the prompt)."""
    return replace(
        sampling, frequency_penalty=0.5, presence_penalty=0.5, repetition_penalty=1.3 if repetition else 1.0
    )


def law_settings(quick: bool) -> list[tuple[Sampling, ...]]:
    """The sampling-law settings, each with the alternatives an engine that cannot take it
    gets instead (vLLM refuses min-p and, on its CPU build, top-k with speculation).

    The quick run samples each axis where its bugs are loudest: a hot and a cold temperature
    (a bug in how the temperature reaches the draft or the target shows at one and not the
    other), every truncation at once at T=2, where top-k and min-p (or top-p) cut off a
    large share of the draft's mass, and the penalties (:func:`with_penalties`). A draft
    sampled untruncated against a truncated q moves each drafted token's law by a TV of 0.17
    at the hot truncated setting on the ``ci`` models, and by 0.018 at the T=0.5 setting
    the quick run used to fold its truncations into, below what the quick sizes can see.
    The full run adds truncations at T=1 and T=0.5."""
    settings: list[tuple[Sampling, ...]] = [
        (Sampling(1.5),),
        (Sampling(0.5),),
        (Sampling(2.0, top_k=6, min_p=0.3), Sampling(2.0, top_k=6, top_p=0.6), Sampling(2.0, top_p=0.5)),
        # penalties on sampled requests (left out, with the reason, where the engine takes none)
        (
            with_penalties(Sampling(1.0, top_p=0.9)),
            with_penalties(Sampling(1.0, top_p=0.9), repetition=False),
        ),
    ]
    if not quick:
        settings += [
            (Sampling(0.5, top_k=8, min_p=0.1), Sampling(0.5, top_k=8), Sampling(0.5, top_p=0.8)),
            (Sampling(1.0, top_p=0.8),),
            (Sampling(1.0, min_p=0.2), Sampling(1.0, top_p=0.6)),
        ]
    return settings


def _prompt_skipper(starts: dict[tuple[int, ...], int]) -> Callable[[Any, int], bool]:
    """Skip the prompt's tokens: they are not samples."""

    def skip(seq: Any, t: int) -> bool:
        return t < starts[tuple(seq)]

    return skip


class _RowsAlong:
    """The ``model``'s law before each token of ``sequences``, computed one sequence at a time
    as the PIT battery walks them in order (at a trained model's 50 thousand tokens, keeping
    every row of a setting would take gigabytes)."""

    def __init__(
        self, ctx: Context, model: str, sequences: list[tuple[tuple[int, ...], list[int]]], sampling: Sampling
    ) -> None:
        self.ctx, self.model, self.sequences, self.sampling = ctx, model, sequences, sampling
        self.next = 0
        self.rows: dict[tuple[int, ...], Any] = {}

    def __call__(self, prefix: tuple[int, ...]) -> Any:
        if prefix not in self.rows:
            self.rows = {}
            while prefix not in self.rows:  # the battery asks for the sequences in order
                if self.next >= len(self.sequences):
                    raise KeyError(prefix)
                prompt, tokens = self.sequences[self.next]
                self.next += 1
                rows = self.ctx.probs_along(self.model, prompt, tokens, self.sampling)
                self.rows = {(*prompt, *tokens[:i]): row for i, row in enumerate(rows)}
        return self.rows[prefix]


def pit_check(
    ctx: Context,
    settings: list[Sampling],
    scripts: list[dict[str, Any] | None],
) -> CheckResult:
    """Sample each setting until the planned number of tokens, then test their PIT values.

    The check's alpha is split evenly over the settings (and, inside the battery, over its
    orderings); a setting is rejected at the alpha it was planned at. ``scripts`` cycle over
    the requests (forced rejections for the cache-rollback check)."""
    if not settings:
        return ctx.skipped("the engine takes none of the settings: " + "; ".join(ctx.left_out.values()))
    draft = "draft-model" in ctx.engine.capabilities
    orderings = ("target-probability", "draft-ratio") if draft else ("target-probability", "token-id")
    assert ctx.budget is not None
    labels = [f"{i}: {s.describe()}" for i, s in enumerate(settings)]
    # half the alpha to the settings one by one, half to Fisher's combination of them all
    weights = {label: 1.0 for label in labels}
    if len(labels) > 1:
        weights[COMBINED] = float(len(labels))
    alphas = ctx.budget.allocate(weights)
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
        full = [(*prompt, *tokens) for prompt, tokens in sequences]
        starts = {seq: len(prompt) for seq, (prompt, _) in zip(full, sequences, strict=True)}
        target_rows = _RowsAlong(ctx, "target", sequences, sampling)
        draft_rows = _RowsAlong(ctx, "draft", sequences, sampling)
        battery = pit_battery(
            full,
            target_rows,
            draft=draft_rows if draft else None,
            orderings=orderings,
            rng=ctx.rng("pit", c_index),
            skip=_prompt_skipper(starts),
        )
        if battery.impossible:
            return ctx.failed(
                f"{sampling.describe()}: the engine emitted {battery.impossible} "
                "token(s) the target cannot emit",
                Evidence.IMPOSSIBLE,
                alpha=ctx.alpha,
                power=POWER,
                pvalue=0.0,
                samples=total + battery.n,
            )
        pvalues[label] = battery.pvalue
        histograms[label] = battery.histogram
        total += battery.n
    if COMBINED in alphas:
        pvalues[COMBINED] = fisher([pvalues[label] for label in labels])
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
            f"the law over {len(labels)} settings together differs from the target's (p = {p:.3g})"
            if worst == COMBINED
            else f"the law at {worst.split(': ', 1)[1]} differs from the target's (p = {p:.3g})"
        ),
        passed=f"{total} tokens over {len(settings)} settings follow the target's law",
    )


@check(
    name="sampling-law",
    description="sampled tokens follow the target's conditionals (randomized PIT battery) at several "
    "temperatures, top-k, top-p and min-p, and with frequency, presence and repetition penalties",
    needs=("target-logits",),
    statistical=True,
    effect=PIT_EFFECT,
)
def sampling_law(ctx: Context) -> CheckResult:
    return pit_check(ctx, ctx.settings(law_settings(ctx.quick)), [None])
