"""The first token's exact law after a fixed prompt.

For a fixed prompt the first emitted token is an i.i.d. draw from the target's conditional
when the engine is right. Planned design: Pearson's test (exact enumeration when small) over
cells pooled from the exact law (:func:`verispec.stats.plan.pooled_pearson_plan`).
Sequential design: a Dirichlet-mixture e-process at the same alpha, stopping at the first
evidence and capped at twice the planned size.

Each request asks for ``gamma + 1`` tokens and only the first is tested: an engine that
drafts no more than the tokens it has left (transformers drafts ``min(gamma, left - 1)``)
does not speculate at all on a one-token request, and the test would then see only its
plain sampler.

Besides the short prompts, one case asks in batches for a long prompt
(:data:`LONG_PROMPT` ids): eight of them overrun a prefill step of 256 tokens (OpenVINO
GenAI's default), so an engine that prefills in steps defers part of each batch, and a
deferred prompt's first token goes through whatever path such an engine takes for it
(OpenVINO's draft pipeline prefills it first and has its own first token verified:
docs/audits/openvino.md, finding 1).
"""

from __future__ import annotations

import itertools
import math

from verispec.conformance.checks.context import Context
from verispec.conformance.checks.registry import POWER, CheckResult, Effect, check
from verispec.engines.protocol import Request, Sampling
from verispec.stats.gof import pearson_test
from verispec.stats.plan import pooled_pearson_plan
from verispec.stats.sequential import DirichletEProcess
from verispec.verdicts import Evidence

#: Ids in the long prompt: a batch of eight (:data:`~verispec.conformance.checks.context.BATCH`)
#: overruns a prefill step of 256 tokens, so an engine that schedules prefill in steps
#: defers some of the batch's prompts.
LONG_PROMPT = 96


def long_prompt(ctx: Context) -> tuple[int, ...]:
    """A prompt of at least :data:`LONG_PROMPT` ids: random ids, or the engine's text
    prompts joined until it is that long."""
    prompt: tuple[int, ...] = ()
    for part in ctx.prompts(8, "first-token-long", length=LONG_PROMPT):
        prompt += part
        if len(prompt) >= LONG_PROMPT:
            break
    return prompt


def _label(sampling: Sampling, prompt: tuple[int, ...]) -> str:
    if len(prompt) < LONG_PROMPT:
        return f"{sampling.describe()} prompt {list(prompt)}"
    return f"{sampling.describe()} long prompt of {len(prompt)} ids {list(prompt[:4])}..."


@check(
    name="first-token-law",
    description="the first token after a fixed prompt (short ones, and a long one asked in batches "
    "that overrun a 256-token prefill step) follows the target's exact conditional (Pearson's test "
    "on pooled cells, or a sequential e-process)",
    needs=("target-logits",),
    statistical=True,
    effect=Effect("total variation {} on the test's cells", 0.1),
)
def first_token_law(ctx: Context) -> CheckResult:
    assert ctx.budget is not None
    groups: list[tuple[Sampling, ...]] = [(Sampling(1.0),)]
    if not ctx.quick:
        groups.append((Sampling(0.5, top_k=8), Sampling(0.5, top_p=0.8)))
    settings = ctx.settings(groups)
    prompts = ctx.prompts(1 if ctx.quick else 2, "first-token")
    cases = list(itertools.product(settings, prompts))
    long = long_prompt(ctx)
    if settings:
        cases.append((settings[0], long))
    labels = [_label(sampling, prompt) for sampling, prompt in cases]
    alphas = ctx.budget.allocate({label: 1.0 for label in labels})
    budget = int(ctx.engine.gamma or 3) + 1
    pvalues: dict[str, float] = {}
    sizes: dict[str, int] = {}
    total = 0
    for index, (label, (sampling, prompt)) in enumerate(zip(labels, cases, strict=True)):
        law = ctx.probs_along("target", prompt, [0], sampling)[0]
        n, cells = pooled_pearson_plan(law, ctx.effect, alpha=alphas[label], power=POWER)
        sequential = DirichletEProcess(law, alphas[label], cap=2 * n) if ctx.design == "sequential" else None
        counts: dict[int, int] = {}
        i = 0
        while (sequential.decision is None) if sequential else (i < n):
            size = ctx.batch_size if sequential else min(ctx.batch_size, n - i)
            seeds = [ctx.seed_for("request", index, j) for j in range(i, i + size)]
            for completion in ctx.run_many([Request(prompt, budget, sampling, seed=s) for s in seeds]):
                if not completion.tokens:
                    return ctx.failed(f"{label}: the engine returned no token", Evidence.COUNT)
                if sequential and sequential.decision is not None:
                    break  # the e-process has stopped: later tokens of the batch are not used
                i += 1
                token = completion.tokens[0]
                counts[token] = counts.get(token, 0) + 1
                if sequential:
                    sequential.update(token)
            ctx.tick(i, n)
        total += i
        sizes[label] = i
        if sequential:
            # an e-value E gives the anytime-valid p-value min(1, 1 / E)
            pvalues[label] = min(1.0, math.exp(-sequential.log_e))
        else:
            pvalues[label] = pearson_test(counts, dict(enumerate(law)), cells).pvalue
        if pvalues[label] <= alphas[label]:
            break  # the evidence is in: no more requests
    return ctx.decide(
        pvalues,
        alphas,
        samples=total,
        details={"design": ctx.design, "pvalues": pvalues, "requests": sizes, "long_prompt": list(long)},
        failed=lambda worst, p: (
            f"the first token at {worst} does not follow the target's law "
            f"(p = {p:.3g}, {ctx.design} design, {sizes[worst]} requests)"
        ),
        passed=f"{total} first tokens over {len(pvalues)} prompt-settings follow the target's law "
        f"({ctx.design} design)",
    )
