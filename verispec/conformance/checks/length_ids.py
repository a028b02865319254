"""Lengths, stops and ids: the exact contract of what an engine returns.

A stop id accepted in the middle of a block ends the output there; a budget that ends inside
a block gives exactly that many tokens (and a stop inside the budget still wins); every id
lies inside the vocabulary (the harness also checks that on every answer of every check).
"""

from __future__ import annotations

from verispec.conformance.checks.context import Context
from verispec.conformance.checks.registry import CheckResult, Effect, check
from verispec.engines.protocol import Request, Sampling
from verispec.verdicts import Evidence

#: Tokens per request of the stop-id probe and the stop-id requests.
STOP_TOKENS = 24


@check(
    name="eos-length",
    description="nothing after a stop id accepted mid-block; budgets that cross a block are exact",
    effect=Effect("any violation"),
)
def eos_length(ctx: Context) -> CheckResult:
    problems = []
    # a stop id the target emits often, so that it is accepted in the middle of blocks
    probe = ctx.run(
        Request(ctx.prompts(1, "probe")[0], STOP_TOKENS, Sampling(1.0), seed=ctx.seed_for("probe"))
    )
    stop = max(set(probe.tokens), key=probe.tokens.count) if probe.tokens else 3
    for i, prompt in enumerate(ctx.prompts(6 if ctx.quick else 16, "stop")):
        c = ctx.run(
            Request(prompt, STOP_TOKENS, Sampling(1.0), seed=ctx.seed_for("stop", i), stop_ids=(stop,))
        )
        if stop in c.tokens:
            first = c.tokens.index(stop)
            if first != len(c.tokens) - 1:
                problems.append(f"tokens after the stop id {stop}: {c.tokens}")
            if c.finish_reason != "stop":
                problems.append(f"finish_reason {c.finish_reason!r} after a stop id: {c.tokens}")
        elif len(c.tokens) != STOP_TOKENS or c.finish_reason != "length":
            problems.append(f"{len(c.tokens)} tokens, finish_reason {c.finish_reason!r} without a stop id")
    gamma = int(ctx.engine.gamma or 3)
    for budget in range(1, gamma + 3):
        prompt = ctx.prompts(1, f"budget{budget}")[0]
        c = ctx.run(Request(prompt, budget, Sampling(1.0), seed=ctx.seed_for("budget", budget)))
        if len(c.tokens) != budget or c.finish_reason != "length":
            problems.append(f"max_new_tokens={budget} gave {len(c.tokens)} tokens ({c.finish_reason})")
    # a budget that ends inside a block that also holds a stop id: the stop must win
    for budget in range(2, gamma + 2):
        for i, prompt in enumerate(ctx.prompts(4 if ctx.quick else 10, f"stop-budget{budget}")):
            seed = ctx.seed_for("stop-budget", budget, i)
            c = ctx.run(Request(prompt, budget, Sampling(1.0), seed=seed, stop_ids=(stop,)))
            if stop in c.tokens and c.tokens.index(stop) != len(c.tokens) - 1:
                problems.append(f"max_new_tokens={budget}: tokens after the stop id {stop}: {c.tokens}")
            if len(c.tokens) > budget:
                problems.append(f"max_new_tokens={budget} gave {len(c.tokens)} tokens")
    if problems:
        return ctx.failed(problems[0], Evidence.COUNT, details={"problems": problems})
    return ctx.passed(f"stop id {stop} and budgets 1..{gamma + 2} handled", details={"stop_id": stop})


@check(
    name="ids-in-vocab",
    description="every emitted id lies inside the vocabulary",
    effect=Effect("any violation"),
)
def ids_in_vocab(ctx: Context) -> CheckResult:
    sampling = ctx.setting(Sampling(1.0, top_k=8), Sampling(1.0, top_p=0.8)) or Sampling(1.0)
    for i, prompt in enumerate(ctx.prompts(4, "ids")):
        ctx.run(Request(prompt, 16, sampling, seed=ctx.seed_for("request", i)))
    total = sum(len(c.tokens) for _, c in ctx.seen)
    return ctx.passed(f"{total} emitted ids, all inside 0..{ctx.vocab - 1}", samples=total)
