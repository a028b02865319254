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
#: The penalties check's settings: the frequency penalty, or for an engine that cannot take it
#: the presence penalty, or the repetition penalty (each large enough to bend a greedy path).
PENALISED = (
    Sampling(0.0, frequency_penalty=PENALTY),
    Sampling(0.0, presence_penalty=PENALTY),
    Sampling(0.0, repetition_penalty=PENALTY),
)
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
    description="greedy output with a frequency penalty (or the first penalty the engine takes) equals "
    "the penalised baseline and the engine's own non-speculative decoding",
    needs=("target-logits", "penalties"),
    effect=Effect("any mismatch"),
)
def penalties(ctx: Context) -> CheckResult:
    """Greedy requests with a frequency penalty (for an engine that cannot take it, the first
    of :data:`PENALISED` it takes) against the baseline's penalised argmax path and the
    engine's own non-speculative decoding. The check also shows that the penalty changed the
    path of at least one prompt, or it is skipped with that reason."""
    prompts = ctx.prompts(3 if ctx.quick else 6, "penalty")
    sampling = ctx.setting(*PENALISED)
    if sampling is None:
        return ctx.skipped(f"the engine takes none of the penalties: {'; '.join(ctx.left_out.values())}")
    outputs, found = _greedy_runs(ctx, prompts, sampling, "penalised baseline")
    mismatches, excused = _triage(found)
    # does the penalty matter here? the unpenalised argmax path leaves the penalised one
    bent = sum(
        greedy_baseline(ctx, prompt, out.tokens)[0] is not None
        for prompt, out in zip(prompts, outputs, strict=True)
    )
    details = {
        "setting": sampling.describe(),
        "prompts_bent_by_the_penalty": bent,
        "mismatches": mismatches,
        "excused_near_ties": excused,
    }
    if mismatches:
        m = mismatches[0]
        return ctx.failed(
            f"with {sampling.describe()} the greedy output leaves the {m['against']} at token "
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


#: The sampled settings of seeded-equivalence: plain, tempered with a nucleus, hot with every
#: truncation (the chain's order matters once the temperature is not 1), and penalised (the
#: penalties read the history, which during verification must hold committed tokens only;
#: left out for engines without ``penalties``).
SEEDED_SETTINGS = (
    (Sampling(1.0),),
    (Sampling(0.7, top_p=0.9),),
    (Sampling(1.5, top_k=8, min_p=0.05), Sampling(1.5, top_k=8)),
    (Sampling(1.0, frequency_penalty=0.5, presence_penalty=0.5),),
)
#: Tokens per seeded-equivalence request.
SEEDED_TOKENS = 32
#: The largest shift of a law's cumulative sum that float32 rounding alone can cause between
#: the two paths, beside the engine's measured logit noise.
CUMSUM_ROUNDING = 1e-6


def near_tie_bound(logit_noise: float) -> float:
    """How far the cumulative sum an engine draws from can move between its batched (verify)
    and one-at-a-time (plain) logits: a logit gap ``g`` moves the law's cumulative sum by at
    most ``e^(2g) - 1``, taken twice for margin, plus :data:`CUMSUM_ROUNDING`."""
    return 2 * math.expm1(2 * logit_noise) + CUMSUM_ROUNDING


def mass_between(law: Any, a: int, b: int) -> float:
    """The law's mass strictly between tokens ``a`` and ``b`` in the order an engine's draw walks
    its candidates, taken as the smaller of id order and descending probability: the least the
    cumulative sum must move for one uniform to pick ``b`` where it picked ``a``."""
    import numpy as np  # deferred: heavy

    law = np.asarray(law, dtype=np.float64)
    lo, hi = sorted((a, b))
    by_id = float(law[lo + 1 : hi].sum())
    order = np.argsort(-law, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    lo, hi = sorted((int(rank[a]), int(rank[b])))
    by_probability = float(law[order[lo + 1 : hi]].sum())
    return min(by_id, by_probability)


@check(
    name="seeded-equivalence",
    description="at T > 0, a speculative request gives token for token what the same request and seed "
    "give without speculation (engines that spend one draw per committed token: sample-and-match)",
    needs=("seeded-equivalence", "non-speculative"),
    effect=Effect("any difference beyond a float near tie"),
)
def seeded_equivalence(ctx: Context) -> CheckResult:
    """Each prompt and setting runs twice with one seed, speculative and not. Both paths draw
    the same uniforms; their logits differ only by the engine's numerical noise between a
    batched and a one-at-a-time evaluation (``logit_noise``, which the engine measures). Where
    the outputs part, the target's law there decides: if the two tokens are separated by less
    mass than that noise can move the cumulative sum (:func:`near_tie_bound`), the uniform fell
    on a boundary at float precision and the request is excused, with its numbers in the
    report; any other parting, or a token the law forbids, fails. Where the engine takes
    scripted drafts, each request forces its first rejection at a chosen position. The check
    counts the rounds that rejected a draft, and is skipped when the drafter never proposed or
    every request parted at a near tie: then nothing was tested."""
    settings = ctx.settings(list(SEEDED_SETTINGS))
    prompts = ctx.prompts(4 if ctx.quick else 12, "seeded-equivalence")
    scripted = "scripted-drafts" in ctx.engine.capabilities
    gamma = int(ctx.engine.gamma or 1)
    bound = near_tie_bound(float(getattr(ctx.engine, "logit_noise", 0.0) or 0.0))
    equal = rounds = rejections = 0
    near_ties: list[dict[str, Any]] = []
    for s, sampling in enumerate(settings):
        for i, prompt in enumerate(prompts):
            seed = ctx.seed_for("request", s, i)
            # where drafts can be placed, the first rejection is forced at each position in turn
            script = {"kind": "forced-rejection", "position": i % gamma} if scripted else None
            spec = ctx.run(Request(prompt, SEEDED_TOKENS, sampling, seed=seed, script=script))
            plain = ctx.run(Request(prompt, SEEDED_TOKENS, sampling, seed=seed, speculative=False))
            rounds += len(spec.rounds or [])
            rejections += sum(r.rejected for r in spec.rounds or [])
            if spec.tokens == plain.tokens:
                equal += 1
                continue
            parting = _parting(ctx, prompt, spec.tokens, plain.tokens, sampling)
            if parting["mass_between"] is not None and parting["mass_between"] <= bound:
                near_ties.append({"prompt": list(prompt), "seed": seed, **parting})
                continue
            return ctx.failed(
                parting["reason"],
                Evidence.MISMATCH,
                details={
                    "prompt": list(prompt),
                    "seed": seed,
                    "sampling": sampling.describe(),
                    "speculative": spec.tokens,
                    "non_speculative": plain.tokens,
                    "near_tie_bound": bound,
                    **{k: v for k, v in parting.items() if k != "reason"},
                },
            )
    details = {
        "requests": equal + len(near_ties),
        "equal": equal,
        "rounds": rounds,
        "rounds_with_a_rejection": rejections,
        "near_tie_bound": bound,
        "near_ties": near_ties,
    }
    if rounds == 0:
        return ctx.skipped("the drafter proposed nothing: speculation was not exercised", details=details)
    if equal == 0:
        return ctx.skipped("every request parted at a float near tie: nothing was compared", details=details)
    excused = (
        f"; {len(near_ties)} parted at a float near tie (the two tokens separated by at most "
        f"{max(t['mass_between'] for t in near_ties):.2g} of mass, bound {bound:.2g})"
        if near_ties
        else ""
    )
    return ctx.passed(
        f"{equal} seeded requests over {len(settings)} settings equal their non-speculative runs "
        f"({rounds} rounds, {rejections} with a rejection){excused}",
        details=details,
    )


def _parting(
    ctx: Context, prompt: tuple[int, ...], spec: list[int], plain: list[int], sampling: Sampling
) -> dict[str, Any]:
    """Where two seeded outputs part: the position, both tokens, the target's law of each there
    and the mass between them (None where one output only stopped sooner or the speculative
    token is one the law forbids), with a sentence for the report."""
    where = next(i for i, (a, b) in enumerate(zip([*spec, -1], [*plain, -1], strict=False)) if a != b)
    out: dict[str, Any] = {"position": where, "mass_between": None}
    if where >= min(len(spec), len(plain)):
        out["reason"] = (
            f"with one seed at {sampling.describe()}, the outputs have {len(spec)} and {len(plain)} tokens"
        )
        return out
    law = ctx.probs_along("target", prompt, plain[: where + 1], sampling)[where]
    a, b = spec[where], plain[where]
    out.update(speculative_token=a, plain_token=b, p_speculative=float(law[a]), p_plain=float(law[b]))
    if law[a] > 0:
        out["mass_between"] = mass_between(law, a, b)
    out["reason"] = (
        f"with one seed at {sampling.describe()}, the speculative output leaves the non-speculative one at "
        f"token {where} of prompt {list(prompt)}: {a} (target probability {law[a]:.3g}) instead of {b} "
        f"({law[b]:.3g}); the target's mass between them is "
        + (
            "none: the law forbids the speculative token"
            if out["mass_between"] is None
            else f"{out['mass_between']:.3g}"
        )
    )
    return out
