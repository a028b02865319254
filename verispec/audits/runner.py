"""Black-box audits: is a third-party chain or tree verifier exact?

``verispec audit --chain module:function`` (or :func:`audit` from Python):

1. builds the audit battery (:mod:`verispec.audits.instances`) and, for each instance, the
   exact law of ``L`` tokens under the target;
2. plans the sample size of each instance: G-tests (exact p-values when the count vectors
   can be enumerated) on the whole sequence and on each position's token
   (:mod:`verispec.audits.views`), Bonferroni at false-alarm rate ``alpha / instances``,
   with power ``power`` against every alternative at total variation ``tv`` from the target
   (the least favourable one has Cohen's ``w = 2 tv``) from the sequence test at its share
   of the rate; cells are pooled from the exact laws before sampling;
3. samples the black box (in a subprocess with a time limit per instance, or in-process
   for a trusted callable), checking every returned block;
4. reports, per instance, the p-value, a total-variation estimate with a bootstrap
   interval, and errors; the verdict is ``fail`` (non-conformance) if any instance rejects or breaks
   the contract, and the command that reproduces the run.

Nothing measured is lost: each instance's result is recorded as soon as it arrives.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verispec.audits.budget import Budget
from verispec.audits.instances import (
    AuditInstance,
    chain_audit_instances,
    from_spec,
    self_drafting_instances,
    to_spec,
    tree_audit_instances,
)
from verispec.audits.views import CombinedTest, View, combined_test, views
from verispec.audits.worker import sample_instance
from verispec.errors import UsageError
from verispec.exact.criterion import target_law
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.gof import pooled_cells
from verispec.stats.plan import check_rate, chi_square_sample_size
from verispec.verdicts import Decision, RunVerdict

__all__ = ["AuditResult", "InstanceResult", "audit", "plan_instance"]

#: Bootstrap resamples for the total-variation interval.
BOOTSTRAP = 1000
#: Calls in an isolated instance's first chunk; later chunks are sized to take about
#: :data:`CHUNK_SECONDS` at the speed the last one ran (a chunk lost to the time limit loses
#: only itself, and progress is reported after each).
FIRST_CHUNK = 256
CHUNK_SECONDS = 2.0
#: Threads (OpenMP, MKL, OpenBLAS, hence torch) per worker process unless the user asks for
#: more: on a loaded machine a torch verifier's default threads ran 30x slower.
WORKER_THREADS = 1


@dataclass
class InstanceResult:
    name: str
    n_planned: int
    n: int
    alpha: float
    pvalue: float | None = None
    statistic: float | None = None
    method: str | None = None
    tv: float | None = None
    tv_interval: tuple[float, float] | None = None
    #: the plug-in ``tv`` less its bootstrap bias (inside ``tv_interval``, which the plug-in,
    #: biased upward by sampling noise, may not be)
    tv_corrected: float | None = None
    block_lengths: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    #: the instance's time limit ended its sampling before the planned size (the samples
    #: drawn are kept and tested; without a rejection the audit is inconclusive)
    incomplete: str | None = None
    #: a diagnostic beside the verdict (a failure on token 0 alone)
    note: str | None = None
    seconds: float = 0.0
    #: budgeted design: the smallest TV the samples drawn detect with the declared power,
    #: why sampling stopped ("budget" or "e-process"), and the final log e-value
    resolution: float | None = None
    stopped: str | None = None
    log_e: float | None = None
    #: the view whose test gave the p-value, and every view's own p-value (before Bonferroni)
    decided_by: str | None = None
    view_pvalues: dict[str, float] = field(default_factory=dict)

    @property
    def rejected(self) -> bool:
        return self.error is not None or (self.pvalue is not None and self.pvalue <= self.alpha)

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.name,
            "n_planned": self.n_planned,
            "n": self.n,
            "alpha": self.alpha,
            "pvalue": self.pvalue,
            "statistic": self.statistic,
            "method": self.method,
            "decided_by": self.decided_by,
            "view_pvalues": self.view_pvalues,
            "tv_estimate": self.tv,
            "tv_bias_corrected": self.tv_corrected,
            "tv_interval_95_basic_bootstrap": list(self.tv_interval) if self.tv_interval else None,
            "block_lengths": self.block_lengths,
            "error": self.error,
            "incomplete": self.incomplete,
            "note": self.note,
            "verdict": Decision.REJECTED
            if self.rejected
            else "incomplete"
            if self.incomplete
            else Decision.CONSISTENT,
            "seconds": round(self.seconds, 3),
            **(
                {"resolution_tv": self.resolution, "stopped": self.stopped, "log_e": self.log_e}
                if self.stopped
                else {}
            ),
        }


@dataclass
class AuditResult:
    function: str
    kind: str
    alpha: float
    power: float
    tv: float
    seed: int
    command: str
    instances: list[InstanceResult]
    budget: str | None = None
    #: threads per worker process (``None``: the libraries' defaults; in-process audits)
    threads: int | None = None
    #: whose drafts the black box verified: verispec's (``"given"``) or its own (``"self"``)
    drafts: str = "given"

    @property
    def verdict(self) -> RunVerdict:
        """``fail`` (non-conformance) if any instance rejects or broke the contract; else
        ``inconclusive`` if a time limit cut an instance short; else ``pass``."""
        if any(r.rejected for r in self.instances):
            return RunVerdict.FAIL
        if any(r.incomplete for r in self.instances):
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "kind": self.kind,
            "verdict": self.verdict,
            "alpha": self.alpha,
            "power": self.power,
            "tv": self.tv,
            "seed": self.seed,
            "reproduce": self.command,
            "budget": self.budget,
            "worker_threads": self.threads,
            "drafts": self.drafts,
            "instances": [r.to_json() for r in self.instances],
        }

    def markdown(self) -> str:
        from verispec.report.markdown import table

        power = (
            f"budget {self.budget}: each instance sampled for its share, then the smallest total variation "
            f"detected with power {self.power:g} (the resolution) reported per instance"
            if self.budget
            else f"power {self.power:g} against any total-variation distance >= {self.tv:g} per instance"
        )
        lines = [
            f"# Audit of `{self.function}` ({self.kind} verifier): **{self.verdict}**",
            "",
            f"- family-wise false-alarm rate {self.alpha:g} (split over {len(self.instances)} "
            f"instances), {power}",
            "- each instance is tested on the whole sequence and on each position's token (G-tests, "
            "Bonferroni over the views; the p-value is the smallest view's times the number of views)",
            "- TV is the total variation between the sample and the exact law on the test's cells: the "
            "plug-in estimate is biased upward by sampling noise (a correct verifier shows a small positive "
            "TV), so the report also gives it less its bootstrap bias, inside its basic bootstrap interval",
            f"- seed {self.seed}; reproduce with `{self.command}`",
            *([f"- {_threads_line(self.threads)}"] if self.threads is not None else []),
            *(
                [
                    "- the black box drafts for itself (`speculate(model, rng)`): only its blocks' shape "
                    "is checked, the law does the rest"
                ]
                if self.drafts == "self"
                else []
            ),
            *(
                [
                    "- **inconclusive**: a time limit cut instances short; their samples are tested, and "
                    "nothing was rejected (raise --timeout, or audit with --budget)"
                ]
                if self.verdict == RunVerdict.INCONCLUSIVE
                else []
            ),
            "",
        ]
        rows = []
        for r in self.instances:
            tv = "" if r.tv is None else f"{r.tv:.4f}"
            interval = (
                ""
                if r.tv_interval is None or r.tv_corrected is None
                else f"{r.tv_corrected:.4f} [{r.tv_interval[0]:.4f}, {r.tv_interval[1]:.4f}]"
            )
            pvalue = "" if r.pvalue is None else f"{r.pvalue:.3g}"
            verdict = (
                f"**{Decision.REJECTED}**" if r.rejected else "incomplete" if r.incomplete else "consistent"
            )
            row = [
                r.name,
                r.n,
                pvalue,
                r.decided_by or "",
                tv,
                interval,
                verdict,
                r.error or r.incomplete or "",
            ]
            if self.budget:
                row[2:2] = ["" if r.resolution is None else f"{r.resolution:.4f}", r.stopped or ""]
            rows.append(row)
        header = ["instance", "samples", "p-value", "decided by", "TV on cells (plug-in)"]
        header += ["TV bias-corrected [95% basic bootstrap]"]
        header += ["verdict", "error"]
        if self.budget:
            header[2:2] = ["resolution (TV)", "stopped by"]
        lines.append(table(header, rows))
        lines += [f"- note on {r.name}: {r.note}" for r in self.instances if r.note]
        return "\n".join(lines) + "\n"


def _threads_line(threads: int) -> str:
    return (
        f"worker threads: {threads} per worker process (OMP_NUM_THREADS, MKL_NUM_THREADS and "
        "OPENBLAS_NUM_THREADS, which torch follows); --threads N to change"
    )


def plan_instance(item: AuditInstance, *, alpha: float, power: float, tv: float) -> tuple[int, list[View]]:
    """The planned sample size and the test's views of one instance at rate ``alpha`` (the
    first view is the whole sequence, with the exact law keyed ``"t0 t1 ..."``): the sequence
    view is sized at its Bonferroni share ``alpha / (1 + length)``, so it alone has the
    declared power."""
    law = _exact_law(item)
    share = alpha / (1 + item.length)
    n = 200
    for _ in range(4):  # the pooling depends on n and the plan on the pooling: iterate to a fixed point
        cells = pooled_cells(law, n)
        new_n = chi_square_sample_size(2 * tv, max(len(cells) - 1, 1), alpha=share, power=power)
        if new_n == n:
            break
        n = new_n
    return n, views(law, item.length, n)


def _exact_law(item: AuditInstance) -> dict[str, Any]:
    """The target's exact law of an instance's ``length`` tokens, keyed ``"t0 t1 ..."``."""
    return {" ".join(map(str, k)): v for k, v in target_law(item.instance, item.length).items()}


def _tv_with_interval(
    counts: dict[str, int], law: dict[str, Any], cells: list[list[Any]], seed: int
) -> tuple[float, float, tuple[float, float]]:
    """Total variation between the sample and the exact law on the test's cells: the plug-in
    estimate, the estimate less its bootstrap bias (``2 tv - mean``), and the basic
    (bias-correcting) bootstrap 95% interval, all clipped at 0. The plug-in is biased upward
    by sampling noise, so the interval, which subtracts the bootstrap's estimate of that bias,
    can lie below it; the bias-corrected estimate lies inside the interval.
    """
    import numpy as np

    from verispec.stats.gof import cell_counts

    observed, probs, _ = cell_counts(counts, law, cells)
    n = sum(observed)
    freq = np.asarray(observed, dtype=np.float64) / n
    exact = np.asarray(probs, dtype=np.float64)
    tv = 0.5 * float(np.abs(freq - exact).sum())
    rng = np.random.default_rng(seed)
    boot = 0.5 * np.abs(rng.multinomial(n, freq, size=BOOTSTRAP) / n - exact).sum(axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    corrected = max(0.0, 2 * tv - float(boot.mean()))
    return tv, corrected, (max(0.0, 2 * tv - float(high)), max(0.0, 2 * tv - float(low)))


def _record_test(
    result: InstanceResult, counts: dict[str, int], views_: list[View], seed: int
) -> CombinedTest:
    """Run the instance's combined test on ``counts``; record it and the TV estimate (on the
    sequence view's cells)."""
    test = combined_test(counts, views_)
    result.pvalue, result.statistic, result.method = test.pvalue, test.statistic, test.method
    result.decided_by, result.view_pvalues = test.decided_by, test.view_pvalues
    result.tv, result.tv_corrected, result.tv_interval = _tv_with_interval(
        counts, views_[0].law, views_[0].cells, seed
    )
    if result.pvalue <= result.alpha:
        result.note = _without_token_zero(counts, views_[0].law, len(views_) - 1, result.alpha)
    return test


def _without_token_zero(counts: dict[str, int], law: dict[str, Any], length: int, alpha: float) -> str | None:
    """A diagnostic for a rejected instance: the same test on the samples that hold no token
    0, against the exact law given that. Where those are consistent with it, the black box
    may mishandle token 0 only (as code that reserves it for padding does), which the report
    says; ``None`` otherwise. It changes no verdict."""
    kept = {k: v for k, v in law.items() if "0" not in k.split()}
    total = sum(kept.values())
    sub = {k: c for k, c in counts.items() if "0" not in k.split()}
    n = sum(sub.values())
    if not kept or not total or not n or len(kept) == len(law):
        return None
    test = combined_test(sub, views({k: v / total for k, v in kept.items()}, length, n))
    if test.pvalue <= alpha:
        return None
    return (
        f"rejected, but the {n} samples without token 0 are consistent with the target's law given that "
        f"(p = {test.pvalue:.3g}): the black box may mishandle token 0 alone (code that reserves it for "
        "padding does); audits draw token 0 as an ordinary token"
    )


@dataclass(frozen=True)
class Isolation:
    """How an audited function runs: ``threads`` per worker process (``None``: the libraries'
    defaults), the interpreter ``python`` (``None``: verispec's own), and whose ``drafts`` it
    verifies (``"given"``: verispec's, drawn from the declared law; ``"self"``: it drafts
    itself, :class:`~verispec.audits.worker.SelfDraftRounds`)."""

    threads: int | None = WORKER_THREADS
    python: str | None = None
    drafts: str = "given"

    def worker(self, function: str, timeout_s: float) -> Any:
        """A started audit worker. One that cannot start is a usage error (the function cannot
        be imported, a package missing under ``python``, an import that kills the process),
        never an instance's fault."""
        from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout

        worker = Worker(
            "verispec.audits.worker",
            {"function": function},
            startup_timeout_s=timeout_s,
            threads=self.threads,
            python=self.python,
        )
        try:
            worker.start()
        except (WorkerCrashed, WorkerTimeout) as exc:
            worker.close()
            under = f" under {self.python}" if self.python else ""
            raise UsageError(
                f"function={function!r}: the audit worker could not start{under}: {exc}"
            ) from None
        except RemoteError as exc:
            worker.close()
            raise UsageError(
                exc.message if exc.kind == "usage" else f"function={function!r}: {exc}"
            ) from None
        except BaseException:
            worker.close()
            raise
        return worker


def _run_isolated(
    function: str,
    jobs: list[dict[str, Any]],
    timeout_s: float,
    on_item: Callable[[int, dict[str, Any]], None],
    isolation: Isolation,
) -> None:
    """One request per job to the worker (:mod:`verispec.isolation`); a hang or a crash is
    that job's error, and the next job starts a fresh worker."""
    with isolation.worker(function, timeout_s) as worker:
        for job in jobs:
            answer = _ask(worker, job, timeout_s)
            if "time_limit" in answer:
                answer = {"error": answer["time_limit"]}
            on_item(job["index"], answer)


def _sample_in_chunks(
    worker: Any, job: dict[str, Any], timeout_s: float, on_progress: Callable[[str], None] | None
) -> dict[str, Any]:
    """Sample one instance's ``job["n"]`` calls in chunks within ``timeout_s`` in all; the
    chunks answered are kept whatever happens to a later one (``"time_limit"`` says when the
    limit ended it early). The worker continues the same random streams from chunk to chunk,
    so the samples are those of one uninterrupted run."""
    from collections import Counter

    counts: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    out: dict[str, Any] = {"error": None}
    start = time.monotonic()
    deadline, size, done, told = start + timeout_s, min(FIRST_CHUNK, job["n"]), 0, start
    while done < job["n"]:
        remaining = deadline - time.monotonic()
        began = time.monotonic()
        answer = (
            _ask(worker, {**job, "n": size, "resume": done > 0}, remaining)
            if remaining > 0
            else {"time_limit": ""}
        )
        counts.update(answer.get("counts", {}))
        blocks.update(answer.get("block_lengths", {}))
        done = sum(blocks.values())
        if "time_limit" in answer:
            out["time_limit"] = (
                f"time limit of {timeout_s:g} s reached after {done} of {job['n']} planned samples "
                "(the samples drawn are kept)"
            )
            break
        if answer.get("error"):
            out["error"] = answer["error"]
            break
        now = time.monotonic()
        rate = size / max(now - began, 1e-9)
        size = max(1, min(job["n"] - done, int(rate * CHUNK_SECONDS)))
        if on_progress and (now - told >= CHUNK_SECONDS or done >= job["n"]):
            told = now
            on_progress(f"    {done:,}/{job['n']:,} samples, {done / max(now - start, 1e-9):,.0f} calls/s")
    out["counts"], out["block_lengths"] = dict(counts), dict(blocks)
    return out


def _ask(worker: Any, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One request to the audit worker; a crash or an exception is the answer's error, a
    hang its ``"time_limit"``."""
    from verispec.isolation import RemoteError, WorkerCrashed, WorkerTimeout

    try:
        return dict(worker.ask(job, timeout_s))
    except WorkerTimeout:
        return {"time_limit": f"did not finish within {timeout_s:g} s (time limit)"}
    except WorkerCrashed as exc:
        return {"error": f"the audit process crashed: {exc}"}
    except RemoteError as exc:
        if exc.kind == "usage":  # the function could not be loaded
            raise UsageError(exc.message) from None
        where = f" at {exc.where}" if exc.where else ""
        return {"error": f"the audit worker raised {exc}{where}"}


def _target_name(function: str | Callable[..., Any], seed: Any) -> str:
    """Check an audit's ``function`` and ``seed``; the name its report and command use."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed={seed!r} must be a non-negative integer")
    if isinstance(function, str):
        if function.count(":") != 1 or not all(function.split(":")):
            raise UsageError(f"function={function!r} must be written module:function")
        return function
    return str(getattr(function, "__qualname__", repr(function)))


def _battery(
    kind: str, seed: int, law: str, drafts: str = "given", vocab: int | None = None, pairs: int | None = None
) -> list[AuditInstance]:
    """The audit battery of ``kind`` (``"chain"`` or ``"tree"``, of candidate law ``law``; for
    a chain black box that drafts for itself, the tie-free one), over ``vocab`` tokens with
    ``pairs`` more random model pairs (``None``: the battery's defaults)."""
    if kind not in ("chain", "tree"):
        raise UsageError(f"kind={kind!r} must be 'chain' or 'tree'")
    options: dict[str, Any] = {n: v for n, v in (("vocab", vocab), ("pairs", pairs)) if v is not None}
    if kind == "tree":
        return tree_audit_instances(seed, law=law, **options)
    if drafts == "self":
        return self_drafting_instances(seed, **options)
    return chain_audit_instances(seed, **options)


def _battery_options(vocab: int | None, pairs: int | None) -> str:
    """The battery's options on a reproduce command line."""
    return (f" --vocab {vocab}" if vocab is not None else "") + (
        f" --instances {pairs}" if pairs is not None else ""
    )


def _law_option(kind: str, law: str) -> str:
    return f" --law {law}" if kind == "tree" else ""


def _command(
    kind: str, name: str, design: str, alpha: float, power: float, seed: int, law: str, drafts: str = "given"
) -> str:
    """The command line that reproduces an audit; ``design`` is ``--tv X`` or ``--budget B``."""
    command = f"verispec audit --{kind} {name} --alpha {alpha:g} --power {power:g} {design} --seed {seed}"
    return command + _law_option(kind, law) + (" --drafts self" if drafts == "self" else "")


def audit(
    function: str | Callable[..., Any],
    kind: str = "chain",
    *,
    alpha: float = SUITE_ALPHA,
    power: float = 0.99,
    tv: float = 0.05,
    seed: int = 0,
    timeout_s: float = 120.0,
    law: str = "iid",
    instances: list[AuditInstance] | None = None,
    on_instance: Callable[[InstanceResult], None] | None = None,
    budget: Budget | None = None,
    workers: int | None = None,
    threads: int | None = WORKER_THREADS,
    python: str | None = None,
    on_progress: Callable[[str], None] | None = None,
    drafts: str = "given",
    vocab: int | None = None,
    pairs: int | None = None,
) -> AuditResult:
    """Audit ``function`` (``"module:function"``, run in a subprocess, or a callable, run here).

    ``kind`` is ``"chain"`` or ``"tree"``; ``law`` is the candidate law of the tree battery.
    With ``budget`` (:mod:`verispec.audits.budget`) each instance is sampled for its share of
    it instead of a planned size, and reports its resolution; ``tv`` is then unused, and
    ``workers`` worker processes (default: one per CPU) sample instances at once. A worker
    process runs ``threads`` threads (``None``: the libraries' defaults) under the interpreter
    ``python`` (default: this one). ``timeout_s`` limits each instance: the samples drawn
    before it are kept and tested, and an instance it cut short leaves the audit inconclusive
    unless something is rejected. ``on_progress`` receives a line after each chunk of samples.
    ``drafts="self"`` audits a chain black box that drafts for itself,
    ``speculate(model, rng) -> block`` (:class:`~verispec.audits.worker.SelfDraftRounds`).
    ``vocab`` and ``pairs`` set the battery's vocabulary and its number of extra random model
    pairs (default: the battery's own, 4 and 0 for chains, 3 and 2 for trees).
    """
    check_rate("alpha", alpha)
    check_rate("power", power)
    if not 0 < tv < 1:
        raise UsageError(f"tv={tv!r} must be in (0, 1)")
    name = _target_name(function, seed)
    isolation = _isolation(threads, python, drafts, kind)
    items = instances or _battery(kind, seed, law, drafts, vocab, pairs)
    battery = _battery_options(vocab, pairs)
    if budget is not None:
        return _budgeted(
            function,
            name,
            kind,
            items,
            budget,
            alpha,
            power,
            seed,
            timeout_s,
            law,
            on_instance,
            workers,
            isolation,
            battery,
        )
    per_instance_alpha = alpha / len(items)
    plans = [plan_instance(item, alpha=per_instance_alpha, power=power, tv=tv) for item in items]
    command = _command(kind, name, f"--tv {tv:g}", alpha, power, seed, law, drafts) + battery
    results: list[InstanceResult | None] = [None] * len(items)
    clock = [time.perf_counter()]

    def finish(index: int, data: dict[str, Any]) -> None:
        n_planned, views_ = plans[index]
        counts = data.get("counts", {})
        now = time.perf_counter()
        result = InstanceResult(
            items[index].name,
            n_planned,
            sum(counts.values()),
            per_instance_alpha,
            block_lengths=data.get("block_lengths", {}),
            error=data.get("error"),
            incomplete=data.get("time_limit"),
            seconds=now - clock[0],
        )
        clock[0] = now
        if result.n and result.error is None:
            _record_test(result, counts, views_, seed + index)
        results[index] = result
        if on_instance:
            on_instance(result)

    jobs = [
        {"index": i, "spec": to_spec(item), "n": plans[i][0], "seed": seed * 1000 + i, "drafts": drafts}
        for i, item in enumerate(items)
    ]
    if isinstance(function, str):

        def progress(index: int) -> Callable[[str], None] | None:
            if on_progress is None:
                return None
            return lambda line: on_progress(f"  {index + 1}/{len(items)} {items[index].name}: {line.strip()}")

        with isolation.worker(function, timeout_s) as worker:
            for i, job in enumerate(jobs):
                finish(i, _sample_in_chunks(worker, job, timeout_s, progress(i)))
    else:
        for i, item in enumerate(items):
            finish(i, sample_instance(function, item, plans[i][0], seed * 1000 + i, drafts))
    done = [r for r in results if r is not None]
    threads_used = isolation.threads if isinstance(function, str) else None
    return AuditResult(name, kind, alpha, power, tv, seed, command, done, threads=threads_used, drafts=drafts)


def _isolation(
    threads: int | None, python: str | None, drafts: str = "given", kind: str = "chain"
) -> Isolation:
    """Check the worker's ``threads``, ``python`` and the black box's ``drafts``."""
    import os

    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise UsageError(f"threads={threads!r} must be a positive integer or None")
    if python is not None and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise UsageError(f"python={python!r} is not an executable file")
    if drafts not in ("given", "self"):
        raise UsageError(f"drafts={drafts!r} must be 'given' or 'self'")
    if drafts == "self" and kind != "chain":
        raise UsageError(f"drafts='self' audits chain black boxes only (kind={kind!r})")
    return Isolation(threads, python, drafts)


#: Rounds per instance and boundary in the boundary mode (the drafts vary; the pins do not).
BOUNDARY_CALLS = 64


@dataclass
class BoundaryResult:
    """The boundary mode's outcome (:mod:`verispec.audits.boundary`)."""

    function: str
    seed: int
    command: str
    instances: list[dict[str, Any]]
    seconds: float = 0.0

    def _tally(self, key: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.instances:
            for source, count in r.get(key, {}).items():
                out[source] = out.get(source, 0) + count
        return out

    @property
    def draws(self) -> dict[str, int]:
        """Pinned uniforms by source and width."""
        return self._tally("draws")

    @property
    def unpinned(self) -> dict[str, int]:
        """Categorical draws left to the real generator, by source."""
        return self._tally("unpinned")

    @property
    def per_draw_probability(self) -> float | None:
        """The chance that one uniform of the widest grid the verifier drew from (the coarsest:
        float32 before float64) takes a given boundary value: ``2^-24`` or ``2^-53``."""
        from verispec.audits.boundary import GRID_BITS

        widths = [w for w in GRID_BITS if any(f"({w})" in source for source in self.draws)]
        return 2.0 ** -min(GRID_BITS[w] for w in widths) if widths else None

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [{"instance": r["instance"], **f} for r in self.instances for f in r.get("findings", [])]

    @property
    def verdict(self) -> RunVerdict:
        """``fail`` on a finding or an error; ``inconclusive`` when nothing could be pinned."""
        if self.findings or any(r.get("errors") or r.get("error") for r in self.instances):
            return RunVerdict.FAIL
        if not self.draws or self.unpinnable:
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    @property
    def unpinnable(self) -> list[str]:
        return [f"{r['instance']}: {m}" for r in self.instances for m in r.get("unpinnable", {}).values()]

    @property
    def reason(self) -> str:
        if self.findings:
            f = self.findings[0]
            where = "an accepted draft" if f["accepted_draft"] else "the corrected or bonus token"
            return (
                f"{len(self.findings)} emitted token(s) of target probability 0; first: token "
                f"{f['token']} at position {f['position']} ({where}) of instance {f['instance']} with "
                f"every uniform at the {f['boundary']} boundary, drafts {f['drafts']}, block "
                f"{f['block']}; a real generator draws that uniform with probability "
                f"{self.per_draw_probability or 0:.3g} per draw"
            )
        errors = [
            (r["instance"], e)
            for r in self.instances
            for e in [r.get("error"), *r.get("errors", {}).values()]
            if e
        ]
        if errors:
            return f"{errors[0][0]}: {errors[0][1]}"
        if self.unpinnable:
            return f"inconclusive: {self.unpinnable[0]}"
        if not self.draws:
            return (
                "the verifier drew no uniform the boundary mode can pin (neither from the rng it was "
                "given nor from numpy's, Python's or torch's global generators): inconclusive"
            )
        return (
            f"no token of target probability 0 at any boundary ({sum(self.draws.values())} pinned uniforms)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "mode": "boundary",
            "verdict": self.verdict,
            "finding_class": "boundary non-conformance" if self.findings else None,
            "reason": self.reason,
            "per_draw_probability": self.per_draw_probability,
            "pinned_draws": self.draws,
            "unpinned_draws": self.unpinned,
            "seed": self.seed,
            "reproduce": self.command,
            "seconds": round(self.seconds, 3),
            "instances": self.instances,
        }

    def markdown(self) -> str:
        from verispec.report.markdown import table

        lines = [
            f"# Boundary audit of `{self.function}`: **{self.verdict}**",
            "",
            f"- {self.reason}",
            "- pinned uniforms by source: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.draws.items())) or "none"),
            *(
                [
                    "- left to the real generator (no boundary value is one of its draws): "
                    + ", ".join(f"{k} {v}" for k, v in sorted(self.unpinned.items()))
                ]
                if self.unpinned
                else []
            ),
            f"- seed {self.seed}; reproduce with `{self.command}`",
            "",
        ]
        rows = [
            [f["instance"], f["boundary"], f["position"], f["token"], f["drafts"], f["block"]]
            for f in self.findings[:50]
        ]
        if rows:
            lines.append(
                table(["instance", "boundary", "position", "token (p = 0)", "drafts", "block"], rows)
            )
        return "\n".join(lines) + "\n"


def boundary_audit(
    function: str | Callable[..., Any],
    kind: str = "chain",
    *,
    law: str = "iid",
    seed: int = 0,
    timeout_s: float = 120.0,
    calls: int = BOUNDARY_CALLS,
    instances: list[AuditInstance] | None = None,
    on_instance: Callable[[dict[str, Any]], None] | None = None,
    threads: int | None = WORKER_THREADS,
    python: str | None = None,
    vocab: int | None = None,
    pairs: int | None = None,
) -> BoundaryResult:
    """Run the verifier ``function`` at every boundary of its uniforms on the chain battery
    (``kind="chain"``) or the tree battery of candidate law ``law`` (``kind="tree"``):
    ``"module:function"`` in a subprocess with a time limit, or a callable here."""
    from verispec.audits.boundary import probe_instance

    name = _target_name(function, seed)
    isolation = _isolation(threads, python)
    items = instances or _battery(kind, seed, law, vocab=vocab, pairs=pairs)
    results: list[dict[str, Any] | None] = [None] * len(items)
    start = time.perf_counter()

    def finish(index: int, data: dict[str, Any]) -> None:
        results[index] = {"instance": items[index].name, **data}
        if on_instance:
            on_instance(results[index] or {})

    jobs = [
        {"index": i, "mode": "boundary", "spec": to_spec(item), "n": calls, "seed": seed * 1000 + i}
        for i, item in enumerate(items)
    ]
    if isinstance(function, str):
        _run_isolated(function, jobs, timeout_s, finish, isolation)
    else:
        for i, item in enumerate(items):
            finish(i, probe_instance(function, item, calls, seed * 1000 + i))
    command = f"verispec audit --{kind} {name}{_law_option(kind, law)} --boundary --seed {seed}"
    command += _battery_options(vocab, pairs)
    done = [r for r in results if r is not None]
    return BoundaryResult(name, seed, command, done, time.perf_counter() - start)


def _budgeted(
    function: str | Callable[..., Any],
    name: str,
    kind: str,
    items: list[AuditInstance],
    budget: Budget,
    alpha: float,
    power: float,
    seed: int,
    timeout_s: float,
    law: str,
    on_instance: Callable[[InstanceResult], None] | None,
    workers: int | None,
    isolation: Isolation,
    battery: str = "",
) -> AuditResult:
    """The budgeted design (:mod:`verispec.audits.budget`): chunks sized by the verifier's
    speed, an e-process after each chunk and a G-test at the end, each at half the instance's
    rate; the resolution from the samples drawn.

    A ``"module:function"`` runs in ``workers`` worker processes at once (default: one per
    CPU, at most one per instance), each taking the next instance; a time budget is wall
    time, so each instance gets ``seconds * workers / instances`` of a worker's time. A
    callable runs here, one instance after another.
    """
    import os
    import threading

    text = f"{budget.seconds:g}s" if budget.seconds is not None else str(budget.samples)
    command = _command(kind, name, f"--budget {text}", alpha, power, seed, law, isolation.drafts) + battery
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers={workers!r} must be a positive integer")
    lanes = 1 if not isinstance(function, str) else min(workers or os.cpu_count() or 1, len(items))
    half = alpha / len(items) / 2
    share_s = None if budget.seconds is None else budget.seconds * lanes / len(items)
    share_n = None if budget.samples is None else max(1, budget.samples // len(items))
    results: list[InstanceResult | None] = [None] * len(items)
    lock = threading.Lock()
    pending = list(range(len(items)))

    def finish(index: int, result: InstanceResult) -> None:
        with lock:
            results[index] = result
            if on_instance:
                on_instance(result)

    def lane() -> None:
        import contextlib

        with contextlib.ExitStack() as stack:
            if isinstance(function, str):
                worker = stack.enter_context(isolation.worker(function, timeout_s))

                def ask(job: dict[str, Any]) -> dict[str, Any]:
                    return _ask(worker, {**job, "drafts": isolation.drafts}, timeout_s)

                # one discarded round first: the verifier's own imports (vLLM's take seconds)
                # are paid outside the budget, not by whichever instance the worker takes first
                ask({"index": -1, "spec": to_spec(items[0]), "n": 1, "seed": seed * 1_000_000 + 999_999})
            else:
                callable_function = function

                def ask(job: dict[str, Any]) -> dict[str, Any]:
                    spec = from_spec(job["spec"])
                    return sample_instance(callable_function, spec, job["n"], job["seed"], isolation.drafts)

            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.pop(0)
                finish(
                    index, _budgeted_instance(ask, index, items[index], share_s, share_n, half, power, seed)
                )

    if lanes == 1:
        lane()
    else:
        errors: list[BaseException] = []

        def guarded() -> None:
            try:
                lane()
            except BaseException as exc:  # a usage error (the function cannot be loaded) ends the audit
                with lock:
                    errors.append(exc)
                    pending.clear()

        threads = [threading.Thread(target=guarded, daemon=True) for _ in range(lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
    done = [r for r in results if r is not None]
    threads_used = isolation.threads if isinstance(function, str) else None
    return AuditResult(
        name,
        kind,
        alpha,
        power,
        0.0,
        seed,
        command,
        done,
        budget=budget.describe(),
        threads=threads_used,
        drafts=isolation.drafts,
    )


def _budgeted_instance(
    ask: Callable[[dict[str, Any]], dict[str, Any]],
    index: int,
    item: AuditInstance,
    share_s: float | None,
    share_n: int | None,
    half: float,
    power: float,
    seed: int,
) -> InstanceResult:
    """Sample one instance for its share of the budget; test it and state its resolution."""
    from collections import Counter

    from verispec.audits.budget import FIRST_CHUNK, GROWTH, resolution
    from verispec.stats.sequential import dirichlet_log_e

    threshold = math.log(1 / half)
    exact = _exact_law(item)
    counts: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    drawn, spent, chunk, error, stopped = 0, 0.0, 0, None, "budget"
    incomplete: str | None = None
    size = FIRST_CHUNK if share_n is None else min(FIRST_CHUNK, share_n)
    log_e = 0.0
    while size >= 1:
        job = {
            "index": index,
            "spec": to_spec(item),
            "n": size,
            "seed": seed * 1_000_000 + index * 1000 + chunk,
        }
        start = time.perf_counter()
        data = ask(job)
        took = time.perf_counter() - start
        spent += took
        chunk += 1
        counts.update(data.get("counts", {}))
        blocks.update(data.get("block_lengths", {}))
        drawn = sum(counts.values())
        if data.get("error"):
            error = data["error"]
            break
        if "time_limit" in data:
            incomplete = (
                f"a chunk of {size} samples {data['time_limit'] or 'reached the time limit'}; {drawn} kept"
            )
            break
        log_e = dirichlet_log_e(counts, exact)
        if log_e >= threshold:
            stopped = "e-process"
            break
        if share_n is not None:
            size = min(share_n - drawn, GROWTH * drawn)
        else:
            assert share_s is not None
            # the last chunk's speed (the worker was warmed up before its first instance)
            rate = size / max(took, 1e-9)
            size = min(int((share_s - spent) * rate), GROWTH * drawn)
    result = InstanceResult(
        item.name,
        drawn,
        drawn,
        half,
        block_lengths=dict(blocks),
        error=error,
        incomplete=incomplete,
        seconds=spent,
    )
    result.stopped, result.log_e = stopped, log_e
    if drawn and error is None:
        views_ = views(exact, item.length, drawn)
        test = _record_test(result, counts, views_, seed + index)
        e_pvalue = 0.0 if log_e == math.inf else min(1.0, math.exp(-log_e))
        if e_pvalue < test.pvalue:
            result.decided_by = "e-process"
        result.pvalue = min(test.pvalue, e_pvalue)
        result.method = f"{test.method}; and Dirichlet e-process"
        # what a pass rules out: the sequence view alone, at its share of the G-test's half
        share = half / len(views_)
        result.resolution = resolution(drawn, len(views_[0].cells) - 1, alpha=share, power=power)
    return result
