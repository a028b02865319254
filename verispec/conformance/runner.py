"""Run the conformance checks on one engine and report (JSON, Markdown, JUnit XML, HTML).

The engine runs in its own process (:class:`~verispec.conformance.proxy.EngineProxy`) with a
time limit per request; a crash, a hang or a bad answer fails the check that met it, with
the reason, and the run goes on. The run's false-alarm budget (default 1e-6) is split once,
by a :class:`~verispec.stats.multiplicity.Budget`, evenly over the statistical checks that
run; each check splits its share over its own tests and decides each at the alpha it was
planned at. Results are written to the report folder as each check finishes.

The run's verdict: ``fail`` if a check failed (an expected failure listed in the manifest
does not count, and is reported as ``xfail``), ``error`` if verispec itself failed in a
check, ``inconclusive`` when nothing passed or every statistical check that was asked for was
skipped (an engine that declares no capability cannot be shown to keep the law), else
``pass``.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verispec.conformance.checks import POWER, Check, CheckResult, select
from verispec.conformance.checks.context import Context
from verispec.conformance.expected import (
    ExpectedFailure,
    for_engine,
    load_expected_failures,
    mark_expected,
    unmatched,
)
from verispec.conformance.proxy import EngineError, EngineOutputError, EngineProxy
from verispec.conformance.render import html, junit, markdown
from verispec.engines import registry as engines
from verispec.errors import UsageError
from verispec.report import environment
from verispec.report.folder import ReportFolder
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.multiplicity import Budget
from verispec.verdicts import Evidence, Failure, RunVerdict, Status

__all__ = ["DESIGNS", "ConformanceRun", "conform"]

DESIGNS = ("planned", "sequential")


@dataclass
class ConformanceRun:
    engine: str
    name: str
    capabilities: list[str]
    vocab_size: int
    device: str
    seed: int
    alpha: float
    quick: bool
    design: str = "planned"
    selected: list[Check] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: what the engine says about itself (its version, the baseline's measured gap)
    notes: list[str] = field(default_factory=list)
    budget: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    engine_seconds: float = 0.0
    startup_seconds: float = 0.0
    generate_calls: int = 0
    tokens: int = 0
    restarts: int = 0
    expected_failures: str | None = None
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def inconclusive_reason(self) -> str | None:
        """Why the passing checks do not add up to a pass, or ``None``."""
        passed = [r for r in self.results if r.status == Status.PASS]
        if not passed:
            return "no check passed"
        statistical = {c.name for c in self.selected if c.statistical}
        if statistical and not any(r.name in statistical for r in passed):
            return "every statistical check was skipped or expected to fail: the law was not tested"
        return None

    @property
    def verdict(self) -> RunVerdict:
        statuses = {r.status for r in self.results}
        if Status.FAIL in statuses:
            return RunVerdict.FAIL
        if Status.ERROR in statuses:
            return RunVerdict.ERROR
        if self.inconclusive_reason:
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    @property
    def blind_spots(self) -> list[dict[str, str]]:
        """A quick run's known blind spots: the catalog's bugs its checks must catch that only
        the full sizes see (empty for a full run)."""
        if not self.quick:
            return []
        ran = [r.name for r in self.results]
        return [
            {
                "control": b.control,
                "checks": ", ".join(c for c in b.caught_by if c in ran),
                "why": str(b.quick_miss),
            }
            for b in engines.quick_blind_spots(ran)
        ]

    @property
    def reproduce(self) -> str:
        return (
            f"verispec conform --engine {self.engine} --seed {self.seed}"
            + (" --quick" if self.quick else "")
            + (" --design sequential" if self.design == "sequential" else "")
            + f" --alpha {self.alpha:g}"
            + (f" --expected-failures {self.expected_failures}" if self.expected_failures else "")
        )

    def to_json(self) -> dict[str, Any]:
        running = self.wall_seconds - self.startup_seconds
        share = 1 - self.engine_seconds / running if running > 0 else None
        return {
            "schema": "verispec.conformance/2",
            "engine": self.engine,
            "name": self.name,
            "capabilities": self.capabilities,
            "vocab_size": self.vocab_size,
            "device": self.device,
            "seed": self.seed,
            "seeds": "each request's seed and prompt: BLAKE2b of (run seed, check, stream, index), 31 bits",
            "alpha": self.alpha,
            "power": POWER,
            "budget": self.budget,
            "quick": self.quick,
            "design": self.design,
            "verdict": self.verdict,
            "inconclusive": self.inconclusive_reason if self.verdict == RunVerdict.INCONCLUSIVE else None,
            "warnings": self.warnings,
            "quick_blind_spots": self.blind_spots,
            "engine_notes": self.notes,
            "environment": self.environment,
            "performance": {
                "wall_seconds": round(self.wall_seconds, 2),
                "engine_seconds": round(self.engine_seconds, 2),
                "startup_seconds": round(self.startup_seconds, 2),
                "harness_share": None if share is None else round(share, 3),
                "generate_calls": self.generate_calls,
                "tokens": self.tokens,
                "requests_per_second": round(self.generate_calls / self.wall_seconds, 2)
                if self.wall_seconds
                else None,
                "tokens_per_second": round(self.tokens / self.wall_seconds, 1) if self.wall_seconds else None,
                "engine_restarts": self.restarts,
            },
            "checks": [r.to_json() for r in self.results],
            "reproduce": self.reproduce,
        }


def _run_one_check(ctx: Context) -> CheckResult:
    """One check; an engine that breaks fails it with the reason (its kind recorded apart from
    detections), verispec breaking is an error, never a pass."""
    try:
        result = ctx.check.run(ctx)
        if ctx.left_out:
            result.details["settings_left_out"] = dict(ctx.left_out)
            result.reason += f" (left out, the engine cannot take them: {', '.join(ctx.left_out)})"
        return result
    except EngineOutputError as exc:
        return ctx.result(
            Status.FAIL, f"bad output: {exc}", failure=Failure.BAD_OUTPUT, evidence=Evidence.BAD_OUTPUT
        )
    except EngineError as exc:
        prefix = "engine misuse" if exc.failure == Failure.MISUSE else "engine error"
        return ctx.result(Status.FAIL, f"{prefix}: {exc}", failure=exc.failure)
    except UsageError as exc:  # the engine could not be restarted, or refused its own settings
        return ctx.result(Status.FAIL, f"engine misuse: {exc}", failure=Failure.MISUSE)
    except Exception as exc:  # the harness itself failed: an error, never a pass
        return ctx.result(Status.ERROR, f"verispec error: {type(exc).__name__}: {exc}")


def conform(
    engine: str,
    *,
    device: str = "cpu",
    quick: bool = False,
    seed: int = 0,
    alpha: float = SUITE_ALPHA,
    checks: Sequence[str] | None = None,
    options: dict[str, Any] | None = None,
    timeout_s: float = 300.0,
    out: str | os.PathLike[str] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
    on_start: Callable[[str], None] | None = None,
    on_progress: Callable[[str, int, int], None] | None = None,
    design: str = "planned",
    threads: int | None = None,
    expected_failures: str | os.PathLike[str] | Sequence[ExpectedFailure] | None = None,
) -> ConformanceRun:
    """Run the conformance checks on ``engine`` (a built-in name or ``module:factory``).

    ``design`` is ``"planned"`` (fixed sample sizes) or ``"sequential"`` (the first-token
    law stops at the first evidence); ``on_progress(check, done, planned)`` reports long
    checks as they go; ``threads`` caps the engine process's CPU threads;
    ``expected_failures`` is a manifest (a TOML path, or entries) of failures to report as
    expected (:mod:`verispec.conformance.expected`).
    """
    budget = Budget(alpha)
    if design not in DESIGNS:
        raise UsageError(f"design={design!r} is not one of {', '.join(DESIGNS)}")
    selected = select(checks)
    manifest_path = None
    if isinstance(expected_failures, str | os.PathLike):
        manifest_path = str(expected_failures)
        entries = load_expected_failures(expected_failures)
    else:
        entries = list(expected_failures or [])
    start = time.perf_counter()
    with EngineProxy(engine, device=device, options=options, timeout_s=timeout_s, threads=threads) as proxy:
        run = ConformanceRun(
            engine,
            proxy.name,
            sorted(proxy.capabilities),
            proxy.vocab_size,
            proxy.device_description,
            seed,
            alpha,
            quick,
            design,
            selected=selected,
            expected_failures=manifest_path,
            environment=environment(proxy.device_description),
        )
        run.notes = list(proxy.notes)
        listed = for_engine(entries, engine=engine, name=proxy.name)
        runnable = [c for c in selected if not c.missing(proxy.capabilities)]
        shares = budget.split([c.name for c in runnable if c.statistical])
        writer = _Writer(Path(out)) if out else None
        mismatch = _vocabulary_mismatch(proxy)
        for check in selected:
            if on_start:
                on_start(check.name)
            missing = check.missing(proxy.capabilities)
            calls_before, t0 = proxy.calls, time.perf_counter()
            ctx = Context(
                proxy,
                check,
                quick,
                seed,
                shares.get(check.name),
                design,
                None if on_progress is None else functools.partial(on_progress, check.name),
            )
            if missing:
                result = ctx.skipped(f"the engine lacks the capability {', '.join(missing)}")
            elif mismatch and "target-logits" in check.needs:
                result = ctx.result(
                    Status.FAIL, mismatch, failure=Failure.BAD_OUTPUT, evidence=Evidence.BAD_OUTPUT
                )
            else:
                result = _run_one_check(ctx)
                run.tokens += sum(len(c.tokens) for _, c in ctx.seen)
            result.generate_calls = proxy.calls - calls_before
            result.seconds = time.perf_counter() - t0
            warning = mark_expected(result, listed)
            if warning:
                run.warnings.append(warning)
            run.results.append(result)
            run.budget = budget.to_json()
            run.generate_calls, run.engine_seconds, run.restarts = proxy.calls, proxy.seconds, proxy.restarts
            run.startup_seconds = proxy.startup_seconds
            run.wall_seconds = time.perf_counter() - start
            if writer:
                writer.write(run, result)
            if on_result:
                on_result(result)
    run.warnings += unmatched(listed, [r.name for r in run.results])
    run.wall_seconds = time.perf_counter() - start
    if writer:
        writer.finish(run)
    return run


def _vocabulary_mismatch(proxy: EngineProxy) -> str | None:
    """The engine's vocabulary against its baseline's: a mismatch fails every check that
    compares with the baseline. An engine without the baseline is not probed."""
    if "target-logits" not in proxy.capabilities:
        return None
    try:
        rows = proxy.logits_along("target", (3, 4), [5])
    except EngineError as exc:
        return f"the engine's baseline cannot be read: {exc}"
    if len(rows[0]) != proxy.vocab_size:
        return (
            f"vocabulary mismatch: the engine declares vocab_size={proxy.vocab_size} but its target's "
            f"baseline has {len(rows[0])} logits"
        )
    return None


class _Writer:
    """Writes the report folder after every check (a crash keeps what was measured)."""

    def __init__(self, folder: Path) -> None:
        self.folder = ReportFolder(folder)

    def write(self, run: ConformanceRun, result: CheckResult) -> None:
        self.folder.append(result.to_json())
        self.finish(run, partial=True)

    def finish(self, run: ConformanceRun, partial: bool = False) -> None:
        data = run.to_json()
        data["status"] = "running" if partial else "complete"
        self.folder.write("report.json", json.dumps(data, indent=2) + "\n")
        self.folder.write("report.md", markdown(data))
        self.folder.write("junit.xml", junit(data))
        self.folder.write("report.html", html(data))
