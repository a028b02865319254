"""The serving contract: is a speculative engine faster, measured the way that cannot mislead?

``verispec serve --engine NAME`` (or :func:`serve`) runs the same engine with speculation on
and off (``Request(speculative=False)``, the ``non-speculative`` capability), in the same
process, on the same target, precision, sampling settings, prompts, seeds and output budget,
with the two arms interleaved request by request (the order alternates, so drift in the
machine's speed falls on both), after one discarded warm-up request per arm. Times are the
engine's own, measured in its process around ``generate`` (the pipe to the harness is not
charged to either arm).

What it reports, per draft length and prompt kind:

* **time per output token as a ratio of sums**: cumulative request time over committed
  tokens, never the mean of per-round or per-request ratios, with a 95% percentile bootstrap
  interval over requests; the **speedup** is the baseline's time per token over the
  speculative one's, bootstrapped with the same resampled requests in both arms (they are
  paired: same prompt and seed);
* end-to-end request latency, p50 and p95, per arm; at concurrent load (engines with the
  ``batch`` capability) the whole test set in one ``generate`` call, three times per arm;
* **committed tokens only**: a completion's tokens are what was committed; proposals never
  count. Requests that stop at EOS before the budget are counted per arm, and a difference in
  output length between the arms is disclosed next to the speed figures;
* per round (engines with ``round-stats``): the survival curve ``P(A >= j)`` of the accepted
  length, the committed tokens per round ``K`` measured, from the tail-sum identity
  ``E[K] = 1 + sum_j P(A >= j)`` (exact when no round is cut short by EOS or the budget; the
  rounds that were are counted), and from the independent-acceptance formula
  ``(1 - a^(g+1)) / (1 - a)`` at the per-position rate ``a`` fitted to the survival curve;
  the mean round cost ``C`` and, next to the measured speedup, the seed article's modelled one
  ``E[K] / (g c + 1)`` at the measured ``a`` and the draft cost ``c`` implied by ``C``;
* **the draft-length rule**: over a sweep of draft lengths, one length longer is worthwhile
  only where ``dC / dK < C / K`` (equivalently its time per token is lower), decided on
  tuning requests kept apart from the test requests, with bootstrap intervals on ``dC`` and
  ``dK``: "worthwhile" or "not worthwhile" only where the interval of the change in time per
  token excludes 0, "undecided" otherwise.

What it cannot measure it says so: the engine protocol returns whole completions, so time
to first token and inter-token times of a stream are reported as not measured, with that
reason. The falsification criteria are part of the result: without a passing conformance
report of the same engine (``law_report``, a ``verispec conform`` report.json) the speed
comparison has no matched quality contract; where a longer draft raised the committed tokens
per round but not the time per token or the p95 latency, the draft gain has not become a
serving gain. A baseline that fails, or an engine without the ``non-speculative``
capability, makes the comparison inconclusive (exit 10), never a speedup.

Nothing measured is lost: with ``out`` every request is appended to ``results.jsonl`` as it
finishes, and ``serve.json``, ``serve.md`` and ``serve.html`` are rewritten after each draft
length.
"""

from __future__ import annotations

import itertools
import json
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from verispec.engines.protocol import Request, RoundStat, Sampling
from verispec.errors import UsageError
from verispec.verdicts import RunVerdict

__all__ = ["ServeResult", "Timed", "length_rule", "round_summary", "serve", "speed_summary"]

#: Bootstrap resamples for every interval.
BOOTSTRAP = 2000
#: Repetitions of the concurrent-load batch per arm.
BATCH_REPEATS = 3
#: Prompt lengths of the seeded kinds (tokens).
SHORT, LONG, PHRASE, REPEATS = 8, 96, 6, 4
NOT_STREAMED = "not measured: the engine protocol returns whole completions, not a token stream"


@dataclass
class Timed:
    """One request as served: the engine's time for it and what it committed."""

    kind: str
    split: str  # "tuning" or "test"
    speculative: bool
    seconds: float
    tokens: int
    finish_reason: str
    rounds: list[RoundStat] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rounds"] = None if self.rounds is None else [asdict(r) for r in self.rounds]
        return data


def _interval(values: Any) -> list[float]:
    import numpy as np

    low, high = np.quantile(np.asarray(values, dtype=np.float64), [0.025, 0.975])
    return [float(low), float(high)]


def speed_summary(spec: list[Timed], base: list[Timed], seed: int) -> dict[str, Any]:
    """Time per token (ratio of sums) of both arms with intervals, the paired speedup, p50/p95
    latency and the output-length disclosure; ``spec[i]`` and ``base[i]`` are one request."""
    import numpy as np

    if len(spec) != len(base) or not spec:
        raise UsageError(f"spec and base must pair up one to one (got {len(spec)} and {len(base)})")
    s_sec = np.array([t.seconds for t in spec])
    s_tok = np.array([t.tokens for t in spec], dtype=np.float64)
    b_sec = np.array([t.seconds for t in base])
    b_tok = np.array([t.tokens for t in base], dtype=np.float64)
    if s_tok.sum() == 0 or b_tok.sum() == 0:
        raise UsageError("an arm committed no tokens: no time per token to compare")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(spec), size=(BOOTSTRAP, len(spec)))
    with np.errstate(divide="ignore", invalid="ignore"):
        s_boot = s_sec[idx].sum(1) / s_tok[idx].sum(1)
        b_boot = b_sec[idx].sum(1) / b_tok[idx].sum(1)
        speed_boot = b_boot / s_boot
    s_tpot, b_tpot = s_sec.sum() / s_tok.sum(), b_sec.sum() / b_tok.sum()

    def arm(sec: Any, tok: Any, tpot: float, boot: Any, timed: list[Timed]) -> dict[str, Any]:
        return {
            "requests": len(timed),
            "committed_tokens": int(tok.sum()),
            "seconds": float(sec.sum()),
            "time_per_token_s": float(tpot),
            "time_per_token_interval_s": _interval(boot[np.isfinite(boot)]),
            "latency_p50_s": float(np.quantile(sec, 0.5)),
            "latency_p95_s": float(np.quantile(sec, 0.95)),
            "stopped_at_eos": sum(t.finish_reason == "stop" for t in timed),
            "mean_tokens": float(tok.mean()),
        }

    out: dict[str, Any] = {
        "speculative": arm(s_sec, s_tok, s_tpot, s_boot, spec),
        "baseline": arm(b_sec, b_tok, b_tpot, b_boot, base),
        "speedup": float(b_tpot / s_tpot),
        "speedup_interval": _interval(speed_boot[np.isfinite(speed_boot)]),
        "time_to_first_token": NOT_STREAMED,
        "inter_token_p50_p95": NOT_STREAMED,
    }
    s_arm, b_arm = out["speculative"], out["baseline"]
    if s_arm["committed_tokens"] != b_arm["committed_tokens"]:
        out["length_disclosure"] = (
            f"the arms committed different lengths: {s_arm['committed_tokens']} tokens speculative "
            f"({s_arm['stopped_at_eos']} requests stopped at EOS) against {b_arm['committed_tokens']} "
            f"baseline ({b_arm['stopped_at_eos']} at EOS); times are per committed token"
        )
    return out


def round_summary(rounds: list[list[RoundStat]], gamma: int) -> dict[str, Any]:
    """Survival of the accepted length and committed tokens per round, measured and predicted.

    ``rounds[i]`` are request i's rounds; a round is cut short when it committed fewer than
    ``accepted + 1`` tokens (EOS or the budget)."""
    flat = [r for rs in rounds for r in rs]
    if not flat:
        return {"rounds": 0, "reason": "the engine reported no rounds"}
    gamma = max([gamma, *(r.accepted for r in flat)])
    n = len(flat)
    survival = [sum(r.accepted >= j for r in flat) / n for j in range(1, gamma + 1)]
    cut = sum(r.committed < r.accepted + 1 for r in flat)
    measured = sum(r.committed for r in flat) / n
    # the per-position rate that fits the survival curve best under independence: the
    # geometric maximum-likelihood estimate, accepted positions over positions tried
    tried = 1 + sum(survival[:-1])
    a = sum(survival) / tried if tried else 0.0
    independent = gamma + 1.0 if a >= 1 else (1 - a ** (gamma + 1)) / (1 - a)
    return {
        "rounds": n,
        "gamma": gamma,
        "survival": survival,
        "committed_per_round": measured,
        "tail_sum": 1 + sum(survival),
        "rounds_cut_short": cut,
        "acceptance_rate": a,
        "independent_formula": independent,
    }


def length_rule(shorter: list[Timed], longer: list[Timed], seed: int) -> dict[str, Any]:
    """The draft-length rule between two draft lengths, on tuning requests of each (their
    rounds): ``dC``, ``dK`` and the change in time per token, each with a bootstrap interval
    (the two sets resampled independently: they ran in different engine processes)."""
    import numpy as np

    def per_request(timed: list[Timed]) -> Any:
        return np.array(
            [[t.seconds, sum(r.committed for r in t.rounds or ()), len(t.rounds or ())] for t in timed],
            dtype=np.float64,
        )

    a, b = per_request(shorter), per_request(longer)
    if a[:, 2].sum() == 0 or b[:, 2].sum() == 0:
        return {"decision": "undecided", "reason": "the engine reported no rounds"}
    rng = np.random.default_rng(seed)

    def stats(x: Any) -> Any:  # x: [..., requests, 3] -> (C, K, C/K) as ratios of sums
        sums = x.sum(axis=-2)
        return sums[..., 0] / sums[..., 2], sums[..., 1] / sums[..., 2], sums[..., 0] / sums[..., 1]

    ca, ka, ta = stats(a)
    cb, kb, tb = stats(b)
    boot_a = stats(a[rng.integers(0, len(a), size=(BOOTSTRAP, len(a)))])
    boot_b = stats(b[rng.integers(0, len(b), size=(BOOTSTRAP, len(b)))])
    d_tpot = _interval(boot_b[2] - boot_a[2])
    if d_tpot[1] < 0:
        decision = "worthwhile"
    elif d_tpot[0] > 0:
        decision = "not worthwhile"
    else:
        decision = "undecided"
    dk = float(kb - ka)
    return {
        "C": float(ca),
        "K": float(ka),
        "dC": float(cb - ca),
        "dC_interval": _interval(boot_b[0] - boot_a[0]),
        "dK": dk,
        "dK_interval": _interval(boot_b[1] - boot_a[1]),
        "dC_over_dK": float((cb - ca) / dk) if dk else None,
        "C_over_K": float(ta),
        "d_time_per_token": float(tb - ta),
        "d_time_per_token_interval": d_tpot,
        "decision": decision,
    }


def modelled_speedup(acceptance: float, gamma: int, c: float) -> float:
    """The seed article's model: ``((1 - a^(g+1)) / (1 - a)) / (g c + 1)``."""
    tokens = gamma + 1.0 if acceptance >= 1 else (1 - acceptance ** (gamma + 1)) / (1 - acceptance)
    return tokens / (gamma * c + 1)


def _prompts(
    vocab: int, given: list[tuple[int, ...]], kinds: list[str], per_kind: int, seed: int
) -> list[tuple[str, tuple[int, ...]]]:
    """``per_kind`` prompts of each kind: the engine's own (real text, by its kinds) or, for
    seeded models, ``short`` and ``long`` random prompts and ``repeating`` ones (a phrase said
    four times: prompt lookup can copy it)."""
    rng = random.Random(seed)
    if given:
        by_kind: dict[str, list[tuple[int, ...]]] = {}
        for i, p in enumerate(given):
            by_kind.setdefault(kinds[i] if i < len(kinds) else "given", []).append(p)
        return [(k, ps[i % len(ps)]) for k, ps in by_kind.items() for i in range(per_kind)]
    out: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(per_kind):
        out.append(("short", tuple(rng.randrange(1, vocab) for _ in range(SHORT))))
        out.append(("long", tuple(rng.randrange(1, vocab) for _ in range(LONG))))
        phrase = tuple(rng.randrange(1, vocab) for _ in range(PHRASE))
        out.append(("repeating", phrase * REPEATS))
    return sorted(out, key=lambda kp: kp[0])


@dataclass
class ServeResult:
    engine: str
    name: str
    sampling: str
    max_new_tokens: int
    seed: int
    command: str
    gammas: list[dict[str, Any]] = field(default_factory=list)
    rules: list[dict[str, Any]] = field(default_factory=list)
    chosen_gamma: int | None = None
    contract: list[str] = field(default_factory=list)
    inconclusive: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> RunVerdict:
        """``inconclusive`` when there is no baseline to compare with; ``pass`` when the
        comparison was measured (whatever it found: a slower engine is a finding, not an error)."""
        if self.inconclusive or not self.gammas:
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "name": self.name,
            "verdict": self.verdict,
            "inconclusive": self.inconclusive,
            "sampling": self.sampling,
            "max_new_tokens": self.max_new_tokens,
            "seed": self.seed,
            "reproduce": self.command,
            "chosen_gamma": self.chosen_gamma,
            "contract": self.contract,
            "notes": self.notes,
            "draft_lengths": self.gammas,
            "length_rule": self.rules,
        }

    def markdown(self) -> str:
        return _markdown(self.to_json())

    def html(self) -> str:
        return _html(self.to_json())


def _law_contract(law_report: str | None, engine: str) -> str:
    """What the law checks say: a passing ``verispec conform`` report of the same engine."""
    if law_report is None:
        return (
            "no law check in this run: the speed comparison has no matched quality contract "
            f"(run `verispec conform --engine {engine}` and pass its report.json as --law-report)"
        )
    try:
        data = json.loads(Path(law_report).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"law_report={law_report!r} cannot be read as a JSON report: {exc}") from None
    if not isinstance(data, dict) or "verdict" not in data:
        raise UsageError(f"law_report={law_report!r} is not a verispec conform report (no verdict)")
    if data.get("engine") != engine:
        return (
            f"the law report is of engine {data.get('engine')!r}, not {engine!r}: "
            "the speed comparison has no matched quality contract"
        )
    if data["verdict"] != "pass":
        return (
            f"the law checks did not pass (verdict {data['verdict']}): the speed comparison is "
            "without a matched quality contract"
        )
    return f"the law checks passed ({law_report}): the comparison has a matched quality contract"


def serve(
    engine: str,
    *,
    options: dict[str, Any] | None = None,
    gammas: Sequence[int] | None = None,
    sampling: Sampling | None = None,
    max_new_tokens: int = 32,
    per_kind: int = 8,
    tuning_per_kind: int = 4,
    seed: int = 0,
    timeout_s: float = 300.0,
    law_report: str | None = None,
    out: str | os.PathLike[str] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> ServeResult:
    """Measure ``engine`` with speculation on against off (see the module's description).

    ``gammas`` sweeps the draft length (the engine factory's ``gamma``; default: the engine's
    own only); ``per_kind`` test and ``tuning_per_kind`` tuning requests per prompt kind.
    """
    from verispec.conformance.proxy import EngineError, EngineProxy
    from verispec.report.folder import ReportFolder

    for name, value, least in (
        ("max_new_tokens", max_new_tokens, 1),
        ("per_kind", per_kind, 2),
        ("tuning_per_kind", tuning_per_kind, 1),
        ("seed", seed, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise UsageError(f"{name}={value!r} must be an integer >= {least}")
    sweep = list(gammas) if gammas else [None]
    if any(g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 1) for g in sweep):
        raise UsageError(f"gammas={list(sweep)!r} must be positive integers")
    if len(set(sweep)) != len(sweep):
        raise UsageError(f"gammas={list(sweep)!r} repeats a draft length")
    sampling = sampling or Sampling()
    folder = ReportFolder(Path(out)) if out is not None else None
    say = on_progress or (lambda _: None)
    sweep_text = "" if gammas is None else f" --gammas {','.join(str(g) for g in sweep)}"
    command = (
        f"verispec serve --engine {engine}{sweep_text} --max-new-tokens {max_new_tokens} "
        f"--requests {per_kind} --tuning {tuning_per_kind} --seed {seed}"
    )
    result = ServeResult(engine, engine, sampling.describe(), max_new_tokens, seed, command)
    tuning: dict[int, list[Timed]] = {}

    def save() -> None:
        if folder is not None:
            folder.write("serve.json", json.dumps(result.to_json(), indent=2) + "\n")
            folder.write("serve.md", result.markdown())
            folder.write("serve.html", result.html())

    for g in sweep:
        opts = dict(options or {})
        if g is not None:
            opts["gamma"] = g
        say(f"starting {engine}" + ("" if g is None else f" with gamma {g}"))
        with EngineProxy(engine, options=opts, timeout_s=timeout_s) as proxy:
            result.name = proxy.name
            if "non-speculative" not in proxy.capabilities:
                result.inconclusive = (
                    "the engine lacks the capability non-speculative: no baseline with the same "
                    "model, so no speedup can be measured"
                )
                break
            gamma = int(proxy.gamma) if proxy.gamma is not None else (g or 0)
            arm = _Arms(proxy, gamma, folder)
            jobs = _jobs(proxy, per_kind, tuning_per_kind, max_new_tokens, sampling, seed)
            try:
                pairs = arm.interleaved(jobs, say)
            except EngineError as exc:
                result.inconclusive = f"gamma {gamma}: the engine failed a request: {exc}"
                save()
                break
            record = _gamma_record(gamma, pairs, seed)
            if "batch" in proxy.capabilities:
                record["concurrent"] = _concurrent(proxy, [r for _, s, r in jobs if s == "test"])
            else:
                record["concurrent"] = {"reason": "the engine lacks the capability batch"}
            if "round-stats" not in proxy.capabilities:
                record["rounds"] = {"reason": "the engine lacks the capability round-stats"}
            tuning[gamma] = [s for s, _ in pairs if s.split == "tuning"]
            result.gammas.append(record)
            say(f"  gamma {gamma}: speedup {record['test']['all']['speedup']:.3f}")
            save()
    _conclude(result, tuning, seed, law_report, engine)
    save()
    return result


Job = tuple[str, str, Request]  # prompt kind, "tuning" or "test", the request


def _jobs(
    proxy: Any, per_kind: int, tuning_per_kind: int, max_new_tokens: int, sampling: Sampling, seed: int
) -> list[Job]:
    """The requests: per prompt kind, the first ``tuning_per_kind`` for tuning, the rest test."""
    prompts = _prompts(proxy.vocab_size, proxy.prompts, proxy.prompt_kinds, per_kind + tuning_per_kind, seed)
    jobs: list[Job] = []
    seen: dict[str, int] = {}
    for kind, prompt in prompts:
        i = seen.get(kind, 0)
        seen[kind] = i + 1
        split = "tuning" if i < tuning_per_kind else "test"
        jobs.append((kind, split, Request(prompt, max_new_tokens, sampling, seed=seed * 10_000 + len(jobs))))
    return jobs


@dataclass
class _Arms:
    """The two arms of one engine process, timed request by request."""

    proxy: Any
    gamma: int
    folder: Any

    def timed(self, kind: str, split: str, request: Request, speculative: bool) -> Timed:
        from verispec.conformance.proxy import EngineError

        r = request
        completion = self.proxy.generate(
            Request(r.prompt, r.max_new_tokens, r.sampling, r.seed, speculative=speculative)
        )
        if completion.error:
            raise EngineError(completion.error)
        seconds = self.proxy.last_generate_seconds
        assert seconds is not None
        t = Timed(
            kind,
            split,
            speculative,
            seconds,
            len(completion.tokens),
            completion.finish_reason,
            completion.rounds,
        )
        if self.folder is not None:
            self.folder.append({"gamma": self.gamma, **t.to_json()})
        return t

    def interleaved(self, jobs: list[Job], say: Callable[[str], None]) -> list[tuple[Timed, Timed]]:
        """Every job in both arms, the order alternating, after one discarded warm-up per arm;
        the pairs as (speculative, baseline)."""
        self.timed(*jobs[0], True)
        self.timed(*jobs[0], False)
        pairs: list[tuple[Timed, Timed]] = []
        for n, job in enumerate(jobs):
            first = n % 2 == 0  # the order alternates: drift in the machine's speed falls on both
            a = self.timed(*job, first)
            b = self.timed(*job, not first)
            pairs.append((a, b) if first else (b, a))
            if (n + 1) % 8 == 0:
                say(f"  gamma {self.gamma}: {n + 1}/{len(jobs)} requests, both arms")
        return pairs


def _gamma_record(gamma: int, pairs: list[tuple[Timed, Timed]], seed: int) -> dict[str, Any]:
    """One draft length's figures: speed by prompt kind and overall, on the test requests."""
    test = [(s, b) for s, b in pairs if s.split == "test"]
    kinds = sorted({s.kind for s, _ in test})
    speed = {"all": speed_summary([s for s, _ in test], [b for _, b in test], seed)}
    for kind in kinds:
        chosen = [(s, b) for s, b in test if s.kind == kind]
        speed[kind] = speed_summary([s for s, _ in chosen], [b for _, b in chosen], seed)
    rounds = round_summary([s.rounds or [] for s, _ in test], gamma)
    record: dict[str, Any] = {"gamma": gamma, "test": speed, "rounds": rounds}
    if rounds.get("rounds"):
        base_tpot = speed["all"]["baseline"]["time_per_token_s"]
        round_cost = speed["all"]["speculative"]["seconds"] / rounds["rounds"]
        implied = round_cost / base_tpot  # one round in baseline tokens: g c + 1
        c = (implied - 1) / gamma if gamma else 0.0
        rounds["round_cost_s"] = round_cost
        rounds["implied_draft_cost_c"] = c
        rounds["modelled_speedup"] = modelled_speedup(rounds["acceptance_rate"], gamma, c)
    return record


def _concurrent(proxy: Any, requests: list[Request]) -> dict[str, Any]:
    """The test requests in one batch, ``BATCH_REPEATS`` times per arm, alternating."""
    arms: dict[str, list[float]] = {"speculative": [], "baseline": []}
    tokens: dict[str, int] = {}
    for rep in range(BATCH_REPEATS):
        for speculative in (rep % 2 == 0, rep % 2 != 0):
            batch = [
                Request(r.prompt, r.max_new_tokens, r.sampling, r.seed, speculative=speculative)
                for r in requests
            ]
            completions = proxy.generate_many(batch)
            assert proxy.last_generate_seconds is not None
            name = "speculative" if speculative else "baseline"
            tokens[name] = sum(len(c.tokens) for c in completions)
            arms[name].append(proxy.last_generate_seconds / max(tokens[name], 1))
    spec, base = sorted(arms["speculative"]), sorted(arms["baseline"])
    return {
        "requests": len(requests),
        "repeats": BATCH_REPEATS,
        "time_per_token_s": {"speculative": spec, "baseline": base},
        "committed_tokens": tokens,
        "speedup_of_medians": base[len(base) // 2] / spec[len(spec) // 2],
    }


def _conclude(
    result: ServeResult, tuning: dict[int, list[Timed]], seed: int, law_report: str | None, engine: str
) -> None:
    """The draft-length rule over the sweep, the chosen length and the falsification criteria."""
    result.contract.append(_law_contract(law_report, engine))
    if result.inconclusive:
        result.contract.append(f"inconclusive: {result.inconclusive}; no speedup is claimed")
        return
    lengths = sorted(tuning)
    chosen = lengths[0] if lengths else None
    for short, long in itertools.pairwise(lengths):
        rule = {"from": short, "to": long, **length_rule(tuning[short], tuning[long], seed)}
        result.rules.append(rule)
        if rule["decision"] == "worthwhile" and chosen == short:
            chosen = long
    result.chosen_gamma = chosen
    by_gamma = {r["gamma"]: r for r in result.gammas}
    for short, long in itertools.pairwise(lengths):
        a, b = by_gamma[short], by_gamma[long]
        ka, kb = a["rounds"].get("committed_per_round"), b["rounds"].get("committed_per_round")
        if ka is None or kb is None or kb <= ka:
            continue
        sa, sb = a["test"]["all"]["speculative"], b["test"]["all"]["speculative"]
        worse = [
            name
            for name, key in (("time per token", "time_per_token_s"), ("p95 latency", "latency_p95_s"))
            if sb[key] > sa[key]
        ]
        if worse:
            result.contract.append(
                f"gamma {short} -> {long}: committed tokens per round rose ({ka:.2f} -> {kb:.2f}) while "
                f"{' and '.join(worse)} got worse: the draft gain has not become a serving gain"
            )
    if chosen is not None:
        final = by_gamma[chosen]["test"]["all"]
        low, high = final["speedup_interval"]
        if high < 1:
            result.contract.append(
                f"at the chosen gamma {chosen} speculation is slower than the baseline "
                f"(speedup {final['speedup']:.3f}, 95% interval [{low:.3f}, {high:.3f}])"
            )


def _fmt(x: Any, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}g}"


def _markdown(data: dict[str, Any]) -> str:
    from verispec.report.markdown import table

    lines = [
        f"# Serving measurement of `{data['engine']}` ({data['name']}): **{data['verdict']}**",
        "",
        f"- sampling {data['sampling']}; output budget {data['max_new_tokens']} tokens; seed {data['seed']}; "
        f"reproduce with `{data['reproduce']}`",
        "- times are the engine's own per request (single-request load, speculative and baseline "
        "interleaved, one warm-up request per arm discarded); time per token is cumulative time over "
        "committed tokens; intervals are 95% percentile bootstraps over requests",
        f"- time to first token and inter-token p50/p95: {NOT_STREAMED}",
        *[f"- **{c}**" for c in data["contract"]],
        *(
            [f"- chosen draft length (tuning requests): {data['chosen_gamma']}"]
            if data["chosen_gamma"]
            else []
        ),
        "",
    ]
    for g in data["draft_lengths"]:
        lines += [f"## gamma {g['gamma']}", ""]
        rows = []
        for kind, s in g["test"].items():
            sp, bs = s["speculative"], s["baseline"]
            rows.append(
                [
                    kind,
                    sp["requests"],
                    f"{sp['time_per_token_s'] * 1e3:.3f} [{sp['time_per_token_interval_s'][0] * 1e3:.3f}, "
                    f"{sp['time_per_token_interval_s'][1] * 1e3:.3f}]",
                    f"{bs['time_per_token_s'] * 1e3:.3f} [{bs['time_per_token_interval_s'][0] * 1e3:.3f}, "
                    f"{bs['time_per_token_interval_s'][1] * 1e3:.3f}]",
                    f"{s['speedup']:.3f} [{s['speedup_interval'][0]:.3f}, {s['speedup_interval'][1]:.3f}]",
                    f"{sp['latency_p50_s'] * 1e3:.1f} / {sp['latency_p95_s'] * 1e3:.1f}",
                    f"{bs['latency_p50_s'] * 1e3:.1f} / {bs['latency_p95_s'] * 1e3:.1f}",
                    f"{sp['committed_tokens']} / {bs['committed_tokens']}",
                    f"{sp['stopped_at_eos']} / {bs['stopped_at_eos']}",
                ]
            )
        lines.append(
            table(
                [
                    "prompts",
                    "requests",
                    "ms per token, speculative",
                    "ms per token, baseline",
                    "speedup",
                    "latency p50 / p95 ms, speculative",
                    "baseline",
                    "committed tokens (spec / base)",
                    "stopped at EOS (spec / base)",
                ],
                rows,
            )
        )
        for s in g["test"].values():
            if s.get("length_disclosure"):
                lines.append(f"\n- disclosure: {s['length_disclosure']}")
                break
        r = g["rounds"]
        if r.get("rounds"):
            survival = ", ".join(f"{v:.3f}" for v in r["survival"])
            lines += [
                "",
                f"- rounds {r['rounds']}; survival P(A >= j), j = 1..{r['gamma']}: {survival}",
                f"- committed tokens per round: measured {r['committed_per_round']:.3f}; tail-sum identity "
                f"{r['tail_sum']:.3f} ({r['rounds_cut_short']} rounds cut short by EOS or the budget); "
                f"independent-acceptance formula {r['independent_formula']:.3f} at a = "
                f"{r['acceptance_rate']:.3f}",
                f"- mean round cost {r['round_cost_s'] * 1e3:.3f} ms; implied draft cost c = "
                f"{r['implied_draft_cost_c']:.3f} of a baseline token; modelled speedup "
                f"E[K] / (g c + 1) = {r['modelled_speedup']:.3f} against the measured "
                f"{g['test']['all']['speedup']:.3f}",
            ]
        else:
            lines += ["", f"- rounds: {r.get('reason', 'none reported')}"]
        c = g.get("concurrent", {})
        if "speedup_of_medians" in c:
            lines.append(
                f"- concurrent load ({c['requests']} requests in one batch, {c['repeats']} times per arm): "
                f"speedup of the medians {c['speedup_of_medians']:.3f}; ms per token speculative "
                f"{', '.join(f'{v * 1e3:.3f}' for v in c['time_per_token_s']['speculative'])}, baseline "
                f"{', '.join(f'{v * 1e3:.3f}' for v in c['time_per_token_s']['baseline'])}"
            )
        else:
            lines.append(f"- concurrent load: {c.get('reason', 'not measured')}")
        lines.append("")
    if data["length_rule"]:
        lines += ["## Draft-length rule (tuning requests)", ""]
        rows = [
            [
                f"{r['from']} -> {r['to']}",
                f"{r['dC'] * 1e3:.3f} [{r['dC_interval'][0] * 1e3:.3f}, {r['dC_interval'][1] * 1e3:.3f}]",
                f"{r['dK']:.3f} [{r['dK_interval'][0]:.3f}, {r['dK_interval'][1]:.3f}]",
                "" if r["dC_over_dK"] is None else f"{r['dC_over_dK'] * 1e3:.3f}",
                f"{r['C_over_K'] * 1e3:.3f}",
                r["decision"],
            ]
            if "dC" in r
            else [f"{r['from']} -> {r['to']}", "", "", "", "", f"{r['decision']}: {r.get('reason', '')}"]
            for r in data["length_rule"]
        ]
        lines.append(
            table(["gamma", "dC ms [95%]", "dK tokens [95%]", "dC / dK ms", "C / K ms", "decision"], rows)
        )
        lines.append(
            "\nworthwhile only where dC / dK < C / K, decided where the change in time per token "
            "has a 95% interval that excludes 0"
        )
    return "\n".join(lines) + "\n"


def _html(data: dict[str, Any]) -> str:
    import html as _h

    from verispec.conformance.render import bar_chart

    plots = []
    for g in data["draft_lengths"]:
        r = g["rounds"]
        if r.get("rounds"):
            a = r["acceptance_rate"]
            plots.append(
                bar_chart(
                    r["survival"],
                    [f"A>={j + 1}" for j in range(len(r["survival"]))],
                    f"gamma {g['gamma']}: survival of the accepted length over {r['rounds']} rounds, "
                    "measured (blue) and under independent acceptance at the fitted rate (orange)",
                    second=[a ** (j + 1) for j in range(len(r["survival"]))],
                )
            )
        s = g["test"]["all"]
        plots.append(
            bar_chart(
                [s["speculative"]["latency_p50_s"] * 1e3, s["speculative"]["latency_p95_s"] * 1e3],
                ["p50", "p95"],
                f"gamma {g['gamma']}: request latency in ms, speculative (blue) and baseline (orange)",
                second=[s["baseline"]["latency_p50_s"] * 1e3, s["baseline"]["latency_p95_s"] * 1e3],
            )
        )
    body = _h.escape(_markdown(data))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>verispec serve</title></head><body>"
        + "".join(plots)
        + f"<pre>{body}</pre></body></html>\n"
    )
