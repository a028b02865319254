"""The budgeted design: sample each instance for its share of a time or sample budget, and
report the total variation the samples drawn could have detected (the audit's resolution).

``verispec audit`` runs it by default, for 60 s (``--budget 2m``, or a number of samples,
``--budget 2000000``, to choose). The budget is split evenly over the battery's instances.
Each instance is sampled in chunks (:data:`~verispec.audits.sampling.BUDGETED_FIRST_CHUNK`
samples first, then as many as its remaining time allows at the speed of the last chunk, at
most :data:`~verispec.audits.sampling.GROWTH` times the samples drawn before: the e-process
is checked at least at every doubling); the chunk sizes depend on the verifier's speed, never
on its outputs. A verifier given as ``module:function`` runs in one worker process per CPU,
each taking the next instance, so a time budget is wall time shared by the workers. Two tests
share the instance's false-alarm rate ``alpha / instances`` in halves:

* an anytime-valid e-process (the Dirichlet mixture of
  :class:`~verispec.stats.sequential.DirichletEProcess` over the unpooled outcomes, in its
  batch form :func:`~verispec.stats.sequential.dirichlet_log_e`) checked after every chunk:
  the instance stops early, rejected, the first time it reaches ``2 instances / alpha``
  (Ville's inequality holds at any stopping time);
* at the end of the budget, the G-tests of the sequence and position views on the cells
  pooled for the samples drawn, Bonferroni-combined as in the planned audit
  (:mod:`verispec.audits.views`).

The resolution of an instance is the smallest total variation at which the final sequence
test, at its Bonferroni share of the half rate and with the samples drawn, has the declared
power (the least favourable alternative has Cohen's ``w = 2 tv``): what a pass rules out.
"""

from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verispec.audits.instances import AuditInstance, battery_options, to_spec
from verispec.audits.results import AuditResult, InstanceResult, exact_law, record_test, reproduce_command
from verispec.audits.sampling import (
    BUDGETED_FIRST_CHUNK,
    GROWTH,
    Drawn,
    Isolation,
    Lane,
    open_lane,
    sample_in_chunks,
)
from verispec.audits.views import views
from verispec.errors import UsageError
from verispec.stats.plan import chi_square_power
from verispec.stats.sequential import dirichlet_log_e

__all__ = ["SamplingBudget", "budgeted_audit", "parse_budget", "resolution"]


@dataclass(frozen=True)
class SamplingBudget:
    """How much sampling a budgeted audit may do in all: a time (``seconds``) or a number of
    samples (``samples``), split evenly over the instances. (Not the false-alarm budget,
    :class:`verispec.Budget`.)"""

    seconds: float | None = None
    samples: int | None = None

    def describe(self) -> str:
        return f"{self.seconds:g} s" if self.seconds is not None else f"{self.samples} samples"

    def option(self) -> str:
        """The budget as ``--budget`` writes it (``60s``, ``2000000``)."""
        return f"{self.seconds:g}s" if self.seconds is not None else str(self.samples)


def parse_budget(text: str) -> SamplingBudget:
    """``"60s"``, ``"2m"``, ``"1.5m"`` (time) or ``"2000000"`` (samples, over the battery)."""
    value = str(text).strip().lower()
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*(s|m)", value)
    if match:
        seconds = float(match.group(1)) * (60.0 if match.group(2) == "m" else 1.0)
        if not seconds > 0 or not math.isfinite(seconds):
            raise UsageError(f"budget={text!r} must be a positive time (60s, 2m) or number of samples")
        return SamplingBudget(seconds=seconds)
    if re.fullmatch(r"\d+", value):
        samples = int(value)
        if samples < 1:
            raise UsageError(f"budget={text!r} must be a positive time (60s, 2m) or number of samples")
        return SamplingBudget(samples=samples)
    raise UsageError(f"budget={text!r} is not a time (60s, 2m) or a number of samples (2000000)")


def resolution(n: int, df: int, *, alpha: float, power: float) -> float | None:
    """The smallest total variation the G-test (Pearson's noncentral approximation) detects
    with ``power`` at ``n`` samples and rate ``alpha``; ``None`` if not even 0.49."""
    df = max(df, 1)
    if n < 1 or chi_square_power(n, 2 * 0.49, df, alpha) < power:
        return None
    low, high = 1e-6, 0.49
    for _ in range(60):
        mid = math.sqrt(low * high)
        if chi_square_power(n, 2 * mid, df, alpha) >= power:
            high = mid
        else:
            low = mid
    return high


def budgeted_audit(
    function: str | Callable[..., Any],
    name: str,
    kind: str,
    items: list[AuditInstance],
    budget: SamplingBudget,
    *,
    alpha: float,
    power: float,
    seed: int,
    timeout_s: float,
    law: str,
    isolation: Isolation,
    workers: int | None = None,
    vocab: int | None = None,
    pairs: int | None = None,
    on_instance: Callable[[InstanceResult], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> AuditResult:
    """The budgeted design on the checked arguments of :func:`verispec.audits.runner.audit`.

    A ``"module:function"`` runs in ``workers`` worker processes at once (default: one per
    CPU, at most one per instance), each taking the next instance; a time budget is wall
    time, so each instance gets ``seconds * workers / instances`` of a worker's time, and
    ``timeout_s`` limits each chunk. A callable runs here, one instance after another.
    """
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers={workers!r} must be a positive integer")
    design = f"--budget {budget.option()}"
    command = reproduce_command(kind, name, design, alpha, power, seed, law, isolation.drafts)
    command += battery_options(vocab, pairs)
    lanes = 1 if not isinstance(function, str) else min(workers or os.cpu_count() or 1, len(items))
    half = alpha / len(items) / 2
    share_s = None if budget.seconds is None else budget.seconds * lanes / len(items)
    share_n = None if budget.samples is None else max(1, budget.samples // len(items))
    results: list[InstanceResult | None] = [None] * len(items)
    lock = threading.Lock()
    pending = list(range(len(items)))

    def progress(index: int) -> Callable[[str], None] | None:
        if on_progress is None:
            return None
        prefix = f"  {index + 1}/{len(items)} {items[index].name}: "

        def line(text: str) -> None:
            with lock:  # the lanes' lines never interleave
                on_progress(prefix + text)

        return line

    def run_lane() -> None:
        with open_lane(function, isolation, timeout_s) as lane:
            if lane.isolated:
                # one discarded round first: the verifier's own imports (vLLM's take seconds)
                # are paid outside the budget, not by whichever instance the worker takes first
                warm_up = {"index": -1, "spec": to_spec(items[0]), "n": 1, "seed": seed * 1_000_000 + 999_999}
                lane.ask(warm_up, timeout_s)
            while True:
                with lock:
                    if not pending:
                        return
                    index = pending.pop(0)
                result = _budgeted_instance(
                    lane, index, items[index], share_s, share_n, half, power, seed, timeout_s, progress(index)
                )
                with lock:
                    results[index] = result
                    if on_instance:
                        on_instance(result)

    if lanes == 1:
        run_lane()
    else:
        errors: list[BaseException] = []

        def guarded() -> None:
            try:
                run_lane()
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


class _EProcess:
    """The instance's e-process, checked after every chunk: it stops the sampling the first
    time its log e-value reaches ``log(1 / rate)``."""

    def __init__(self, law: dict[str, Any], rate: float) -> None:
        self.law, self.threshold = law, math.log(1 / rate)
        self.log_e, self.stopped = 0.0, False

    def __call__(self, drawn: Drawn) -> bool:
        self.log_e = dirichlet_log_e(drawn.counts, self.law)
        self.stopped = self.log_e >= self.threshold
        return self.stopped


def _budgeted_instance(
    lane: Lane,
    index: int,
    item: AuditInstance,
    share_s: float | None,
    share_n: int | None,
    half: float,
    power: float,
    seed: int,
    timeout_s: float,
    on_progress: Callable[[str], None] | None,
) -> InstanceResult:
    """Sample one instance for its share of the budget; test it and state its resolution."""
    exact = exact_law(item)
    spec = to_spec(item)
    e_process = _EProcess(exact, half)

    def request(chunk: int, size: int) -> dict[str, Any]:
        return {"index": index, "spec": spec, "n": size, "seed": seed * 1_000_000 + index * 1000 + chunk}

    def next_size(drawn: Drawn, size: int, seconds: float) -> int:
        if share_n is not None:
            return min(share_n - drawn.n, GROWTH * drawn.n)
        assert share_s is not None
        # the last chunk's speed (the worker was warmed up before its first instance)
        rate = size / max(seconds, 1e-9)
        return min(int((share_s - drawn.seconds) * rate), GROWTH * drawn.n)

    first = BUDGETED_FIRST_CHUNK if share_n is None else min(BUDGETED_FIRST_CHUNK, share_n)
    drawn = sample_in_chunks(
        lane,
        request,
        first,
        next_size,
        timeout_s=timeout_s,
        limit_each_chunk=True,
        stop=e_process,
        on_progress=on_progress,
    )
    incomplete = None
    if drawn.time_limit is not None:
        cut = drawn.time_limit or "reached the time limit"
        incomplete = f"a chunk of {drawn.cut_chunk} samples {cut}; {drawn.n} kept"
    result = InstanceResult(
        item.name,
        drawn.n,
        drawn.n,
        half,
        block_lengths=dict(drawn.blocks),
        error=drawn.error,
        incomplete=incomplete,
        seconds=drawn.seconds,
    )
    result.stopped = "e-process" if e_process.stopped else "budget"
    result.log_e = e_process.log_e
    if drawn.n and drawn.error is None:
        views_ = views(exact, item.length, drawn.n)
        test = record_test(result, dict(drawn.counts), views_, seed + index)
        log_e = e_process.log_e
        e_pvalue = 0.0 if log_e == math.inf else min(1.0, math.exp(-log_e))
        if e_pvalue < test.pvalue:
            result.decided_by = "e-process"
        result.pvalue = min(test.pvalue, e_pvalue)
        result.method = f"{test.method}; and Dirichlet e-process"
        # what a pass rules out: the sequence view alone, at its share of the G-test's half
        share = half / len(views_)
        result.resolution = resolution(drawn.n, len(views_[0].cells) - 1, alpha=share, power=power)
    return result
