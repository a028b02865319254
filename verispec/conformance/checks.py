"""The registry of conformance checks, each with its declared error rates and a mutant it catches.

Every statistical check declares its false-alarm rate (its share of the run's budget), the
effect it must detect and its power, and computes its sample size from them. A check whose
capability the engine lacks is skipped with the reason. An engine error in one request is
recorded and the check fails with it; the other checks go on.

Sampling-law checks use the token-by-token baseline: the target's own conditionals along
the engine's output, from a plain forward pass, transformed with the request's sampling
settings. Each token becomes a randomized PIT value (:mod:`verispec.stats.pit`), exactly
uniform when the engine is right; a battery of prefix-dependent orderings with exact KS
tests catches a wrong law. The sample size comes from the Dvoretzky-Kiefer-Wolfowitz
inequality (Massart's constant) for a KS distance ``EFFECT_KS`` between the PIT law and
uniform, split between the two error rates.
"""

from __future__ import annotations

import itertools
import math
import random as _random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.conformance.proxy import EngineOutputError, EngineProxy
from verispec.engines.protocol import Completion, Request, Sampling
from verispec.stats.pit import pit_battery

__all__ = ["CHECKS", "Check", "CheckResult", "Context", "dkw_sample_size"]

#: Smallest KS distance between the PIT law and uniform the law checks must detect.
EFFECT_KS = 0.1
#: Power of every statistical check against its declared effect.
POWER = 0.99
#: Logit-margin below which a greedy mismatch is excused (fp32 rounding, stated, never loosened).
GREEDY_MARGIN = 1e-4
#: Requests per generate call for engines with the ``batch`` capability.
BATCH = 8


def dkw_sample_size(effect: float, alpha: float, power: float, tests: int = 1) -> int:
    """Samples for a KS test to detect distance ``effect`` (DKW with Massart's constant).

    The distance is split evenly between the false-alarm and the miss envelopes, as in
    TensorFlow Probability's ``min_num_samples_for_dkwm_cdf_test``; ``tests`` Bonferroni-splits
    alpha over a battery.
    """
    return math.ceil(max(math.log(2 * tests / alpha), math.log(2 / (1 - power))) / (2 * (effect / 2) ** 2))


@dataclass
class CheckResult:
    name: str
    status: str  # "pass", "fail", "skip", "error"
    reason: str
    alpha: float | None = None
    power: float | None = None
    effect: str | None = None
    pvalue: float | None = None
    samples: int = 0
    generate_calls: int = 0
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "status": self.status,
            "reason": self.reason,
            "alpha": self.alpha,
            "power": self.power,
            "effect": self.effect,
            "pvalue": self.pvalue,
            "samples": self.samples,
            "generate_calls": self.generate_calls,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


@dataclass
class Context:
    engine: EngineProxy
    alpha: float
    quick: bool
    seed: int
    design: str = "planned"  # or "sequential" (the first-token law's e-process)
    progress: Callable[[int, int], None] | None = None  # (done, planned) on long checks
    seen: list[tuple[Request, Completion]] = field(default_factory=list)

    def tick(self, done: int, planned: int) -> None:
        if self.progress is not None:
            self.progress(done, planned)

    @property
    def vocab(self) -> int:
        return self.engine.vocab_size

    def prompts(self, count: int, salt: str, length: int = 4) -> list[tuple[int, ...]]:
        rng = _random.Random(f"verispec-conform:{self.seed}:{salt}")
        return [tuple(rng.randrange(3, self.vocab) for _ in range(length)) for _ in range(count)]

    @property
    def batch_size(self) -> int:
        """Requests per generate call: a batch where the engine takes one."""
        return BATCH if "batch" in self.engine.capabilities else 1

    def run(self, request: Request) -> Completion:
        return self._validate(request, self.engine.generate(request))

    def run_many(self, requests: list[Request]) -> list[Completion]:
        """The requests in one batch where the engine takes batches, else one by one."""
        if len(requests) > 1 and "batch" in self.engine.capabilities:
            completions = self.engine.generate_many(requests)
            return [self._validate(r, c) for r, c in zip(requests, completions, strict=True)]
        return [self.run(r) for r in requests]

    def _validate(self, request: Request, completion: Completion) -> Completion:
        self.seen.append((request, completion))
        bad = [t for t in completion.tokens if not (isinstance(t, int) and 0 <= t < self.vocab)]
        if bad:
            raise EngineOutputError(f"returned token {bad[0]!r} outside the vocabulary 0..{self.vocab - 1}")
        if len(completion.tokens) > request.max_new_tokens:
            raise EngineOutputError(
                f"returned {len(completion.tokens)} tokens for max_new_tokens={request.max_new_tokens}"
            )
        return completion

    def probs_along(
        self, model: str, prompt: tuple[int, ...], tokens: list[int], sampling: Sampling
    ) -> list[list[float]]:
        import numpy as np

        from verispec.core.transforms import apply_float

        if not tokens:
            return []
        logits = np.asarray(self.engine.logits_along(model, prompt, tokens), dtype=np.float64)
        logits = np.stack([sampling.penalise(row, tokens[:i]) for i, row in enumerate(logits)])
        logits -= logits.max(axis=1, keepdims=True)
        rows = np.exp(logits)
        rows /= rows.sum(axis=1, keepdims=True)
        config = sampling.config()
        return [apply_float(row, config).tolist() for row in rows]


Runner = Callable[[Context, "Check"], CheckResult]


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    needs: frozenset[str]
    statistical: bool
    mutants: tuple[str, ...]  # reference-engine mutations this check must catch
    run: Runner


def _result(check: Check, ctx: Context, status: str, reason: str, **kw: Any) -> CheckResult:
    return CheckResult(check.name, status, reason, **kw)


def _decide(
    check: Check,
    *,
    alpha: float,
    effect: str,
    pvalue: float,
    samples: int,
    details: dict[str, Any],
    failed: str,
    passed: str,
) -> CheckResult:
    """A statistical check's result: fail at ``pvalue <= alpha``, with its declared alpha,
    power and effect."""
    status, reason = ("fail", failed) if pvalue <= alpha else ("pass", passed)
    return CheckResult(
        check.name,
        status,
        reason,
        alpha=alpha,
        power=POWER,
        effect=effect,
        pvalue=pvalue,
        samples=samples,
        details=details,
    )


# ---------------------------------------------------------------------------- the checks


def _ids_in_vocab(ctx: Context, check: Check) -> CheckResult:
    for i, prompt in enumerate(ctx.prompts(4, "ids")):
        ctx.run(Request(prompt, 16, Sampling(1.0, top_k=8), seed=ctx.seed + i))
    total = sum(len(c.tokens) for _, c in ctx.seen)
    return _result(check, ctx, "pass", f"{total} emitted ids, all inside 0..{ctx.vocab - 1}", samples=total)


def _greedy_baseline(
    ctx: Context, prompt: tuple[int, ...], tokens: list[int], sampling: Sampling | None = None
) -> tuple[int | None, float]:
    """First position where ``tokens`` leaves the baseline's argmax path (with ``sampling``'s
    frequency penalty), and that step's margin."""
    import numpy as np

    logits = np.asarray(ctx.engine.logits_along("target", prompt, tokens), dtype=np.float64)
    for i, raw in enumerate(logits):
        row = raw if sampling is None else sampling.penalise(raw, tokens[:i])
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
        where, margin = _greedy_baseline(ctx, prompt, tokens, sampling)
        if where is None:
            return None
    else:
        if other == tokens:
            return None
        pairs = zip([*other, -1], [*tokens, -1], strict=False)
        where = next(i for i, (a, b) in enumerate(pairs) if a != b)
        _, margin = _greedy_baseline(ctx, prompt, tokens[:where] + other[where : where + 1], sampling)
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
    for prompt in prompts:
        spec = ctx.run(Request(prompt, 24, sampling, seed=ctx.seed))
        outputs.append(spec)
        found.append(_divergence(ctx, prompt, spec.tokens, None, baseline, sampling))
        if "non-speculative" in ctx.engine.capabilities:
            plain = ctx.run(Request(prompt, 24, sampling, seed=ctx.seed, speculative=False))
            found.append(
                _divergence(ctx, prompt, spec.tokens, plain.tokens, "non-speculative decoding", sampling)
            )
    return outputs, found


def _greedy_equivalence(ctx: Context, check: Check) -> CheckResult:
    prompts = ctx.prompts(3 if ctx.quick else 8, "greedy")
    _, found = _greedy_runs(ctx, prompts, Sampling(0.0), "token-by-token baseline")
    mismatches, excused = _triage(found)
    details = {"mismatches": mismatches, "excused_near_ties": excused, "margin_tolerance": GREEDY_MARGIN}
    if mismatches:
        m = mismatches[0]
        return _result(
            check,
            ctx,
            "fail",
            f"greedy output leaves the {m['against']} at token {m['position']} "
            f"of prompt {m['prompt']} (logit margin {m['margin']:.3g})",
            details=details,
        )
    note = f"; {len(excused)} mismatch(es) excused at near-ties" if excused else ""
    return _result(
        check, ctx, "pass", f"{len(prompts)} prompts identical to the baselines{note}", details=details
    )


#: The frequency penalty of the penalties check: large enough to bend a greedy path.
PENALTY = 2.0


def _penalties(ctx: Context, check: Check) -> CheckResult:
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
        _greedy_baseline(ctx, prompt, out.tokens)[0] is not None
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
        return _result(
            check,
            ctx,
            "fail",
            f"with frequency penalty {PENALTY:g} the greedy output leaves the {m['against']} at token "
            f"{m['position']} of prompt {m['prompt']} (logit margin {m['margin']:.3g})",
            details=details,
        )
    if not bent:
        reason = "the penalty did not change the greedy path of any prompt: nothing was tested"
        return _result(check, ctx, "skip", reason, details=details)
    return _result(
        check,
        ctx,
        "pass",
        f"{len(prompts)} penalised greedy outputs equal the baselines ({bent} bent by the penalty)",
        details=details,
    )


def _law_configs(quick: bool) -> list[Sampling]:
    # the quick run folds every truncation into its second setting
    configs = [Sampling(1.5), Sampling(0.5, top_k=8, min_p=0.1)]
    if not quick:
        configs += [Sampling(1.5), Sampling(1.0, top_p=0.8), Sampling(1.0, min_p=0.2)]
    return configs


def _prompt_skipper(starts: dict[tuple[int, ...], int]) -> Callable[[Any, int], bool]:
    """Skip the prompt's tokens: they are not samples."""

    def skip(seq: Any, t: int) -> bool:
        return t < starts[tuple(seq)]

    return skip


def _pit_check(
    ctx: Context,
    check: Check,
    configs: list[Sampling],
    scripts: list[dict[str, Any] | None],
    salt: str,
    only_after_first_round: bool = False,
) -> CheckResult:
    draft = "draft-model" in ctx.engine.capabilities
    orderings = ("target-probability", "draft-ratio") if draft else ("target-probability", "token-id")
    alpha = ctx.alpha
    effect = EFFECT_KS * (2 if ctx.quick else 1)
    n_needed = dkw_sample_size(effect, alpha / len(configs), POWER, tests=len(orderings))
    per_request = 24
    pvalues: dict[str, float] = {}
    histograms: dict[str, list[int]] = {}
    total = 0
    for c_index, sampling in enumerate(configs):
        sequences: list[tuple[tuple[int, ...], list[int]]] = []
        tokens_so_far = 0
        k = 0
        while tokens_so_far < n_needed:
            batch = [
                Request(
                    ctx.prompts(1, f"{salt}:{c_index}:{j}")[0],
                    per_request,
                    sampling,
                    seed=ctx.seed * 100_003 + c_index * 10_007 + j,
                    script=scripts[j % len(scripts)],
                )
                for j in range(k, k + ctx.batch_size)
            ]
            for request, completion in zip(batch, ctx.run_many(batch), strict=True):
                sequences.append((request.prompt, completion.tokens))
                tokens_so_far += len(completion.tokens)
            k += len(batch)
            ctx.tick(c_index * n_needed + tokens_so_far, len(configs) * n_needed)
        target_rows: dict[tuple[int, ...], list[float]] = {}
        draft_rows: dict[tuple[int, ...], list[float]] = {}
        for prompt, tokens in sequences:
            for row_index, row in enumerate(ctx.probs_along("target", prompt, tokens, sampling)):
                target_rows[(*prompt, *tokens[:row_index])] = row
            if draft:
                for row_index, row in enumerate(ctx.probs_along("draft", prompt, tokens, sampling)):
                    draft_rows[(*prompt, *tokens[:row_index])] = row
        import numpy as np

        rng = np.random.default_rng(ctx.seed + 7919 * c_index)
        full = [(*prompt, *tokens) for prompt, tokens in sequences]
        starts = {seq: len(prompt) for seq, (prompt, _) in zip(full, sequences, strict=True)}
        battery = pit_battery(
            full,
            target_rows.__getitem__,
            draft=draft_rows.__getitem__ if draft else None,
            orderings=orderings,
            rng=rng,
            skip=_prompt_skipper(starts),
        )
        if battery.impossible:
            return _result(
                check,
                ctx,
                "fail",
                f"{sampling.describe()}: the engine emitted {battery.impossible} "
                "token(s) the target cannot emit",
                alpha=alpha,
                power=POWER,
                pvalue=0.0,
                samples=total,
            )
        pvalues[sampling.describe()] = battery.pvalue
        histograms[sampling.describe()] = battery.histogram
        total += battery.n
    worst = min(pvalues, key=lambda k: pvalues[k])
    p_overall = min(1.0, pvalues[worst] * len(pvalues))
    details = {
        "pvalues": pvalues,
        "pit_histograms": histograms,
        "orderings": list(orderings),
        "tokens_per_setting": n_needed,
    }
    return _decide(
        check,
        alpha=alpha,
        effect=f"KS distance {effect:g} on the PIT law",
        pvalue=p_overall,
        samples=total,
        details=details,
        failed=f"the law at {worst} differs from the target's (p = {p_overall:.3g})",
        passed=f"{total} tokens over {len(configs)} settings follow the target's law",
    )


def _first_token_plan(law: list[float], tv: float, alpha: float) -> tuple[int, list[list[int]]]:
    """Requests and pooled cells for Pearson's test to detect ``tv`` at power POWER.

    On the test's cells, every alternative at total variation ``tv`` has Cohen's
    ``w >= 2 tv`` (Cauchy-Schwarz), so planning at ``w = 2 tv`` covers all of them.
    """
    from verispec.stats.gof import pooled_cells
    from verispec.stats.plan import chi_square_sample_size

    support = {t: v for t, v in enumerate(law) if v > 0}
    df = max(len(support) - 1, 1)
    n = chi_square_sample_size(2 * tv, df, alpha=alpha, power=POWER)
    cells = pooled_cells(support, n)
    if len(cells) > 1:
        n = chi_square_sample_size(2 * tv, len(cells) - 1, alpha=alpha, power=POWER)
        cells = pooled_cells(support, n)
    return n, cells


def _first_token_law(ctx: Context, check: Check) -> CheckResult:
    """The first token after a fixed prompt against the target's exact conditional.

    Planned design: Pearson's test (exact enumeration when small) over cells pooled from
    the exact law. Sequential design: a Dirichlet-mixture e-process with the same alpha,
    stopping at the first evidence and capped at twice the planned size.

    Each request asks for ``gamma + 1`` tokens and only the first is tested: an engine that
    drafts no more than the tokens it has left (transformers drafts ``min(gamma, left - 1)``)
    does not speculate at all on a one-token request, and the test would then see only its
    plain sampler.
    """
    from verispec.stats.gof import pearson_test
    from verispec.stats.sequential import DirichletEProcess

    settings = [Sampling(1.0)] if ctx.quick else [Sampling(1.0), Sampling(0.5, top_k=8)]
    prompts = ctx.prompts(1 if ctx.quick else 2, "first-token")
    tv = 0.2 if ctx.quick else 0.1
    alpha_each = ctx.alpha / (len(settings) * len(prompts))
    budget = int(ctx.engine.gamma or 3) + 1
    pvalues: dict[str, float] = {}
    sizes: dict[str, int] = {}
    total = 0
    for index, (sampling, prompt) in enumerate(itertools.product(settings, prompts)):
        law = ctx.probs_along("target", prompt, [0], sampling)[0]
        n, cells = _first_token_plan(law, tv, alpha_each)
        label = f"{sampling.describe()} prompt {list(prompt)}"
        sequential = DirichletEProcess(law, alpha_each, cap=2 * n) if ctx.design == "sequential" else None
        counts: dict[int, int] = {}
        i = 0
        while (sequential.decision is None) if sequential else (i < n):
            size = ctx.batch_size if sequential else min(ctx.batch_size, n - i)
            seeds = [ctx.seed * 1_000_003 + index * 100_003 + j for j in range(i, i + size)]
            for completion in ctx.run_many([Request(prompt, budget, sampling, seed=s) for s in seeds]):
                if not completion.tokens:
                    return _result(check, ctx, "fail", f"{label}: the engine returned no token")
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
        if pvalues[label] <= alpha_each:
            break  # the evidence is in: no more requests
    worst = min(pvalues, key=lambda k: pvalues[k])
    p_overall = min(1.0, pvalues[worst] * len(settings) * len(prompts))
    return _decide(
        check,
        alpha=ctx.alpha,
        effect=f"total variation {tv:g} on the test's cells",
        pvalue=p_overall,
        samples=total,
        details={"design": ctx.design, "pvalues": pvalues, "requests": sizes},
        failed=f"the first token at {worst} does not follow the target's law "
        f"(p = {p_overall:.3g}, {ctx.design} design, {sizes[worst]} requests)",
        passed=f"{total} first tokens over {len(pvalues)} prompt-settings follow the target's law "
        f"({ctx.design} design)",
    )


def _sampling_law(ctx: Context, check: Check) -> CheckResult:
    return _pit_check(ctx, check, _law_configs(ctx.quick), [None], "law")


def _cache_rollback(ctx: Context, check: Check) -> CheckResult:
    gamma = int(ctx.engine.gamma or 3)
    scripts: list[dict[str, Any] | None] = [{"kind": "forced-rejection", "position": j} for j in range(gamma)]
    scripts.append({"kind": "full-acceptance"})
    return _pit_check(ctx, check, [Sampling(1.0, top_k=8)], scripts, "rollback")


def _eos_length(ctx: Context, check: Check) -> CheckResult:
    problems = []
    # a stop id the target emits often, so that it is accepted in the middle of blocks
    probe = ctx.run(Request(ctx.prompts(1, "eos-probe")[0], 24, Sampling(1.0), seed=ctx.seed))
    stop = max(set(probe.tokens), key=probe.tokens.count) if probe.tokens else 3
    for i, prompt in enumerate(ctx.prompts(6 if ctx.quick else 16, "eos")):
        c = ctx.run(Request(prompt, 24, Sampling(1.0), seed=ctx.seed + i, stop_ids=(stop,)))
        if stop in c.tokens:
            first = c.tokens.index(stop)
            if first != len(c.tokens) - 1:
                problems.append(f"tokens after the stop id {stop}: {c.tokens}")
            if c.finish_reason != "stop":
                problems.append(f"finish_reason {c.finish_reason!r} after a stop id: {c.tokens}")
        elif len(c.tokens) != 24 or c.finish_reason != "length":
            problems.append(f"{len(c.tokens)} tokens, finish_reason {c.finish_reason!r} without a stop id")
    gamma = int(ctx.engine.gamma or 3)
    for budget in range(1, gamma + 3):
        c = ctx.run(
            Request(ctx.prompts(1, f"budget{budget}")[0], budget, Sampling(1.0), seed=ctx.seed + budget)
        )
        if len(c.tokens) != budget or c.finish_reason != "length":
            problems.append(f"max_new_tokens={budget} gave {len(c.tokens)} tokens ({c.finish_reason})")
    # a budget that ends inside a block that also holds a stop id: the stop must win
    for budget in range(2, gamma + 2):
        for i, prompt in enumerate(ctx.prompts(4 if ctx.quick else 10, f"eos-budget{budget}")):
            c = ctx.run(
                Request(prompt, budget, Sampling(1.0), seed=ctx.seed + 97 * budget + i, stop_ids=(stop,))
            )
            if stop in c.tokens and c.tokens.index(stop) != len(c.tokens) - 1:
                problems.append(f"max_new_tokens={budget}: tokens after the stop id {stop}: {c.tokens}")
            if len(c.tokens) > budget:
                problems.append(f"max_new_tokens={budget} gave {len(c.tokens)} tokens")
    if problems:
        return _result(check, ctx, "fail", problems[0], details={"problems": problems})
    return _result(
        check, ctx, "pass", f"stop id {stop} and budgets 1..{gamma + 2} handled", details={"stop_id": stop}
    )


def _survival_along(
    ctx: Context, prefix: tuple[int, ...], drafts: tuple[int, ...], sampling: Sampling
) -> list[float]:
    """``P(K >= j | drafts)`` for j = 1..gamma under token-level verification."""
    p_rows = ctx.probs_along("target", prefix, list(drafts), sampling)
    q_rows = ctx.probs_along("draft", prefix, list(drafts), sampling)
    out, running = [], 1.0
    for x, p, q in zip(drafts, p_rows, q_rows, strict=True):
        running *= min(1.0, p[x] / q[x]) if q[x] > 0 else 0.0
        out.append(running)
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
    import numpy as np

    mismatches: list[dict[str, Any]] = []
    compared = 0
    for prompt in ctx.prompts(3 if ctx.quick else 6, "draft-path"):
        c = ctx.run(Request(prompt, 24, Sampling(0.0), seed=ctx.seed))
        sequence = [*prompt, *c.tokens]
        for index, r in enumerate(c.rounds or []):
            if not r.drafts or r.start > len(sequence):
                continue
            rows = np.asarray(ctx.engine.logits_along("draft", tuple(sequence[: r.start]), list(r.drafts)))
            for i, (draft, row) in enumerate(zip(r.drafts, rows, strict=True)):
                compared += 1
                best = int(np.argmax(row))
                if draft != best:
                    margin = float(row[best] - row[draft])
                    if margin >= GREEDY_MARGIN:
                        mismatches.append(
                            {"prompt": list(prompt), "round": index, "draft": i, "margin": margin}
                        )
    return mismatches, compared


def _acceptance_accounting(ctx: Context, check: Check) -> CheckResult:
    """Per round, the first draft's acceptance against sum min(p, q) from the models at the
    round's prefix (a z-test over rounds), and the round contract: accepted + 1 committed.
    First, at temperature 0, the drafts against the draft model's argmax path."""
    from scipy import stats

    path_mismatches, path_compared = _greedy_draft_path(ctx)
    if path_mismatches:
        m = path_mismatches[0]
        return _result(
            check,
            ctx,
            "fail",
            f"greedy draft {m['draft']} of round {m['round']} (prompt {m['prompt']}) is not the draft "
            f"model's argmax (logit margin {m['margin']:.3g}); {len(path_mismatches)} of "
            f"{path_compared} drafts differ: the draft's cache or positions are off",
            details={"draft_path_mismatches": path_mismatches[:20], "drafts_compared": path_compared},
        )

    sampling = Sampling(1.0)
    alpha = ctx.alpha
    delta = 0.1 * (2 if ctx.quick else 1)  # declared effect: mean first-draft acceptance off by delta
    z = stats.norm.isf(alpha / 2) + stats.norm.isf(1 - POWER)
    rounds_needed = math.ceil((z * 0.5 / delta) ** 2)
    observed = predicted = variance = 0.0
    # the same sums over rounds that follow a full acceptance, where draft-cache sync matters
    after = [0.0, 0.0, 0.0]
    # q-contract: the first draft of a round after a full acceptance against the draft model's
    # law at the committed prefix (randomized PIT; exactly uniform when the draft cache is right)
    import numpy as np

    from verispec.stats.pit import ks_uniform, order_tokens, randomized_pit

    pit_rng = np.random.default_rng(ctx.seed + 4242)
    pit_needed = dkw_sample_size(2 * delta, alpha, POWER)
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
    while n_rounds < rounds_needed or (len(draft_pits) < pit_needed and k < 3 * k_rounds):
        batch = [
            Request(ctx.prompts(1, f"accounting{j}")[0], 24, sampling, seed=ctx.seed * 31 + j)
            for j in range(k, k + ctx.batch_size)
        ]
        completions = ctx.run_many(batch)
        k += len(batch)
        for request, c in zip(batch, completions, strict=True):
            prompt = request.prompt
            if c.rounds is None:
                return _result(check, ctx, "skip", "the engine reported no round statistics")
            target = ctx.probs_along("target", prompt, c.tokens, sampling)
            draft = ctx.probs_along("draft", prompt, c.tokens, sampling)
            for index, r in enumerate(c.rounds):
                last = index == len(c.rounds) - 1
                if r.committed != r.accepted + 1 and not (last and r.committed <= r.accepted + 1):
                    return _result(
                        check,
                        ctx,
                        "fail",
                        f"a round accepted {r.accepted} drafts but committed {r.committed} "
                        "tokens: the round contract is accepted + 1",
                        details={"prompt": list(prompt)},
                    )
                offset = r.start - len(prompt)
                if offset >= len(c.tokens):
                    continue
                if r.drafts and len(measured_k) < survival_cap:
                    measured_k.append(r.accepted)
                    predicted_k.append(
                        _survival_along(ctx, (*prompt, *c.tokens[:offset]), r.drafts, sampling)
                    )
                beta = sum(min(a, b) for a, b in zip(target[offset], draft[offset], strict=True))
                hit = 1.0 if r.accepted >= 1 else 0.0
                observed += hit
                predicted += beta
                variance += beta * (1 - beta)
                n_rounds += 1
                if index > 0 and c.rounds[index - 1].accepted == ctx.engine.gamma:
                    after[0] += hit
                    after[1] += beta
                    after[2] += beta * (1 - beta)
                    if r.drafts:
                        q = draft[offset]
                        x = r.drafts[0]
                        draft_pits.append(
                            randomized_pit(x, q, order_tokens("target-probability", q), pit_rng.random())
                        )
        if n_rounds >= rounds_needed and not k_rounds:
            k_rounds = k
        ctx.tick(n_rounds, rounds_needed)
    # two z-tests (all rounds; rounds after a full acceptance), Bonferroni over the two. Given
    # the prefix, a round's first-draft acceptance has probability sum min(p, q) whatever
    # happened before, so selecting rounds by the previous outcome keeps the test exact.
    zscore = (observed - predicted) / math.sqrt(max(variance, 1e-12))
    z_after = (after[0] - after[1]) / math.sqrt(max(after[2], 1e-12)) if after[2] > 0 else 0.0
    if any(math.isnan(u) for u in draft_pits):
        return _result(
            check,
            ctx,
            "fail",
            "a draft the draft model cannot propose after a full acceptance",
            alpha=alpha,
            pvalue=0.0,
        )
    p_drafts = ks_uniform(draft_pits)[1] if draft_pits else 1.0
    tests = 3 if draft_pits else 2
    pvalue = float(min(1.0, tests * min(2 * stats.norm.sf(max(abs(zscore), abs(z_after))), p_drafts)))
    details = {
        "rounds": n_rounds,
        "first_draft_accepted": observed / n_rounds,
        "predicted": predicted / n_rounds,
        "z": zscore,
        "z_after_full_acceptance": z_after,
        "drafts_after_full_acceptance": len(draft_pits),
        "q_contract_pvalue": p_drafts,
        "survival": _survival_summary(measured_k, predicted_k),
        "greedy_drafts_compared": path_compared,
    }
    return _decide(
        check,
        alpha=alpha,
        effect=f"mean first-draft acceptance off by {delta:g}",
        pvalue=pvalue,
        samples=n_rounds,
        details=details,
        failed=f"first drafts accepted {observed / n_rounds:.3f} of the time, the models "
        f"predict {predicted / n_rounds:.3f} (p = {pvalue:.3g})",
        passed=f"acceptance {observed / n_rounds:.3f} vs predicted {predicted / n_rounds:.3f} "
        f"over {n_rounds} rounds",
    )


def _determinism(ctx: Context, check: Check) -> CheckResult:
    for i, prompt in enumerate(ctx.prompts(2, "determinism")):
        request = Request(prompt, 24, Sampling(1.0), seed=ctx.seed + 1000 + i)
        a, b = ctx.run(request), ctx.run(request)
        if a.tokens != b.tokens:
            return _result(check, ctx, "fail", f"the same request and seed gave {a.tokens} and {b.tokens}")
    return _result(check, ctx, "pass", "two requests repeated with their seeds gave the same tokens")


def _ragged_rounds(completions: list[Completion]) -> int | None:
    """Rounds (by index) in which the rows still running accepted different numbers of
    drafts; ``None`` when the engine reports no rounds."""
    if any(c.rounds is None for c in completions):
        return None
    rounds = [c.rounds or [] for c in completions]
    deepest = max((len(r) for r in rounds), default=0)
    return sum(len({r[i].accepted for r in rounds if i < len(r)}) > 1 for i in range(deepest))


def _ragged_batch(ctx: Context, check: Check) -> CheckResult:
    """Greedy rows of one batch with prompts of different lengths (so lengths and acceptance
    are ragged) against the same requests run alone and against the baseline."""
    rows = 6
    budget = 16 if ctx.quick else 32
    requests = [
        Request(ctx.prompts(1, f"ragged:{i}", length=1 + i)[0], budget, Sampling(0.0), seed=ctx.seed)
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
    details = {
        "rows": rows,
        "ragged_rounds": ragged,
        "mismatches": mismatches,
        "excused_near_ties": excused,
        "margin_tolerance": GREEDY_MARGIN,
    }
    if mismatches:
        m = mismatches[0]
        return _result(
            check,
            ctx,
            "fail",
            f"batch row {m['row']} leaves {m['against']} at token {m['position']} "
            f"(logit margin {m['margin']:.3g})",
            details=details,
        )
    if ragged == 0:
        reason = "no round had ragged acceptance: the ragged path was not exercised"
        return _result(check, ctx, "skip", reason, details=details)
    shown = "an unknown number of" if ragged is None else str(ragged)
    return _result(
        check,
        ctx,
        "pass",
        f"{rows} batch rows with {shown} ragged rounds equal each request alone and the baseline",
        details=details,
    )


CHECKS: tuple[Check, ...] = (
    Check(
        "greedy-equivalence",
        "greedy output equals the engine's non-speculative decoding and the token-by-token "
        "baseline (a mismatch is excused only at a logit margin below 1e-4)",
        frozenset(),
        False,
        (
            "top-left-mask",
            "positions-reset",
            "crop-plus-one",
            "crop-no-op",
            "tree-sibling-visible",
            "tree-depth-mask",
            "tree-positions-by-row",
            "tree-no-compaction",
        ),
        _greedy_equivalence,
    ),
    Check(
        "sampling-law",
        "sampled tokens follow the target's conditionals (randomized PIT battery) at several "
        "temperatures, top-k, top-p and min-p",
        frozenset(),
        True,
        (
            "resample-target",
            "softmax-residual",
            "bonus-wrong-row",
            "draft-temperature-ignored",
            "target-default-params",
            "greedy-draft-softmax-q",
            "always-accept",
            "unnormalised-draft",
            "min-p-verify-ignored",
        ),
        _sampling_law,
    ),
    Check(
        "first-token-law",
        "the first token after a fixed prompt follows the target's exact conditional "
        "(Pearson's test on pooled cells, or a sequential e-process)",
        frozenset(),
        True,
        ("resample-target", "softmax-residual", "raw-q-processed-draft", "reused-uniform"),
        _first_token_law,
    ),
    Check(
        "cache-rollback",
        "after a rejection forced at every position (and full acceptance) the following tokens "
        "keep the target's law",
        frozenset({"scripted-drafts"}),
        True,
        ("crop-plus-one", "bonus-untruncated"),
        _cache_rollback,
    ),
    Check(
        "eos-length",
        "nothing after a stop id accepted mid-block; budgets that cross a block are exact",
        frozenset(),
        False,
        ("eos-budget-first", "no-eos-crop"),
        _eos_length,
    ),
    Check(
        "ids-in-vocab",
        "every emitted id lies inside the vocabulary",
        frozenset(),
        False,
        ("vocab-overflow",),
        _ids_in_vocab,
    ),
    Check(
        "acceptance-accounting",
        "greedy drafts follow the draft model's argmax path; first-draft acceptance matches "
        "sum min(p, q) from the models; each round commits accepted + 1 tokens",
        frozenset({"round-stats", "draft-model"}),
        True,
        ("missing-bonus", "draft-no-catch-up", "draft-probs-none"),
        _acceptance_accounting,
    ),
    Check(
        "determinism",
        "the same request and seed give the same tokens",
        frozenset({"seeded"}),
        False,
        ("unseeded",),
        _determinism,
    ),
    Check(
        "penalties",
        "greedy output with a frequency penalty equals the penalised baseline and the engine's "
        "own non-speculative decoding",
        frozenset({"penalties"}),
        False,
        ("penalty-ignored",),
        _penalties,
    ),
    Check(
        "ragged-batch",
        "greedy rows of one batch with ragged lengths and acceptance equal the same requests "
        "run alone and the token-by-token baseline",
        frozenset({"batch"}),
        False,
        ("ragged-shared-offset", "batch-order-by-length"),
        _ragged_batch,
    ),
)
