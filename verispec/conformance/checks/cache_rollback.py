"""Cache rollback: after a rejection forced at every draft position, and after full
acceptance, the following tokens keep the target's law.

Two ways to force a rejection, one stage each:

* A scripted draft (capability ``scripted-drafts``) puts the first rejection of a round at a
  chosen position ``0 .. gamma - 1``, or accepts every draft, at temperature 1 with top-k or
  top-p; a cache cropped one slot too far or too short, or a bonus row sampled with the wrong
  settings, then changes the law of the tokens that follow, which the PIT battery of the
  sampling-law check tests.
* An engine that takes drafts only from a draft model (``bigram-drafts``) drafts with
  verispec's programmable bigram (:mod:`verispec.engines.bigram`) at temperature 0: for each
  prompt and each position, a table planned on the target's greedy continuation puts each
  round's first rejection at that position (or accepts every draft), and the output must be
  the baseline's argmax path, as in greedy-equivalence (a mismatch is excused only at a logit
  margin below its tolerance). A cache cropped wrong changes the next argmax. The report
  counts where the rounds' first rejections fell: from the engine's round statistics where it
  reports them, else from the plan.
"""

from __future__ import annotations

from typing import Any

from verispec.conformance.checks.context import GREEDY_MARGIN, Context
from verispec.conformance.checks.invariance import GREEDY_TOKENS, greedy_baseline
from verispec.conformance.checks.registry import CheckResult, check
from verispec.conformance.checks.sampling_law import PIT_EFFECT, pit_check, with_penalties
from verispec.engines.bigram import plan_rejections
from verispec.engines.protocol import Request, Sampling
from verispec.verdicts import Evidence

#: Label of the rounds that accepted every draft, in the report's counts.
FULL = "none (all accepted)"


@check(
    name="cache-rollback",
    description="after a rejection forced at every position (and full acceptance) the following tokens "
    "keep the target's law (greedy: the argmax path, with drafts from verispec's bigram draft model)",
    needs=("target-logits",),
    needs_one_of=("scripted-drafts", "bigram-drafts"),
    statistical=True,
    effect=PIT_EFFECT,
)
def cache_rollback(ctx: Context) -> CheckResult:
    greedy: dict[str, Any] | None = None
    if "bigram-drafts" in ctx.engine.capabilities:
        greedy = _greedy_stage(ctx)
        if "failure" in greedy:
            failure = greedy.pop("failure")
            return ctx.failed(failure, Evidence.MISMATCH, details={"greedy": greedy})
        if "scripted-drafts" not in ctx.engine.capabilities:
            return ctx.passed(_greedy_summary(greedy), details={"greedy": greedy})
    result = _sampled_stage(ctx)
    if greedy is not None:
        result.details = {**(result.details or {}), "greedy": greedy}
        result.reason = f"{_greedy_summary(greedy)}; {result.reason}"
    return result


def _sampled_stage(ctx: Context) -> CheckResult:
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


def greedy_path(ctx: Context, prompt: tuple[int, ...], n: int) -> list[int]:
    """The baseline's argmax path of ``n`` tokens after ``prompt`` (the lowest id wins a tie)."""
    import numpy as np  # deferred: heavy

    tokens: list[int] = []
    for _ in range(n):
        # the row after the last token: logits along the path and one placeholder token
        row = np.asarray(ctx.engine.logits_along("target", prompt, [*tokens, 0]), dtype=np.float64)[-1]
        tokens.append(int(np.argmax(row)))
    return tokens


def _greedy_stage(ctx: Context) -> dict[str, Any]:
    """Each prompt, once per forced position and once accepting every draft, at temperature
    0 with a bigram draft planned on the baseline's greedy continuation. Returns the counts
    and excused near-ties, with ``failure`` set at the first mismatch that counts."""
    gamma = int(ctx.engine.gamma or 3)
    prompts = ctx.prompts(2 if ctx.quick else 6, "rollback-greedy")
    wanted: dict[str, int] = {}
    fell: dict[str, int] = {}
    sources: set[str] = set()
    excused: list[dict[str, Any]] = []
    # where the engine reports rounds: how many of the planned rounds it ran as planned (same
    # start, same accepted count)
    as_planned = planned = 0
    requests = 0
    for i, prompt in enumerate(prompts):
        path = greedy_path(ctx, prompt, GREEDY_TOKENS)
        for position in range(gamma + 1):
            plan = plan_rejections(prompt, path, gamma, position, ctx.vocab, lead=ctx.engine.drafting_lead)
            request = Request(
                prompt, GREEDY_TOKENS, Sampling(0.0), seed=ctx.seed_for("rollback", i), script=plan.script()
            )
            completion = ctx.run(request)
            requests += 1
            label = FULL if position >= gamma else str(position)
            wanted[label] = wanted.get(label, 0) + len(plan.rounds)
            reported = completion.rounds or []
            ran = {(r.start, r.accepted) for r in reported}
            if reported:
                planned += len(plan.rounds)
                as_planned += sum((r.start, r.accepted) in ran for r in plan.rounds)
            # the engine's rounds where they say how many drafts each proposed, else the plan's
            if reported and all(r.drafts or r.proposed is not None for r in reported):
                rounds: list[Any] = list(reported)
                sources.add("the engine's round statistics")
            else:
                rounds = list(plan.rounds)
                sources.add("the plan")
            for r in rounds:
                key = str(r.accepted) if r.rejected else FULL
                fell[key] = fell.get(key, 0) + 1
            where, margin = greedy_baseline(ctx, prompt, completion.tokens)
            if where is None:
                continue
            entry = {
                "prompt": list(prompt),
                "forced_position": label,
                "position": where,
                "margin": margin,
                "planned_rounds": [[r.start, r.proposed, r.accepted] for r in plan.rounds],
            }
            if margin < GREEDY_MARGIN:
                excused.append(entry)
                continue
            return {
                "failure": f"with a bigram draft forcing the first rejection at {label} in each round, the "
                f"greedy output leaves the baseline's argmax path at token {where} of prompt {list(prompt)} "
                f"(logit margin {margin:.3g})",
                "mismatch": entry,
                "requests": requests,
            }
    return {
        "requests": requests,
        "rounds_planned_per_position": wanted,
        "first_rejections": fell,
        "first_rejections_from": " and ".join(sorted(sources)),
        "planned_rounds_reported": {"as_planned": as_planned, "planned": planned} if planned else None,
        "excused_near_ties": excused,
        "margin_tolerance": GREEDY_MARGIN,
    }


def _greedy_summary(greedy: dict[str, Any]) -> str:
    fell = ", ".join(f"{k}: {v}" for k, v in sorted(greedy["first_rejections"].items()))
    excused = greedy["excused_near_ties"]
    note = f"; {len(excused)} excused at near-ties" if excused else ""
    reported = greedy.get("planned_rounds_reported")
    if reported:
        note += (
            f"; the engine reports {reported['as_planned']} of the {reported['planned']} planned rounds "
            "as planned"
        )
    return (
        f"{greedy['requests']} greedy requests with bigram drafts follow the argmax path (first rejections "
        f"by draft position, from {greedy['first_rejections_from']}: {fell}){note}"
    )
