"""The main job, ``verispec check``, as a library function: everything on built-in defaults.

Six steps: the seed articles' numbers; the general symbolic theorems, expected lengths and
the one-node optimum; the SMT catalog of index conventions; every registered verifier proved
or refuted; the conformance suite on the built-in engines with tiny seeded models; and the
negative controls. Every result is written to the report folder as it arrives
(:class:`~verispec.report.ReportWriter`), so a crash midway keeps what was measured.

>>> from verispec.mainjob import CHECK_ENGINES
>>> CHECK_ENGINES
('reference', 'hf-assisted')
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from verispec._compat import deprecated_name
from verispec.conformance.runner import conform
from verispec.controls.mutants import Layer
from verispec.controls.runner import run_controls
from verispec.errors import installed
from verispec.exact.articles import article_checks
from verispec.exact.lengths import length_table
from verispec.exact.optimum import optimum_table
from verispec.exact.prove import ProveBudget, prove, prove_verdict
from verispec.exact.symbolic import theorems_for
from verispec.report import ReportWriter
from verispec.report.lines import control_line, prove_line, smt_line, subject_line
from verispec.smt.catalog import CATALOG, run_catalog
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.multiplicity import Budget
from verispec.verdicts import RunVerdict, Status, VerdictKind
from verispec.verifiers import registry

__all__ = ["CHECK_ENGINES", "MainJob", "run_main_job"]

#: Engines the main job runs the conformance suite on, with tiny seeded models.
CHECK_ENGINES = ("reference", "hf-assisted")


@dataclass
class MainJob:
    """What the main job established: its verdict, the summary counts, and every result
    that was not as expected."""

    verdict: RunVerdict
    summary: dict[str, Any]
    failures: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    out: str = "verispec-report"


def _missing_torch_and_transformers() -> list[str]:
    return [m for m in ("torch", "transformers") if not installed(m)]


def run_main_job(
    out: str | os.PathLike[str] = "verispec-report",
    *,
    quick: bool = False,
    instances: int | None = None,
    seed: int = 0,
    jobs: int = 2,
    command: Sequence[str] = ("verispec", "check"),
    progress: Callable[[str], None] | None = None,
) -> MainJob:
    """Run the main job and write its report folder ``out`` (see the module docstring).

    ``progress`` receives one line per step and per result (the CLI prints them on stderr).
    """
    say = progress or (lambda line: None)
    out = os.fspath(out)
    budget = ProveBudget.quick(seed) if quick else ProveBudget(seed=seed)
    if instances is not None:
        budget = replace(budget, instances=instances)
    report = ReportWriter(
        out, command=list(command), settings={"quick": quick, "jobs": jobs, "budget": budget.to_json()}
    )
    started = time.perf_counter()
    failures: list[str] = []
    unknown: list[str] = []

    say(f"verispec check: writing {out}/ (report.md, report.json, results.jsonl)")
    checks = article_checks()
    say(f"[1/6] the seed articles' numbers ({len(checks)} checks)")
    for article_check in checks:
        result = article_check()
        report.add("articles", result.to_json())
        say(f"  {'ok ' if result.ok else 'BAD'} {result.name}")
        if not result.ok:
            failures.append(f"article {result.name}: " + "; ".join(result.mismatches()))

    general = theorems_for(None)
    say(
        f"[2/6] symbolic theorems ({len(general)} general; the rest run with their verifier) "
        "and expected lengths"
    )
    for theorem in general:
        t = theorem()
        report.add("theorems", t.to_json())
        say(f"  {'ok ' if t.verdict.passed else 'BAD'} {t.name} [{t.prover}] {t.verdict.kind}")
        if not t.verdict.passed:
            unknown.append(f"theorem {t.name}")

    rows = length_table()
    for row in rows:
        report.add("lengths", row.to_json())
        if not (row.agrees and row.exact):
            failures.append(f"expected length of {row.verifier} on {row.instance}: law and tail sum disagree")
    exact_names = registry.names("exact")
    say(
        f"  ok  expected accepted length of {len(exact_names)} verifiers on "
        f"{len(rows) // len(exact_names)} reference instances"
        if all(r.agrees and r.exact for r in rows)
        else "  BAD expected accepted lengths"
    )

    optimum = optimum_table()
    for opt in optimum:
        report.add("optimum", opt.to_json())
        if abs(float(opt.optimum) - opt.optimum_lp) > 1e-7 or opt.gap < 0:
            failures.append(
                f"one-node optimum for {opt.verifier} on {opt.label}: LP and closed form disagree"
            )
    say(f"  ok  one-node acceptance of the tree verifiers against the optimum ({len(optimum)} rows)")

    say(f"[3/6] SMT: {len(CATALOG)} mask, position, crop, draft-sync, paged-cache and tree conventions")
    smt_width = max(len(e.name) for e in CATALOG)
    smt_results: list[Any] = []

    def record_smt(r: Any) -> None:
        smt_results.append(r)
        report.add("smt", r.to_json())
        say("  " + smt_line(r.entry.name, r.entry.convention, r.entry.expected, r.result, smt_width))
        if not r.ok:
            (unknown if r.result.verdict.kind == VerdictKind.UNKNOWN else failures).append(
                f"smt {r.entry.name}: {r.result.verdict.kind}, expected {r.entry.expected}"
            )

    run_catalog(on_result=record_smt)

    names = registry.names()
    width = max(len(n) for n in names)
    say(f"[4/6] {len(names)} verifiers with {jobs} process(es), seed {budget.seed}")

    def record(result: Any) -> None:
        report.add("prove", result.to_json())
        for theorem_json in result.theorems:
            report.add("theorems", theorem_json)
        say("  " + prove_line(result, width))

    results = prove(names, budget, jobs=jobs, on_result=record)
    conformance = _conformance(out, quick, report, failures, say)
    controls_caught = _controls(out, quick, jobs, report, failures, results, smt_results, say)
    verdict = prove_verdict(results)
    if failures:
        verdict = RunVerdict.FAIL
    elif unknown and verdict == RunVerdict.PASS:
        verdict = RunVerdict.INCONCLUSIVE
    failures += [f"{r.name}: {r.verdict}" for r in results if not r.ok]
    exact = [r for r in results if r.kind == "exact"]
    controls = [r for r in results if r.kind == "control"]
    articles = report.data["sections"].get("articles", [])
    summary = {
        "exact proved": f"{sum(r.ok for r in exact)}/{len(exact)}",
        "controls refuted": f"{sum(r.ok for r in controls)}/{len(controls)}",
        "article numbers": f"{sum(a['ok'] for a in articles)}/{len(checks)}",
        "smt conventions": f"{sum(r['ok'] for r in report.data['sections'].get('smt', []))}/{len(CATALOG)}",
        "engines conforming": conformance,
        "controls caught": controls_caught,
        "seconds": round(time.perf_counter() - started, 1),
    }
    report.finish(verdict, summary)
    return MainJob(verdict, summary, failures, unknown, out)


def _conformance(out: str, quick: bool, report: Any, failures: list[str], say: Callable[[str], None]) -> str:
    """Step 5: the conformance suite on the built-in engines; the family-wise false-alarm
    budget is split between them. Without torch and transformers it is skipped, and the
    report says so."""
    say(
        f"[5/6] conformance ({'quick' if quick else 'full'}) of {', '.join(CHECK_ENGINES)} "
        "on tiny seeded models"
    )
    missing = _missing_torch_and_transformers()
    if missing:
        reason = f"skipped: {' and '.join(missing)} not installed (pip install 'verispec[all]')"
        say(f"  --  {reason}")
        for engine in CHECK_ENGINES:
            report.add("conformance", {"engine": engine, "verdict": Status.SKIP, "reason": reason})
        return "skipped"
    shares = Budget(SUITE_ALPHA).split(list(CHECK_ENGINES))
    passed = 0
    for engine in CHECK_ENGINES:
        run = conform(
            engine, quick=quick, alpha=shares[engine].total, out=os.path.join(out, "conformance", engine)
        )
        data = run.to_json()
        report.add(
            "conformance",
            {
                "engine": engine,
                "verdict": run.verdict,
                "checks": {r.name: r.status for r in run.results},
                "wall_seconds": data["performance"]["wall_seconds"],
                "report": f"conformance/{engine}/report.html",
            },
        )
        statuses = ", ".join(f"{r.name} {r.status}" for r in run.results)
        say(f"  {'ok ' if run.verdict == RunVerdict.PASS else 'BAD'} {engine}: {statuses}")
        passed += run.verdict == RunVerdict.PASS
        if run.verdict != RunVerdict.PASS:
            bad = [r for r in run.results if r.status in (Status.FAIL, Status.ERROR)]
            failures += [f"conformance of {engine}: {r.name}: {r.reason}" for r in bad]
            if not bad:
                failures.append(f"conformance of {engine}: {run.verdict}: {run.inconclusive_reason}")
    return f"{passed}/{len(CHECK_ENGINES)}"


def _controls(
    out: str,
    quick: bool,
    jobs: int,
    report: Any,
    failures: list[str],
    prove_results: Any,
    smt_results: Any,
    say: Callable[[str], None],
) -> str:
    """Step 6: the negative controls, reusing the verifier and SMT results of steps 3 and 4.
    A quick run leaves out the engine controls whose checks are statistical."""
    mode = "smoke: deterministic engine checks" if quick else "declared checks at full size"
    say(f"[6/6] negative controls ({mode}); report in {out}/controls/")
    layers: tuple[Layer, ...] = ("verifier", "index")
    if not _missing_torch_and_transformers():
        layers = ("verifier", "engine", "index")
    else:
        say("  --  engine controls skipped: torch and transformers are not installed")

    # steps 3 and 4 have shown the verifier and index results already
    def show(r: Any) -> None:
        if r.control.layer == "engine":
            say(control_line(r))

    def show_subject(s: Any) -> None:
        if s.layer == "engine":
            say(subject_line(s))

    run = run_controls(
        layers,
        quick=quick,
        statistical=not quick,
        full_matrix=False,
        jobs=max(jobs, 2),
        out=os.path.join(out, "controls"),
        prove_results=prove_results,
        smt_results=smt_results,
        on_control=show,
        on_subject=show_subject,
    )
    data = run.to_json()
    report.add(
        "controls",
        {
            "verdict": run.verdict,
            "outcomes": data["outcomes"],
            "samples_to_detection": data["samples_to_detection"],
            "escaped": data["escaped"],
            "not_run": data["not_run"],
            "flagged_subjects": data["flagged_subjects"],
            "report": "controls/report.html",
        },
    )
    failures += [f"control not caught: {name}" for name in data["escaped"]]
    failures += [f"correct subject flagged by the controls run: {name}" for name in data["flagged_subjects"]]
    ran = len(run.controls) - len(run.not_run)
    return f"{ran - len(run.escaped)}/{ran}"


def __getattr__(name: str) -> Any:
    if name in ("run_check", "CheckJob"):
        new = {"run_check": "run_main_job", "CheckJob": "MainJob"}[name]
        deprecated_name(f"verispec.mainjob.{name}", f"verispec.mainjob.{new}")
        return globals()[new]
    raise AttributeError(f"module 'verispec.mainjob' has no attribute {name!r}")
