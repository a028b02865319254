"""The planned design: each instance sampled to the size that detects a total variation of
``tv`` with power ``power``.

The sample size of each instance is planned for its G-tests (exact p-values when the count
vectors can be enumerated) on the whole sequence and on each position's token
(:mod:`verispec.audits.views`), Bonferroni at false-alarm rate ``alpha / instances``, with
power ``power`` against every alternative at total variation ``tv`` from the target (the least
favourable one has Cohen's ``w = 2 tv``) from the sequence test at its share of the rate;
cells are pooled from the exact laws before sampling. The instances are sampled one after
another (:func:`~verispec.audits.sampling.sample_in_chunks`, the instance's random streams
resumed from chunk to chunk); a time limit keeps the samples drawn before it and leaves the
instance incomplete.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from verispec.audits.instances import AuditInstance, battery_options, to_spec
from verispec.audits.results import AuditResult, InstanceResult, exact_law, record_test, reproduce_command
from verispec.audits.sampling import (
    CHUNK_SECONDS,
    PLANNED_FIRST_CHUNK,
    Drawn,
    Isolation,
    open_lane,
    sample_in_chunks,
)
from verispec.audits.views import View, views
from verispec.stats.gof import pooled_cells
from verispec.stats.plan import chi_square_sample_size

__all__ = ["plan_instance", "planned_audit"]


def plan_instance(item: AuditInstance, *, alpha: float, power: float, tv: float) -> tuple[int, list[View]]:
    """The planned sample size and the test's views of one instance at rate ``alpha`` (the
    first view is the whole sequence, with the exact law keyed ``"t0 t1 ..."``): the sequence
    view is sized at its Bonferroni share ``alpha / (1 + length)``, so it alone has the
    declared power."""
    law = exact_law(item)
    share = alpha / (1 + item.length)
    n = 200
    for _ in range(4):  # the pooling depends on n and the plan on the pooling: iterate to a fixed point
        cells = pooled_cells(law, n)
        new_n = chi_square_sample_size(2 * tv, max(len(cells) - 1, 1), alpha=share, power=power)
        if new_n == n:
            break
        n = new_n
    return n, views(law, item.length, n)


def planned_audit(
    function: str | Callable[..., Any],
    name: str,
    kind: str,
    items: list[AuditInstance],
    *,
    alpha: float,
    power: float,
    tv: float,
    seed: int,
    timeout_s: float,
    law: str,
    isolation: Isolation,
    vocab: int | None = None,
    pairs: int | None = None,
    on_instance: Callable[[InstanceResult], None] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> AuditResult:
    """The planned design on the checked arguments of :func:`verispec.audits.runner.audit`:
    one lane (a worker process for ``"module:function"``, this process for a callable) samples
    each instance in turn, ``timeout_s`` in all per instance."""
    per_instance_alpha = alpha / len(items)
    plans = [plan_instance(item, alpha=per_instance_alpha, power=power, tv=tv) for item in items]
    command = reproduce_command(kind, name, f"--tv {tv:g}", alpha, power, seed, law, isolation.drafts)
    command += battery_options(vocab, pairs)
    results: list[InstanceResult] = []
    clock = time.perf_counter()
    with open_lane(function, isolation, timeout_s) as lane:
        for index, item in enumerate(items):
            n_planned, views_ = plans[index]
            progress = None
            if on_progress is not None:
                prefix = f"  {index + 1}/{len(items)} {item.name}: "
                progress = _prefixed(on_progress, prefix)
            drawn = sample_in_chunks(
                lane,
                _requests(index, item, seed * 1000 + index),
                min(PLANNED_FIRST_CHUNK, n_planned),
                _pace(n_planned),
                timeout_s=timeout_s,
                on_progress=progress,
                goal=n_planned,
            )
            now = time.perf_counter()
            result = InstanceResult(
                item.name,
                n_planned,
                drawn.n,
                per_instance_alpha,
                block_lengths=dict(drawn.blocks),
                error=drawn.error,
                incomplete=None
                if drawn.time_limit is None
                else f"time limit of {timeout_s:g} s reached after {drawn.n} of {n_planned} planned samples "
                "(the samples drawn are kept)",
                seconds=now - clock,
            )
            clock = now
            if result.n and result.error is None:
                record_test(result, dict(drawn.counts), views_, seed + index)
            results.append(result)
            if on_instance:
                on_instance(result)
    threads_used = isolation.threads if isinstance(function, str) else None
    return AuditResult(
        name, kind, alpha, power, tv, seed, command, results, threads=threads_used, drafts=isolation.drafts
    )


def _requests(index: int, item: AuditInstance, seed: int) -> Callable[[int, int], dict[str, Any]]:
    """The requests of one instance's chunks: one seed, the streams resumed after the first."""
    spec = to_spec(item)
    return lambda chunk, size: {"index": index, "spec": spec, "n": size, "seed": seed, "resume": chunk > 0}


def _pace(n_planned: int) -> Callable[[Drawn, int, float], int]:
    """The next chunk: about :data:`CHUNK_SECONDS` at the last chunk's speed, up to the plan."""

    def next_size(drawn: Drawn, size: int, seconds: float) -> int:
        if drawn.n >= n_planned:
            return 0
        return max(1, min(n_planned - drawn.n, int(size / max(seconds, 1e-9) * CHUNK_SECONDS)))

    return next_size


def _prefixed(on_progress: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda line: on_progress(prefix + line)
