"""Acceptance accounting: the rounds an engine reports against what its models predict.

Given a round's prefix, its first draft is accepted with probability ``sum min(p, q)``
(token-level verification, ``p`` and ``q`` the target's and the draft's laws there), whatever
happened before; so the number of first-draft acceptances over rounds is tested against the
sum of those predictions with a z-test, over all rounds and over the rounds that follow a
full acceptance (where the draft cache must have been caught up). The first draft after a
full acceptance is also tested against the draft model's law at the committed prefix
(randomized PIT, the q-contract), and every round must commit accepted + 1 tokens. At
temperature 0, first, every reported draft must be the draft model's argmax.

An engine whose verifier receives no draft law (``point-mass-drafts``: vLLM's argmax drafts,
prompt lookup, custom proposers) accepts a draft ``x`` with probability ``p(x)``; its
prediction needs only the target and the drafts it reports, so the check runs on it without a
draft model (then without the argmax path and the q-contract, which need one). A step that
proposed no drafts is not a round here.

The three statistical tests share the check's alpha in equal parts, and each is planned and
decided at its part. The z-test over all rounds carries the declared effect (the mean
first-draft acceptance off by ``delta``); its power at the rounds drawn is the check's
reported power, and the other two tests' powers are reported beside it.
"""

from __future__ import annotations

import math
from typing import Any

from verispec.conformance.checks.context import GREEDY_MARGIN, Context
from verispec.conformance.checks.registry import POWER, CheckResult, Effect, check
from verispec.engines.protocol import Request, Sampling
from verispec.stats.pit import ks_uniform, order_tokens, randomized_pit
from verispec.stats.plan import dkw_power, dkw_sample_size, z_test_power, z_test_sample_size
from verispec.verdicts import Evidence

#: The three statistical tests, each at a third of the check's alpha.
TESTS = ("first-draft acceptance", "acceptance after full acceptance", "draft law after full acceptance")


def _survival_along(
    ctx: Context, prefix: tuple[int, ...], drafts: tuple[int, ...], sampling: Sampling, point_mass: bool
) -> list[float]:
    """``P(K >= j | drafts)`` for j = 1..gamma under token-level verification (with
    ``point_mass``, q is 1 at each draft)."""
    p_rows = ctx.probs_along("target", prefix, list(drafts), sampling)
    q_rows = [None] * len(drafts) if point_mass else ctx.probs_along("draft", prefix, list(drafts), sampling)
    out, running = [], 1.0
    for x, p, q in zip(drafts, p_rows, q_rows, strict=True):
        if q is None:
            running *= float(p[x])
        else:
            running *= min(1.0, p[x] / q[x]) if q[x] > 0 else 0.0
        out.append(running)
    return out


def _point_masses(rows: list[Any]) -> list[Any]:
    """The draft law of argmax drafting: 1 at each row's argmax."""
    import numpy as np  # deferred: heavy

    out = []
    for row in rows:
        one = np.zeros_like(row)
        one[int(np.argmax(row))] = 1.0
        out.append(one)
    return out


def _survival_summary(measured: list[int], predicted: list[list[float]]) -> dict[str, Any]:
    depth = max((len(row) for row in predicted), default=0)
    padded = [row + [0.0] * (depth - len(row)) for row in predicted]
    n = max(len(measured), 1)
    return {
        "rounds": len(measured),
        "measured": [sum(1 for a in measured if a >= j) / n for j in range(1, depth + 1)],
        "predicted": [sum(row[j] for row in padded) / n for j in range(depth)],
    }


def _greedy_draft_path(ctx: Context) -> tuple[list[dict[str, Any]], int]:
    """At temperature 0 every reported draft must be the draft model's argmax after the
    round's prefix and the drafts before it (a draft cache left behind or shifted changes
    it). Returns the unexcused mismatches and the number of drafts compared."""
    import numpy as np  # deferred: heavy

    mismatches: list[dict[str, Any]] = []
    compared = 0
    for i, prompt in enumerate(ctx.prompts(3 if ctx.quick else 6, "draft-path")):
        c = ctx.run(Request(prompt, 24, Sampling(0.0), seed=ctx.seed_for("draft-path", i)))
        sequence = [*prompt, *c.tokens]
        for index, r in enumerate(c.rounds or []):
            if not r.drafts or r.start > len(sequence):
                continue
            rows = np.asarray(ctx.engine.logits_along("draft", tuple(sequence[: r.start]), list(r.drafts)))
            for d, (draft, row) in enumerate(zip(r.drafts, rows, strict=True)):
                compared += 1
                best = int(np.argmax(row))
                if draft != best:
                    margin = float(row[best] - row[draft])
                    if margin >= GREEDY_MARGIN:
                        mismatches.append(
                            {"prompt": list(prompt), "round": index, "draft": d, "margin": margin}
                        )
    return mismatches, compared


@check(
    name="acceptance-accounting",
    description="greedy drafts follow the draft model's argmax path; first-draft acceptance matches "
    "sum min(p, q) from the models; each round commits accepted + 1 tokens",
    needs=("target-logits", "round-stats"),
    needs_one_of=("draft-model", "point-mass-drafts"),
    statistical=True,
    effect=Effect("mean first-draft acceptance off by {}", 0.1),
)
def acceptance_accounting(ctx: Context) -> CheckResult:
    """See the module docstring."""
    import numpy as np  # deferred: heavy
    from scipy import stats  # deferred: heavy

    capabilities = ctx.engine.capabilities
    has_draft = "draft-model" in capabilities
    point_mass = "point-mass-drafts" in capabilities
    path_mismatches, path_compared = _greedy_draft_path(ctx) if has_draft else ([], 0)
    if path_mismatches:
        m = path_mismatches[0]
        return ctx.failed(
            f"greedy draft {m['draft']} of round {m['round']} (prompt {m['prompt']}) is not the draft "
            f"model's argmax (logit margin {m['margin']:.3g}); {len(path_mismatches)} of "
            f"{path_compared} drafts differ: the draft's cache or positions are off",
            Evidence.MISMATCH,
            details={"draft_path_mismatches": path_mismatches[:20], "drafts_compared": path_compared},
        )

    assert ctx.budget is not None
    alphas = ctx.budget.allocate({label: 1.0 for label in TESTS})
    sampling = Sampling(1.0)
    delta = ctx.effect
    rounds_needed = z_test_sample_size(delta, alpha=alphas[TESTS[0]], power=POWER)
    # the q-contract's KS test plans for twice the effect (a KS distance, not a mean)
    pit_needed = dkw_sample_size(2 * delta, alphas[TESTS[2]], POWER) if has_draft else 0
    # a request gives several rounds; an engine that drafts rarely stops the run at one request
    # per planned round (its power, at the rounds drawn, is reported), and one that drafts
    # nothing at all in its first requests is skipped, not looped on
    max_requests = rounds_needed
    probe_requests = 8 * ctx.batch_size
    observed = predicted = variance = 0.0
    # the same sums over rounds that follow a full acceptance, where draft-cache sync matters
    after = [0.0, 0.0, 0.0]
    after_rounds = 0
    pit_rng = ctx.rng("q-contract")
    draft_pits: list[float] = []
    # survival of the accepted length: measured, and predicted from the models along each
    # round's own drafts (prod min(1, p/q): unbiased for token-level verification)
    survival_cap = 100 if ctx.quick else 300
    measured_k: list[int] = []
    predicted_k: list[list[float]] = []
    n_rounds = 0
    k = 0
    # the q-contract sample may take more requests than the rounds, but at most three times
    # as many (a draft that is rarely fully accepted leaves that test short, never the run hung)
    k_rounds = 0
    while (n_rounds < rounds_needed and k < max_requests) or (
        len(draft_pits) < pit_needed and k < 3 * k_rounds
    ):
        if k >= probe_requests and not n_rounds:
            return ctx.skipped(f"the engine proposed no drafts in {k} requests at temperature 1")
        batch = [
            Request(ctx.prompts(1, f"rounds{j}")[0], 24, sampling, seed=ctx.seed_for("rounds", j))
            for j in range(k, k + ctx.batch_size)
        ]
        completions = ctx.run_many(batch)
        k += len(batch)
        for request, c in zip(batch, completions, strict=True):
            prompt = request.prompt
            if c.rounds is None:
                return ctx.skipped("the engine reported no round statistics")
            target = ctx.probs_along("target", prompt, c.tokens, sampling)
            draft = ctx.probs_along("draft", prompt, c.tokens, sampling) if has_draft else None
            if draft is not None and point_mass:
                draft = _point_masses(draft)
            for index, r in enumerate(c.rounds):
                # the last round of a request, or one in which the engine ended its own request,
                # may be cut short
                last = index == len(c.rounds) - 1 or r.ended
                if r.committed != r.accepted + 1 and not (last and r.committed <= r.accepted + 1):
                    return ctx.failed(
                        f"a round accepted {r.accepted} drafts but committed {r.committed} "
                        "tokens: the round contract is accepted + 1",
                        Evidence.COUNT,
                        details={"prompt": list(prompt)},
                    )
                offset = r.start - len(prompt)
                if offset >= len(c.tokens) or (point_mass and not r.drafts):
                    continue
                if r.drafts and len(measured_k) < survival_cap:
                    measured_k.append(r.accepted)
                    predicted_k.append(
                        _survival_along(ctx, (*prompt, *c.tokens[:offset]), r.drafts, sampling, point_mass)
                    )
                if draft is not None:
                    beta = float(np.minimum(target[offset], draft[offset]).sum())
                else:  # a point mass at the reported draft
                    beta = float(target[offset][r.drafts[0]])
                hit = 1.0 if r.accepted >= 1 else 0.0
                observed += hit
                predicted += beta
                variance += beta * (1 - beta)
                n_rounds += 1
                if index > 0 and c.rounds[index - 1].accepted == ctx.engine.gamma:
                    after[0] += hit
                    after[1] += beta
                    after[2] += beta * (1 - beta)
                    after_rounds += 1
                    if r.drafts and draft is not None:
                        q = draft[offset]
                        x = r.drafts[0]
                        draft_pits.append(
                            randomized_pit(x, q, order_tokens("target-probability", q), pit_rng.random())
                        )
        if (n_rounds >= rounds_needed or k >= max_requests) and not k_rounds:
            k_rounds = k
        ctx.tick(n_rounds, rounds_needed)
    if not n_rounds:
        return ctx.skipped(f"the engine proposed no drafts in {k} requests at temperature 1")
    if any(math.isnan(u) for u in draft_pits):
        return ctx.failed(
            "a draft the draft model cannot propose after a full acceptance",
            Evidence.IMPOSSIBLE,
            alpha=ctx.alpha,
            pvalue=0.0,
        )
    zscore = (observed - predicted) / math.sqrt(max(variance, 1e-12))
    z_after = (after[0] - after[1]) / math.sqrt(max(after[2], 1e-12)) if after[2] > 0 else 0.0
    pvalues = {
        TESTS[0]: float(2 * stats.norm.sf(abs(zscore))),
        TESTS[1]: float(2 * stats.norm.sf(abs(z_after))),
        TESTS[2]: float(ks_uniform(draft_pits)[1]) if draft_pits else 1.0,
    }
    powers = {
        TESTS[0]: z_test_power(delta, n_rounds, alpha=alphas[TESTS[0]]),
        TESTS[1]: z_test_power(delta, after_rounds, alpha=alphas[TESTS[1]]),
        TESTS[2]: dkw_power(2 * delta, len(draft_pits), alphas[TESTS[2]]),
    }
    details = {
        "rounds": n_rounds,
        "rounds_planned": rounds_needed,
        "first_draft_accepted": observed / n_rounds,
        "predicted": predicted / n_rounds,
        "z": zscore,
        "z_after_full_acceptance": z_after,
        "rounds_after_full_acceptance": after_rounds,
        "drafts_after_full_acceptance": len(draft_pits),
        "drafts_planned": pit_needed,
        "pvalues": pvalues,
        "power_by_test": powers,
        "survival": _survival_summary(measured_k, predicted_k),
        "greedy_drafts_compared": path_compared,
    }
    return ctx.decide(
        pvalues,
        alphas,
        samples=n_rounds,
        details=details,
        power=powers[TESTS[0]],
        failed=lambda worst, p: (
            f"{worst}: first drafts accepted {observed / n_rounds:.3f} of the time, "
            f"the models predict {predicted / n_rounds:.3f} (p = {p:.3g})"
        ),
        passed=f"acceptance {observed / n_rounds:.3f} vs predicted {predicted / n_rounds:.3f} "
        f"over {n_rounds} rounds",
    )
