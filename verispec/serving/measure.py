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
  delivery per round: :func:`verispec.serving.rounds_of`): the survival curve
  ``P(A >= j)`` of the accepted length, the committed tokens per round ``K`` measured, from
  the tail-sum identity ``E[K] = 1 + sum_j P(A >= j)`` (exact when no round is cut short by
  EOS or the budget; the rounds that were are counted), and from the independent-acceptance formula
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verispec.conformance.proxy import EngineError, EngineProxy
from verispec.engines.protocol import Request, Sampling
from verispec.errors import UsageError
from verispec.report.folder import ReportFolder
from verispec.serving import render
from verispec.serving.statistics import Timed, checked_times, gamma_record, length_rule, stream_summary
from verispec.verdicts import RunVerdict

__all__ = ["BATCH_REPEATS", "ServeResult", "serve"]

#: Repetitions of the concurrent-load batch per arm.
BATCH_REPEATS = 3
#: Prompt lengths of the seeded kinds (tokens).
SHORT, LONG, PHRASE, REPEATS = 8, 96, 6, 4


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
        return render.markdown(self.to_json())

    def html(self) -> str:
        return render.html(self.to_json())


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
            record = gamma_record(gamma, pairs, seed)
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


def _concurrent(proxy: Any, jobs: list[Job]) -> dict[str, Any]:
    """The test requests in one batch, ``BATCH_REPEATS`` times per arm, alternating; with token
    times, each request's latency and stream inside the batch (all repeats pooled)."""
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
        import numpy as np  # deferred: heavy

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
        worse.append(
            f"time per token (+{render.ms(change['d_time_per_token'])} ms, "
            f"95% [{render.ms(low)}, {render.ms(high)}])"
        )
    for name, a, b in (
        ("p95 latency", sa["latency_p95_s"], sb["latency_p95_s"]),
        (
            "p95 inter-token time",
            sa["stream"].get("inter_token_p95_s"),
            sb["stream"].get("inter_token_p95_s"),
        ),
    ):
        if a is not None and b is not None and b > a:
            worse.append(f"{name} ({render.ms(a)} -> {render.ms(b)} ms)")
    if not worse:
        return None
    k_low, k_high = change["dK_interval"]
    return (
        f"gamma {short} -> {long}: committed tokens per round rose by {change['dK']:.2f} (95% [{k_low:.2f}, "
        f"{k_high:.2f}]) while {' and '.join(worse)} got worse: the draft gain has not become a serving gain"
    )
