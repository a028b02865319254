"""Invariance checks: greedy output equals the baselines, with and without penalties and
inside ragged batches, and a seeded request repeats itself.

At temperature 0 a correct engine's output is a function of the prompt: the baseline's
argmax path (the target's own logits along the output, lowest id winning a tie), its own
non-speculative decoding, and the same request run alone all agree. A mismatch is excused
only where the baseline's top-two logit margin is below :data:`GREEDY_MARGIN` (fp32
rounding: batched and single-token kernels legitimately differ there), and each excuse is
listed in the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from verispec.conformance.checks.context import GREEDY_MARGIN, Context
from verispec.conformance.checks.registry import CheckResult, Effect, check
from verispec.engines.protocol import Completion, Request, Sampling
from verispec.verdicts import Evidence

#: The frequency penalty of the penalties check: large enough to bend a greedy path.
PENALTY = 2.0
#: Tokens per greedy request.
GREEDY_TOKENS = 24


def greedy_baseline(
    ctx: Context, prompt: tuple[int, ...], tokens: list[int], sampling: Sampling | None = None
) -> tuple[int | None, float]:
    """First position where ``tokens`` leaves the baseline's argmax path (with ``sampling``'s
    penalties), and that step's margin."""
    import numpy as np  # deferred: heavy

    logits = np.asarray(ctx.engine.logits_along("target", prompt, tokens), dtype=np.float64)
    for i, raw in enumerate(logits):
        row = raw if sampling is None else sampling.penalise(raw, tokens[:i], prompt)
        best = int(np.argmax(row))  # the lowest id wins a tie
        if tokens[i] != best:
            top2 = np.partition(row, -2)[-2:]
            return i, float(top2[1] - top2[0])
    return None, math.inf


def _divergence(
    ctx: Context,
    prompt: tuple[int, ...],
    tokens: list[int],
    other: list[int] | None,
    against: str,
    sampling: Sampling | None = None,
) -> dict[str, Any] | None:
    """Where greedy ``tokens`` first leave ``other`` (another run's tokens; ``None``: the
    baseline's argmax path), with the baseline's logit margin at that step."""
    if other is None:
        where, margin = greedy_baseline(ctx, prompt, tokens, sampling)
        if where is None:
            return None
    else:
        if other == tokens:
            return None
        pairs = zip([*other, -1], [*tokens, -1], strict=False)
        where = next(i for i, (a, b) in enumerate(pairs) if a != b)
        _, margin = greedy_baseline(ctx, prompt, tokens[:where] + other[where : where + 1], sampling)
    return {"prompt": list(prompt), "position": where, "margin": margin, "against": against}


def _triage(found: Sequence[dict[str, Any] | None]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Divergences split into the mismatches that count and those excused at near-ties."""
    mismatches: list[dict[str, Any]] = []
    excused: list[dict[str, Any]] = []
    for entry in found:
        if entry is not None:
            (excused if entry["margin"] < GREEDY_MARGIN else mismatches).append(entry)
    return mismatches, excused


def _greedy_runs(
    ctx: Context, prompts: list[tuple[int, ...]], sampling: Sampling, baseline: str
) -> tuple[list[Completion], list[dict[str, Any] | None]]:
    """Each prompt's greedy output, and where it leaves the baseline's argmax path (named
    ``baseline``) and the engine's own non-speculative decoding, if it has one."""
    outputs: list[Completion] = []
    found: list[dict[str, Any] | None] = []
    for i, prompt in enumerate(prompts):
        seed = ctx.seed_for("request", i)
        spec = ctx.run(Request(prompt, GREEDY_TOKENS, sampling, seed=seed))
        outputs.append(spec)
        found.append(_divergence(ctx, prompt, spec.tokens, None, baseline, sampling))
        if "non-speculative" in ctx.engine.capabilities:
            plain = ctx.run(Request(prompt, GREEDY_TOKENS, sampling, seed=seed, speculative=False))
            found.append(
                _divergence(ctx, prompt, spec.tokens, plain.tokens, "non-speculative decoding", sampling)
            )
    return outputs, found


@check(
    name="greedy-equivalence",
    description="greedy output equals the engine's non-speculative decoding and the token-by-token "
    "baseline (a mismatch is excused only at a logit margin below 1e-4)",
    needs=("target-logits",),
    effect=Effect("any mismatch"),
)
def greedy_equivalence(ctx: Context) -> CheckResult:
    prompts = ctx.prompts(3 if ctx.quick else 8, "greedy")
    _, found = _greedy_runs(ctx, prompts, Sampling(0.0), "token-by-token baseline")
    mismatches, excused = _triage(found)
    details = {"mismatches": mismatches, "excused_near_ties": excused, "margin_tolerance": GREEDY_MARGIN}
    if mismatches:
        m = mismatches[0]
        return ctx.failed(
            f"greedy output leaves the {m['against']} at token {m['position']} "
            f"of prompt {m['prompt']} (logit margin {m['margin']:.3g})",
            Evidence.MISMATCH,
            details=details,
        )
    note = f"; {len(excused)} mismatch(es) excused at near-ties" if excused else ""
    return ctx.passed(f"{len(prompts)} prompts identical to the baselines{note}", details=details)


@check(
    name="determinism",
    description="the same request and seed give the same tokens",
    needs=("seeded",),
    effect=Effect("any difference"),
)
def determinism(ctx: Context) -> CheckResult:
    for i, prompt in enumerate(ctx.prompts(2, "determinism")):
        request = Request(prompt, 24, Sampling(1.0), seed=ctx.seed_for("request", i))
        a, b = ctx.run(request), ctx.run(request)
        if a.tokens != b.tokens:
            return ctx.failed(f"the same request and seed gave {a.tokens} and {b.tokens}", Evidence.MISMATCH)
    return ctx.passed("two requests repeated with their seeds gave the same tokens")


@check(
    name="penalties",
    description="greedy output with a frequency penalty equals the penalised baseline and the engine's "
    "own non-speculative decoding",
    needs=("target-logits", "penalties"),
    effect=Effect("any mismatch"),
)
def penalties(ctx: Context) -> CheckResult:
    """Greedy requests with a frequency penalty against the baseline's penalised argmax path
    and the engine's own non-speculative decoding. The check also shows that the penalty
    changed the path of at least one prompt, or it is skipped with that reason."""
    prompts = ctx.prompts(3 if ctx.quick else 6, "penalty")
    outputs, found = _greedy_runs(
        ctx, prompts, Sampling(0.0, frequency_penalty=PENALTY), "penalised baseline"
    )
    mismatches, excused = _triage(found)
    # does the penalty matter here? the unpenalised argmax path leaves the penalised one
    bent = sum(
        greedy_baseline(ctx, prompt, out.tokens)[0] is not None
        for prompt, out in zip(prompts, outputs, strict=True)
    )
    details = {
        "frequency_penalty": PENALTY,
        "prompts_bent_by_the_penalty": bent,
        "mismatches": mismatches,
        "excused_near_ties": excused,
    }
    if mismatches:
        m = mismatches[0]
        return ctx.failed(
            f"with frequency penalty {PENALTY:g} the greedy output leaves the {m['against']} at token "
            f"{m['position']} of prompt {m['prompt']} (logit margin {m['margin']:.3g})",
            Evidence.MISMATCH,
            details=details,
        )
    if not bent:
        return ctx.skipped(
            "the penalty did not change the greedy path of any prompt: nothing was tested", details=details
        )
    return ctx.passed(
        f"{len(prompts)} penalised greedy outputs equal the baselines ({bent} bent by the penalty)",
        details=details,
    )


def _ragged_rounds(completions: list[Completion]) -> int | None:
    """Rounds (by index) in which the rows still running accepted different numbers of
    drafts; ``None`` when the engine reports no rounds."""
    if any(c.rounds is None for c in completions):
        return None
    rounds = [c.rounds or [] for c in completions]
    deepest = max((len(r) for r in rounds), default=0)
    return sum(len({r[i].accepted for r in rounds if i < len(r)}) > 1 for i in range(deepest))


@check(
    name="ragged-batch",
    description="greedy rows of one full batch with ragged prompt lengths, budgets and acceptance equal "
    "the same requests run alone and the token-by-token baseline",
    needs=("target-logits", "batch"),
    effect=Effect("any mismatch"),
)
def ragged_batch(ctx: Context) -> CheckResult:
    """Greedy rows of one full batch with prompts of different lengths (so lengths and
    acceptance are ragged) and budgets of different lengths (so short rows leave the batch
    while long ones run on for many rounds), against the same requests run alone and
    against the baseline. With one budget for every row, the rows finished within a round or
    two of each other, and a bug in the bookkeeping of a batch that loses rows
    (``finished-row-shift``) had almost no rounds to show in."""
    rows = ctx.batch_size
    step = 4 if ctx.quick else 8
    requests = [
        Request(
            ctx.prompts(1, f"row{i}", length=1 + i)[0],
            step * (i + 1),
            Sampling(0.0),
            seed=ctx.seed_for("request", i),
        )
        for i in range(rows)
    ]
    batched = ctx.run_many(requests)
    alone = [ctx.run(r) for r in requests]
    found = []
    for row, (request, together, single) in enumerate(zip(requests, batched, alone, strict=True)):
        for entry in (
            _divergence(ctx, request.prompt, together.tokens, single.tokens, "the same request alone"),
            _divergence(ctx, request.prompt, together.tokens, None, "token-by-token baseline"),
        ):
            if entry is not None:
                found.append({**entry, "row": row})
    mismatches, excused = _triage(found)
    ragged = _ragged_rounds(batched)
    lengths = [len(c.rounds) for c in batched if c.rounds is not None]
    details = {
        "rows": rows,
        "budgets": [r.max_new_tokens for r in requests],
        "ragged_rounds": ragged,
        # rounds run after the first row had left the batch
        "rounds_after_a_row_left": max(lengths) - min(lengths) if len(lengths) == rows else None,
        "mismatches": mismatches,
        "excused_near_ties": excused,
        "margin_tolerance": GREEDY_MARGIN,
    }
    if mismatches:
        m = mismatches[0]
        return ctx.failed(
            f"batch row {m['row']} leaves {m['against']} at token {m['position']} "
            f"(logit margin {m['margin']:.3g})",
            Evidence.MISMATCH,
            details=details,
        )
    if ragged == 0:
        return ctx.skipped(
            "no round had ragged acceptance: the ragged path was not exercised", details=details
        )
    shown = "an unknown number of" if ragged is None else str(ragged)
    after = details["rounds_after_a_row_left"]
    left = "" if after is None else f", {after} after a row left the batch"
    return ctx.passed(
        f"{rows} batch rows with {shown} ragged rounds{left} equal each request alone and the baseline",
        details=details,
    )
