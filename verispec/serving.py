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
* what a streaming user sees (engines with ``token-times``, whose completions say when each
  token was handed out): time to first token, inter-token times (tokens delivered together
  arrive 0 s apart) and the wait between deliveries, p50 and p95 per arm, alone and inside
  the concurrent batch;
* **committed tokens only**: a completion's tokens are what was committed; proposals never
  count. Requests that stop at EOS before the budget are counted per arm, and a difference in
  output length between the arms is disclosed next to the speed figures;
* per round (engines with ``round-stats``, or read off the stream of those without, one
  delivery per round: :func:`rounds_of`): the survival curve ``P(A >= j)`` of the accepted
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

What it cannot measure it says so: an engine without ``token-times`` gets no stream figures
and one without rounds or a stream no round figures, each with that reason; token times that
cannot be a stream (a wrong count, a negative, non-finite or decreasing time) make the run
inconclusive. The falsification criteria are part of the result: without a passing conformance
report of the same engine (``law_report``, a ``verispec conform`` report.json) the speed
comparison has no matched quality contract; where a longer draft raised the committed tokens
per round while the time per token, the p95 latency or the p95 inter-token time got worse,
the draft gain has not become a serving gain. A baseline that fails, or an engine without
the ``non-speculative`` capability, makes the comparison inconclusive (exit 10), never a
speedup.

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

__all__ = [
    "ServeResult",
    "Timed",
    "checked_times",
    "length_rule",
    "plots",
    "round_summary",
    "rounds_of",
    "serve",
    "speed_summary",
    "stream_summary",
]

#: Bootstrap resamples for every interval.
BOOTSTRAP = 2000
#: Repetitions of the concurrent-load batch per arm.
BATCH_REPEATS = 3
#: The quantiles a distribution is drawn at in the HTML report (deciles).
DECILES = tuple(i / 10 for i in range(1, 11))
#: Draft costs of the derived article's modelled speedup table (a draft step's time relative
#: to a target step), shown beside the measured speedups at the measured acceptance.
ARTICLE_DRAFT_COSTS = (0.0, 0.05, 0.1, 0.3)
#: Prompt lengths of the seeded kinds (tokens).
SHORT, LONG, PHRASE, REPEATS = 8, 96, 6, 4


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
    #: when each token came out, seconds from the start of the request (``token-times``)
    token_times: list[float] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rounds"] = None if self.rounds is None else [asdict(r) for r in self.rounds]
        return data


def checked_times(times: list[float] | None, tokens: int, where: str) -> list[float] | None:
    """An engine's token times, refused when they cannot be a stream of ``tokens`` tokens (a
    wrong count, a negative, a non-finite or a decreasing time): a malformed stream would
    give wrong latencies, so it is the engine's error, never a figure."""
    import math

    if times is None:
        return None
    if len(times) != tokens:
        raise ValueError(f"{where}: token_times has {len(times)} entries for {tokens} tokens")
    if any(not math.isfinite(t) or t < 0 for t in times) or any(b < a for a, b in itertools.pairwise(times)):
        raise ValueError(f"{where}: token_times={times[:8]!r}... must be finite, >= 0 and non-decreasing")
    return list(times)


def stream_summary(timed: list[Timed]) -> dict[str, Any]:
    """What a user of a streaming server sees, from the requests' token times: time to first
    token (p50, p95), the inter-token times of every token (p50, p95; tokens delivered
    together arrive 0 s apart) and the waits between deliveries (p50, p95: how long a user
    waits for the next chunk, a whole round under speculation)."""
    import numpy as np

    if not timed or any(t.token_times is None for t in timed):
        return {"reason": "the engine lacks the capability token-times: no stream to time"}
    streams = [t.token_times or [] for t in timed if t.token_times]
    if not streams:
        return {"reason": "no request committed a token"}
    first = np.array([s[0] for s in streams])
    gaps = np.concatenate([np.diff(s) for s in streams])
    waits = np.concatenate([np.diff([d[0] for d in _deliveries(s)]) for s in streams])

    def p(values: Any, q: float) -> float | None:
        return float(np.quantile(values, q)) if len(values) else None

    return {
        "inter_token_deciles_s": [float(v) for v in np.quantile(gaps, DECILES)] if len(gaps) else [],
        "time_to_first_token_p50_s": p(first, 0.5),
        "time_to_first_token_p95_s": p(first, 0.95),
        "inter_token_p50_s": p(gaps, 0.5),
        "inter_token_p95_s": p(gaps, 0.95),
        "delivery_wait_p50_s": p(waits, 0.5),
        "delivery_wait_p95_s": p(waits, 0.95),
        "deliveries": int(len(waits) + len(streams)),
    }


#: How rounds read off a stream are to be taken (the report says it beside them).
STREAM_ROUNDS = (
    "read off the stream (the engine reports no rounds): each delivery is one round's committed tokens, "
    "accepted drafts plus one; a round cut short by the budget reads as a shorter round, and an engine "
    "that decodes its first token from the prefill shows it as a round of one"
)


def rounds_of(timed: Timed) -> list[RoundStat] | None:
    """A speculative request's rounds: the engine's own, else read off its stream
    (:data:`STREAM_ROUNDS`), else none."""
    if timed.rounds:
        return timed.rounds
    if timed.token_times is None:
        return None
    return [RoundStat(0, len(group) - 1, len(group)) for group in _deliveries(timed.token_times)]


def _deliveries(times: list[float]) -> list[list[float]]:
    return [list(group) for _, group in itertools.groupby(times)]


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
            "latency_deciles_s": [float(v) for v in np.quantile(sec, DECILES)],
            "stopped_at_eos": sum(t.finish_reason == "stop" for t in timed),
            "mean_tokens": float(tok.mean()),
            "stream": stream_summary(timed),
        }

    out: dict[str, Any] = {
        "speculative": arm(s_sec, s_tok, s_tpot, s_boot, spec),
        "baseline": arm(b_sec, b_tok, b_tpot, b_boot, base),
        "speedup": float(b_tpot / s_tpot),
        "speedup_interval": _interval(speed_boot[np.isfinite(speed_boot)]),
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
            [
                [t.seconds, sum(r.committed for r in rs), len(rs)]
                for t in timed
                for rs in [rounds_of(t) or []]
            ],
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
    command = _command(
        engine, options or {}, gammas, sampling, max_new_tokens, per_kind, tuning_per_kind, seed
    )
    result = ServeResult(engine, engine, sampling.describe(), max_new_tokens, seed, command)
    tuning: dict[int, list[Timed]] = {}
    tested: dict[int, list[Timed]] = {}

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
                try:
                    record["concurrent"] = _concurrent(proxy, [j for j in jobs if j[1] == "test"])
                except EngineError as exc:
                    result.inconclusive = f"gamma {gamma}: the engine failed a batch: {exc}"
                    save()
                    break
            else:
                record["concurrent"] = {"reason": "the engine lacks the capability batch"}
            tuning[gamma] = [s for s, _ in pairs if s.split == "tuning"]
            tested[gamma] = [s for s, _ in pairs if s.split == "test"]
            result.gammas.append(record)
            say(f"  gamma {gamma}: speedup {record['test']['all']['speedup']:.3f}")
            save()
    _conclude(result, tuning, tested, seed, law_report, engine)
    save()
    return result


Job = tuple[str, str, Request]  # prompt kind, "tuning" or "test", the request


def _command(
    engine: str,
    options: dict[str, Any],
    gammas: Sequence[int] | None,
    sampling: Sampling,
    max_new_tokens: int,
    per_kind: int,
    tuning_per_kind: int,
    seed: int,
) -> str:
    """The command line that repeats this measurement."""
    parts = [f"verispec serve --engine {engine}"]
    parts += [f"--{key} {options[key]}" for key in ("size", "target", "draft") if options.get(key)]
    parts += [f"--fix {fix}" for fix in options.get("fixes", ())]
    if gammas:
        parts.append(f"--gammas {','.join(str(g) for g in gammas)}")
    parts.append(f"--temperature {sampling.temperature:g}")
    if sampling.top_p is not None:
        parts.append(f"--top-p {sampling.top_p:g}")
    if sampling.top_k is not None:
        parts.append(f"--top-k {sampling.top_k}")
    parts.append(
        f"--max-new-tokens {max_new_tokens} --requests {per_kind} --tuning {tuning_per_kind} --seed {seed}"
    )
    return " ".join(parts)


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
        try:
            times = checked_times(completion.token_times, len(completion.tokens), f"{kind} request")
        except ValueError as exc:
            raise EngineError(str(exc)) from None
        t = Timed(
            kind,
            split,
            speculative,
            seconds,
            len(completion.tokens),
            completion.finish_reason,
            completion.rounds,
            times,
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
    spec = [s for s, _ in test]
    rounds = round_summary([rounds_of(s) or [] for s in spec], gamma)
    if rounds.get("rounds") and not any(s.rounds for s in spec):
        rounds["source"] = STREAM_ROUNDS
    elif not rounds.get("rounds"):
        rounds["reason"] = "the engine reports neither rounds (round-stats) nor a stream (token-times)"
    if len(kinds) > 1 and rounds.get("rounds"):  # prompt lookup copies on some kinds only
        rounds["by_kind"] = {}
        for kind in kinds:
            part = round_summary([rounds_of(s) or [] for s in spec if s.kind == kind], gamma)
            if part.get("rounds"):
                keys = ("rounds", "committed_per_round", "acceptance_rate")
                rounds["by_kind"][kind] = {key: part[key] for key in keys}
    record: dict[str, Any] = {"gamma": gamma, "test": speed, "rounds": rounds}
    if rounds.get("rounds"):
        # steps that committed one token without drafts (the prefill's first token, a lookup
        # that found nothing) are not rounds: they share the time, so the cost is per step
        in_rounds = sum(r.committed for s in spec for r in rounds_of(s) or [])
        rounds["steps_without_drafts"] = max(0, sum(s.tokens for s in spec) - in_rounds)
        base_tpot = speed["all"]["baseline"]["time_per_token_s"]
        steps = rounds["rounds"] + rounds["steps_without_drafts"]
        round_cost = speed["all"]["speculative"]["seconds"] / steps
        implied = round_cost / base_tpot  # one round in baseline tokens: g c + 1
        c = (implied - 1) / gamma if gamma else 0.0
        rounds["round_cost_s"] = round_cost
        rounds["implied_draft_cost_c"] = c
        # a round cheaper than a baseline token (c < 0) is outside the model: it gets c = 0
        rounds["modelled_speedup"] = modelled_speedup(rounds["acceptance_rate"], gamma, max(c, 0.0))
    return record


def _concurrent(proxy: Any, jobs: list[Job]) -> dict[str, Any]:
    """The test requests in one batch, ``BATCH_REPEATS`` times per arm, alternating; with token
    times, each request's latency and stream inside the batch (all repeats pooled)."""
    from verispec.conformance.proxy import EngineError

    arms: dict[str, list[float]] = {"speculative": [], "baseline": []}
    tokens: dict[str, int] = {}
    served: dict[str, list[Timed]] = {"speculative": [], "baseline": []}
    for rep in range(BATCH_REPEATS):
        for speculative in (rep % 2 == 0, rep % 2 != 0):
            batch = [
                Request(r.prompt, r.max_new_tokens, r.sampling, r.seed, speculative=speculative)
                for _, _, r in jobs
            ]
            completions = proxy.generate_many(batch)
            assert proxy.last_generate_seconds is not None
            name = "speculative" if speculative else "baseline"
            tokens[name] = sum(len(c.tokens) for c in completions)
            arms[name].append(proxy.last_generate_seconds / max(tokens[name], 1))
            for (kind, split, _), c in zip(jobs, completions, strict=True):
                if c.error:
                    raise EngineError(c.error)
                try:
                    times = checked_times(c.token_times, len(c.tokens), f"{kind} request in a batch")
                except ValueError as exc:
                    raise EngineError(str(exc)) from None
                latency = times[-1] if times else proxy.last_generate_seconds
                served[name].append(
                    Timed(kind, split, speculative, latency, len(c.tokens), c.finish_reason, None, times)
                )
    spec, base = sorted(arms["speculative"]), sorted(arms["baseline"])
    out: dict[str, Any] = {
        "requests": len(jobs),
        "repeats": BATCH_REPEATS,
        "time_per_token_s": {"speculative": spec, "baseline": base},
        "committed_tokens": tokens,
        "speedup_of_medians": base[len(base) // 2] / spec[len(spec) // 2],
    }
    if all(t.token_times is not None for arm in served.values() for t in arm):
        import numpy as np

        for name, timed in served.items():
            latencies = [t.seconds for t in timed]
            out[name] = {
                "latency_p50_s": float(np.quantile(latencies, 0.5)),
                "latency_p95_s": float(np.quantile(latencies, 0.95)),
                "stream": stream_summary(timed),
            }
    return out


def _conclude(
    result: ServeResult,
    tuning: dict[int, list[Timed]],
    tested: dict[int, list[Timed]],
    seed: int,
    law_report: str | None,
    engine: str,
) -> None:
    """The draft-length rule over the sweep (on the tuning requests), the chosen length and
    the falsification criteria (on the test requests)."""
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
        falsified = _draft_gain_lost(short, long, tested, by_gamma, seed)
        if falsified:
            result.contract.append(falsified)
    if chosen is not None:
        final = by_gamma[chosen]["test"]["all"]
        low, high = final["speedup_interval"]
        if high < 1:
            result.contract.append(
                f"at the chosen gamma {chosen} speculation is slower than the baseline "
                f"(speedup {final['speedup']:.3f}, 95% interval [{low:.3f}, {high:.3f}])"
            )


def _draft_gain_lost(
    short: int, long: int, tested: dict[int, list[Timed]], by_gamma: dict[int, Any], seed: int
) -> str | None:
    """The falsification criterion between two draft lengths on the test requests: the longer
    draft raised the committed tokens per round (the 95% interval of the rise above 0) while
    time per token (its interval above 0), p95 latency or p95 inter-token time (point
    estimates) got worse; ``None`` when it did not."""
    change = length_rule(tested[short], tested[long], seed)
    if "dK" not in change or change["dK_interval"][0] <= 0:
        return None
    sa, sb = by_gamma[short]["test"]["all"]["speculative"], by_gamma[long]["test"]["all"]["speculative"]
    worse = []
    low, high = change["d_time_per_token_interval"]
    if low > 0:
        worse.append(f"time per token (+{_ms(change['d_time_per_token'])} ms, 95% [{_ms(low)}, {_ms(high)}])")
    for name, a, b in (
        ("p95 latency", sa["latency_p95_s"], sb["latency_p95_s"]),
        (
            "p95 inter-token time",
            sa["stream"].get("inter_token_p95_s"),
            sb["stream"].get("inter_token_p95_s"),
        ),
    ):
        if a is not None and b is not None and b > a:
            worse.append(f"{name} ({_ms(a)} -> {_ms(b)} ms)")
    if not worse:
        return None
    k_low, k_high = change["dK_interval"]
    return (
        f"gamma {short} -> {long}: committed tokens per round rose by {change['dK']:.2f} (95% [{k_low:.2f}, "
        f"{k_high:.2f}]) while {' and '.join(worse)} got worse: the draft gain has not become a serving gain"
    )


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1e3:.1f}"


def _stream_table(speed: dict[str, Any]) -> str:
    """Per prompt kind: what a streaming user sees in each arm (or why it was not measured)."""
    from verispec.report.markdown import table

    if "reason" in speed["all"]["speculative"]["stream"]:
        return f"- stream: {speed['all']['speculative']['stream']['reason']}"

    def pair(arm: dict[str, Any], key: str) -> str:
        return f"{_ms(arm.get(key + '_p50_s'))} / {_ms(arm.get(key + '_p95_s'))}"

    keys = ("time_to_first_token", "inter_token", "delivery_wait")
    rows = [
        [kind, *[pair(s[arm]["stream"], key) for key in keys for arm in ("speculative", "baseline")]]
        for kind, s in speed.items()
    ]
    return table(
        [
            "prompts",
            "first token p50 / p95 ms, speculative",
            "baseline",
            "inter-token p50 / p95 ms, speculative",
            "baseline",
            "wait between deliveries p50 / p95 ms, speculative",
            "baseline",
        ],
        rows,
    )


def _modelled_table(draft_lengths: list[dict[str, Any]]) -> list[str]:
    """The derived article's modelled speedup ``E[K] / (g c + 1)`` (independent acceptance at
    rate ``a``, a draft step costing ``c`` target steps) at the measured ``a``, for the
    article's draft costs and the implied one, beside the measured speedup."""
    from verispec.report.markdown import table

    rows = []
    for g in draft_lengths:
        r, s = g["rounds"], g["test"]["all"]
        if not r.get("rounds") or "implied_draft_cost_c" not in r:
            continue
        a, gamma, c = r["acceptance_rate"], g["gamma"], r["implied_draft_cost_c"]
        rows.append(
            [
                gamma,
                f"{s['speedup']:.3f} [{s['speedup_interval'][0]:.3f}, {s['speedup_interval'][1]:.3f}]",
                f"{a:.3f}",
                f"{c:.3f}",
                f"{r['modelled_speedup']:.3f}",
                *[f"{modelled_speedup(a, gamma, cost):.2f}" for cost in ARTICLE_DRAFT_COSTS],
            ]
        )
    if not rows:
        return []
    return [
        "## Measured against the modelled speedup",
        "",
        "The derived article models the speedup as E[K] / (g c + 1), E[K] = (1 - a^(g+1)) / (1 - a) "
        "(its table: a = 0.8, the costs below). Here a is the measured per-position acceptance and c the "
        "draft cost implied by the measured round cost (a round costs g c + 1 baseline tokens); the "
        "article's columns put the measured a beside its costs. A modelled figure far from the measured "
        "one says the model's assumptions (independent acceptance, verification as cheap as one step) "
        "do not hold on this engine.",
        "",
        table(
            [
                "gamma",
                "measured speedup [95%]",
                "a",
                "implied c",
                "modelled at a, c",
                *[f"modelled, c = {cost:g}" for cost in ARTICLE_DRAFT_COSTS],
            ],
            rows,
        ),
        "",
    ]


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
        lines += ["", _stream_table(g["test"])]
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
                *(
                    [
                        "- by prompt kind, committed tokens per round (acceptance rate): "
                        + "; ".join(
                            f"{kind} {v['committed_per_round']:.3f} ({v['acceptance_rate']:.3f}, "
                            f"{v['rounds']} rounds)"
                            for kind, v in r["by_kind"].items()
                        )
                    ]
                    if r.get("by_kind")
                    else []
                ),
                f"- steps without drafts (one token each; the model covers rounds with drafts only): "
                f"{r['steps_without_drafts']}",
                f"- mean cost per step {r['round_cost_s'] * 1e3:.3f} ms; implied draft cost c = "
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
            for arm in ("speculative", "baseline"):
                if arm in c:
                    st = c[arm]["stream"]
                    lines.append(
                        f"  - {arm} in the batch: latency p50 / p95 {_ms(c[arm]['latency_p50_s'])} / "
                        f"{_ms(c[arm]['latency_p95_s'])} ms; time to first token p50 / p95 "
                        f"{_ms(st.get('time_to_first_token_p50_s'))} / "
                        f"{_ms(st.get('time_to_first_token_p95_s'))} ms; inter-token p50 / p95 "
                        f"{_ms(st.get('inter_token_p50_s'))} / "
                        f"{_ms(st.get('inter_token_p95_s'))} ms"
                    )
        else:
            lines.append(f"- concurrent load: {c.get('reason', 'not measured')}")
        lines.append("")
    lines += _modelled_table(data["draft_lengths"])
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


def plots(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's figures as ``(name, svg)``: per draft length the survival of the accepted
    length (measured beside independent acceptance), the request-latency deciles and the
    inter-token deciles of both arms."""
    from verispec.conformance.render import bar_chart

    out = []
    labels = [f"{q:.0%}" for q in DECILES]
    for g in data["draft_lengths"]:
        gamma, r, s = g["gamma"], g["rounds"], g["test"]["all"]
        if r.get("rounds"):
            a = r["acceptance_rate"]
            out.append(
                (
                    f"survival-gamma{gamma}",
                    bar_chart(
                        r["survival"],
                        [f"A>={j + 1}" for j in range(len(r["survival"]))],
                        f"gamma {gamma}: survival of the accepted length over {r['rounds']} rounds, "
                        "measured (blue) and under independent acceptance at the fitted rate (orange)",
                        second=[a ** (j + 1) for j in range(len(r["survival"]))],
                    ),
                )
            )
        out.append(
            (
                f"latency-gamma{gamma}",
                bar_chart(
                    [v * 1e3 for v in s["speculative"]["latency_deciles_s"]],
                    labels,
                    f"gamma {gamma}: request latency deciles in ms, speculative (blue) and baseline (orange)",
                    second=[v * 1e3 for v in s["baseline"]["latency_deciles_s"]],
                ),
            )
        )
        sp, bs = s["speculative"]["stream"], s["baseline"]["stream"]
        if sp.get("inter_token_deciles_s") and bs.get("inter_token_deciles_s"):
            out.append(
                (
                    f"inter-token-gamma{gamma}",
                    bar_chart(
                        [v * 1e3 for v in sp["inter_token_deciles_s"]],
                        labels,
                        f"gamma {gamma}: inter-token time deciles in ms (tokens of one delivery arrive "
                        "0 ms apart), speculative (blue) and baseline (orange)",
                        second=[v * 1e3 for v in bs["inter_token_deciles_s"]],
                    ),
                )
            )
    return out


def _html(data: dict[str, Any]) -> str:
    import html as _h

    body = _h.escape(_markdown(data))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>verispec serve</title></head><body>"
        + "".join(svg for _, svg in plots(data))
        + f"<pre>{body}</pre></body></html>\n"
    )
