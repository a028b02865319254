"""Run the conformance checks on one engine and report (JSON, Markdown, JUnit XML, HTML).

The engine runs in its own process (:class:`~verispec.conformance.proxy.EngineProxy`) with a
time limit per request; a crash, a hang or a bad answer fails the check that met it, with
the reason, and the run goes on. The run's false-alarm budget (default 1e-6) is split
evenly over the statistical checks that run. Results are written to the report folder as
each check finishes.
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

from verispec.conformance.checks import CHECKS, POWER, Check, CheckResult, Context
from verispec.conformance.proxy import EngineError, EngineOutputError, EngineProxy
from verispec.errors import UsageError, unknown_name
from verispec.report.folder import ReportFolder
from verispec.stats.constants import SUITE_ALPHA

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
    results: list[CheckResult] = field(default_factory=list)
    wall_seconds: float = 0.0
    engine_seconds: float = 0.0
    startup_seconds: float = 0.0
    generate_calls: int = 0
    tokens: int = 0
    restarts: int = 0
    environment: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        statuses = {r.status for r in self.results}
        if "fail" in statuses:
            return "fail"
        if "error" in statuses:
            return "error"
        return "pass"

    def to_json(self) -> dict[str, Any]:
        running = self.wall_seconds - self.startup_seconds
        share = 1 - self.engine_seconds / running if running > 0 else None
        return {
            "schema": "verispec.conformance/1",
            "engine": self.engine,
            "name": self.name,
            "capabilities": self.capabilities,
            "vocab_size": self.vocab_size,
            "device": self.device,
            "seed": self.seed,
            "alpha": self.alpha,
            "power": POWER,
            "quick": self.quick,
            "design": self.design,
            "verdict": self.verdict,
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
            "reproduce": f"verispec conform --engine {self.engine} --seed {self.seed}"
            + (" --quick" if self.quick else "")
            + (" --design sequential" if self.design == "sequential" else "")
            + f" --alpha {self.alpha:g}",
        }


def _select(names: Sequence[str] | None) -> list[Check]:
    known = {c.name: c for c in CHECKS}
    if not names:
        return list(CHECKS)
    for n in names:
        if n not in known:
            raise unknown_name("check", n, known)
    return [known[n] for n in names]


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
) -> ConformanceRun:
    """Run the conformance checks on ``engine`` (a built-in name or ``module:factory``).

    ``design`` is ``"planned"`` (fixed sample sizes) or ``"sequential"`` (the first-token
    law stops at the first evidence); ``on_progress(check, done, planned)`` reports long
    checks as they go; ``threads`` caps the engine process's CPU threads.
    """
    from verispec.report import environment

    if not 0 < alpha < 1:
        raise UsageError(f"alpha={alpha!r} must be in (0, 1)")
    if design not in DESIGNS:
        raise UsageError(f"design={design!r} is not one of {', '.join(DESIGNS)}")
    selected = _select(checks)
    start = time.perf_counter()
    with EngineProxy(engine, device=device, options=options, timeout_s=timeout_s, threads=threads) as proxy:
        run = ConformanceRun(
            engine,
            proxy.name,
            sorted(proxy.capabilities),
            proxy.vocab_size,
            device,
            seed,
            alpha,
            quick,
            design,
            environment=environment(),
        )
        runnable = [c for c in selected if c.needs <= proxy.capabilities]
        statistical = [c for c in runnable if c.statistical]
        per_check = alpha / max(len(statistical), 1)
        writer = _Writer(Path(out)) if out else None
        mismatch = _vocabulary_mismatch(proxy)
        for check in selected:
            if on_start:
                on_start(check.name)
            missing = sorted(check.needs - proxy.capabilities)
            calls_before, t0 = proxy.calls, time.perf_counter()
            if mismatch:
                result = CheckResult(check.name, "fail", mismatch)
            elif missing:
                result = CheckResult(
                    check.name, "skip", f"the engine lacks the capability {', '.join(missing)}"
                )
            else:
                ctx = Context(
                    proxy,
                    per_check if check.statistical else alpha,
                    quick,
                    seed,
                    design,
                    None if on_progress is None else functools.partial(on_progress, check.name),
                )
                try:
                    result = check.run(ctx, check)
                except EngineOutputError as exc:
                    result = CheckResult(check.name, "fail", f"bad output: {exc}")
                except EngineError as exc:
                    result = CheckResult(check.name, "fail", f"engine error: {exc}")
                except UsageError as exc:
                    result = CheckResult(check.name, "fail", f"engine misuse: {exc}")
                except Exception as exc:  # the harness itself failed: an error, never a pass
                    result = CheckResult(check.name, "error", f"verispec error: {type(exc).__name__}: {exc}")
                run.tokens += sum(len(c.tokens) for _, c in ctx.seen)
            result.generate_calls = proxy.calls - calls_before
            result.seconds = time.perf_counter() - t0
            run.results.append(result)
            run.generate_calls, run.engine_seconds, run.restarts = proxy.calls, proxy.seconds, proxy.restarts
            run.startup_seconds = proxy.startup_seconds
            run.wall_seconds = time.perf_counter() - start
            if writer:
                writer.write(run, result)
            if on_result:
                on_result(result)
    run.wall_seconds = time.perf_counter() - start
    if writer:
        writer.finish(run)
    return run


def _vocabulary_mismatch(proxy: EngineProxy) -> str | None:
    """The engine's vocabulary against its baseline's: a mismatch fails every check."""
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
        from verispec.conformance.render import html, junit, markdown

        data = run.to_json()
        data["status"] = "running" if partial else "complete"
        self.folder.write("report.json", json.dumps(data, indent=2) + "\n")
        self.folder.write("report.md", markdown(data))
        self.folder.write("junit.xml", junit(data))
        self.folder.write("report.html", html(data))
