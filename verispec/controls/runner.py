"""Run every control through the checks that apply to it, and the unmutated subjects too.

* verifier controls go to the exact checker (a shrunk counterexample is the detection);
  the exact verifiers are their unmutated subjects;
* index controls go to z3 (a concrete case); the proved conventions are the subjects;
* engine controls run the conformance suite on a mutated reference engine, at the suite's
  false-alarm rate; the unmutated ``reference`` and ``reference-tree`` are the subjects.

An engine control is caught only when a check its record names fails through the evidence the
record names for it (the statistic, the impossible token, the mismatch, the count, the bad id):
the cell keeps that evidence. The engine crashing, hanging or refusing a request, and a check
that errors, make the control an error, never a catch; a declared check failing through other
evidence is no catch either. A verifier or index control is caught by its counterexample.
Results are written as each one arrives.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from verispec.conformance.checks import checks
from verispec.conformance.runner import conform
from verispec.controls.mutants import LAYERS, Layer, Mutant, catalog, for_engine
from verispec.controls.render import html, markdown
from verispec.engines import registry as engines
from verispec.errors import MissingDependency, UsageError
from verispec.exact.prove import ProveBudget, prove
from verispec.report.folder import ReportFolder
from verispec.smt.catalog import run_catalog
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.multiplicity import Budget
from verispec.verdicts import Evidence, Failure, Outcome, RunVerdict, Status, SubjectOutcome, VerdictKind
from verispec.verifiers import registry as verifiers

__all__ = ["Cell", "ControlResult", "ControlsRun", "SubjectResult", "run_controls"]


@dataclass
class Cell:
    """One subject under one check: the check's own status and what it saw."""

    check: str
    status: Status  # FAIL: the check flags it; PASS, SKIP or ERROR
    pvalue: float | None = None
    samples: int | None = None  # generate calls (engine) or instances (verifier)
    detail: str = ""  # the check's reason, or the counterexample
    #: why an engine check failed: a detection, bad output, or the engine breaking
    failure: Failure | None = None
    #: what an engine check that failed through the engine's output saw
    evidence: Evidence | None = None

    @property
    def engine_broke(self) -> bool:
        """The check failed because the engine crashed, hung or refused a valid request."""
        return self.status == Status.FAIL and self.failure is not None and self.failure.is_engine_breaking

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "status": self.status,
            "pvalue": self.pvalue,
            "samples": self.samples,
            "failure": self.failure,
            "evidence": self.evidence,
            "detail": self.detail,
        }


def catches(control: Mutant, cell: Cell) -> bool:
    """Whether ``cell`` catches ``control``: a refutation (verifier and index layers), or a
    check the record names failing through the evidence it names (engine layer)."""
    if cell.status != Status.FAIL:
        return False
    if control.layer != "engine":
        return True
    return cell.check in control.caught_by and cell.evidence == control.evidence_for(cell.check)


@dataclass
class ControlResult:
    control: Mutant
    cells: list[Cell]
    seconds: float

    not_run: str | None = None  # why the control was left out of this run
    reproduce: str | None = None  # the command that repeats the catching run, where it differs

    def catches(self, cell: Cell) -> bool:
        return catches(self.control, cell)

    @property
    def outcome(self) -> Outcome:
        """Caught (see :meth:`catches`), an error (the engine broke or a check errored, and
        nothing caught it), escaped, or not run (left out of a smoke run, with the reason)."""
        if self.not_run:
            return Outcome.NOT_RUN
        if any(self.catches(c) for c in self.cells):
            return Outcome.CAUGHT
        if any(c.engine_broke or c.status == Status.ERROR for c in self.cells):
            return Outcome.ERROR
        return Outcome.ESCAPED

    @property
    def samples_to_detection(self) -> int | None:
        """The fewest samples a catching check used (generate calls for engine controls)."""
        used = [c.samples for c in self.cells if self.catches(c) and c.samples]
        return min(used) if used else None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.control.to_json(),
            **({"reproduce": self.reproduce} if self.reproduce else {}),
            "outcome": self.outcome,
            "caught_by": [c.check for c in self.cells if self.catches(c)],
            "samples_to_detection": self.samples_to_detection,
            "seconds": round(self.seconds, 2),
            "not_run": self.not_run,
            "cells": [c.to_json() for c in self.cells],
        }


@dataclass
class SubjectResult:
    """An unmutated subject (exact verifier, proved convention, correct engine)."""

    name: str
    layer: Layer
    cells: list[Cell]
    seconds: float = 0.0
    #: an engine's fixes of its own bugs, applied as they were with its mutants
    fixes: tuple[str, ...] = ()

    @property
    def outcome(self) -> SubjectOutcome:
        if any(c.status == Status.FAIL for c in self.cells):
            return SubjectOutcome.FLAGGED
        if any(c.status == Status.ERROR for c in self.cells):
            return SubjectOutcome.ERROR
        return SubjectOutcome.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "outcome": self.outcome,
            "seconds": round(self.seconds, 2),
            "fixes": list(self.fixes),
            "cells": [c.to_json() for c in self.cells],
        }


@dataclass
class ControlsRun:
    quick: bool
    alpha: float
    layers: tuple[Layer, ...]
    full_matrix: bool = False
    controls: list[ControlResult] = field(default_factory=list)
    subjects: list[SubjectResult] = field(default_factory=list)
    wall_seconds: float = 0.0
    #: engine controls left out because their engine's optional extra is not installed
    left_out: list[str] = field(default_factory=list)

    @property
    def escaped(self) -> list[ControlResult]:
        return [r for r in self.controls if r.outcome in (Outcome.ESCAPED, Outcome.ERROR)]

    @property
    def not_run(self) -> list[ControlResult]:
        return [r for r in self.controls if r.outcome == Outcome.NOT_RUN]

    @property
    def flagged(self) -> list[SubjectResult]:
        return [s for s in self.subjects if s.outcome != SubjectOutcome.PASS]

    @property
    def verdict(self) -> RunVerdict:
        return RunVerdict.FAIL if self.escaped or self.flagged else RunVerdict.PASS

    def detection_summary(self) -> dict[str, Any]:
        engine = [r.samples_to_detection for r in self.controls if r.control.layer == "engine"]
        counted = sorted(s for s in engine if s is not None)
        return {
            "engine_mutants": len(engine),
            "statistically_caught": len(counted),
            "median_generate_calls": statistics.median(counted) if counted else None,
            "max_generate_calls": counted[-1] if counted else None,
        }

    def to_json(self, status: str = "complete") -> dict[str, Any]:
        outcomes: dict[str, int] = {}
        for r in self.controls:
            outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
        return {
            "schema": "verispec.controls/2",
            "status": status,
            "verdict": self.verdict,
            "quick": self.quick,
            "alpha": self.alpha,
            "layers": list(self.layers),
            "full_matrix": self.full_matrix,
            "wall_seconds": round(self.wall_seconds, 1),
            "left_out": self.left_out,
            "outcomes": outcomes,
            "samples_to_detection": self.detection_summary(),
            "escaped": [r.control.name for r in self.escaped],
            "not_run": [r.control.name for r in self.not_run],
            "flagged_subjects": [s.name for s in self.flagged],
            "controls": [r.to_json() for r in self.controls],
            "subjects": [s.to_json() for s in self.subjects],
        }


# ------------------------------------------------------------------------------ layers


#: A proof verdict as a control's cell: a refutation is the detection.
_CELL_STATUS = {VerdictKind.REFUTED: Status.FAIL, VerdictKind.PROVED: Status.PASS}


def _prove_cell(result: Any) -> Cell:
    status = _CELL_STATUS.get(result.verdict, Status.ERROR)
    detail = result.counterexample_text or result.reason or result.scope or ""
    # a refutation is one exact counterexample, not a sample count
    return Cell("exact-checker", status, detail=str(detail)[:400])


def _smt_cell(result: Any) -> Cell:
    status = _CELL_STATUS.get(result.result.verdict.kind, Status.ERROR)
    cx = result.result.counterexample
    return Cell("smt", status, detail=json.dumps(cx, sort_keys=True)[:400] if cx else "")


def _conformance_cells(run: Any) -> list[Cell]:
    return [
        Cell(r.name, r.status, r.pvalue, r.generate_calls, r.reason[:400], r.failure, r.evidence)
        for r in run.results
    ]


def _broken(exc: Exception) -> Cell:
    """The cell of an engine run that could not be carried out (the engine would not start,
    the harness failed): an error, with the reason."""
    return Cell("conformance-run", Status.ERROR, detail=f"{type(exc).__name__}: {exc}"[:400])


def _merge(cells: list[Cell], order: list[str]) -> list[Cell]:
    """One cell per check: a check run at two sizes counts the samples of both, and fails
    if either run failed (the evidence says which)."""
    merged: dict[str, Cell] = {}
    for cell in cells:
        before = merged.get(cell.check)
        if before is None:
            merged[cell.check] = cell
            continue
        total = (before.samples or 0) + (cell.samples or 0)
        if before.status == Status.FAIL:
            merged[cell.check] = replace(before, samples=total)
        else:
            detail = f"at full size, after {before.samples} quick-size samples: {cell.detail}"
            merged[cell.check] = replace(cell, samples=total, detail=detail[:400])
    return sorted(merged.values(), key=lambda c: order.index(c.check))


def _installed(controls: list[Mutant]) -> tuple[list[Mutant], list[str]]:
    """The controls whose engine can run here, and a line for each one left out (its engine's
    optional extra is not installed)."""
    kept, left_out = [], []
    for m in controls:
        if m.layer == "engine" and m.engine and ":" not in m.engine:  # a built-in engine
            try:
                engines.get(m.engine).require()
            except MissingDependency as exc:
                left_out.append(f"{m.name}: {exc}")
                continue
        kept.append(m)
    return kept, left_out


def run_controls(
    layers: Sequence[Layer] = LAYERS,
    *,
    quick: bool = False,
    alpha: float = SUITE_ALPHA,
    jobs: int = 2,
    engine: str | None = None,
    full_matrix: bool | None = None,
    statistical: bool = True,
    out: str | os.PathLike[str] | None = None,
    mutants: Sequence[Mutant] | None = None,
    prove_results: Sequence[Any] | None = None,
    smt_results: Sequence[Any] | None = None,
    on_control: Callable[[ControlResult], None] | None = None,
    on_subject: Callable[[SubjectResult], None] | None = None,
) -> ControlsRun:
    """Run the catalog (see the module docstring) and return the detection record.

    ``full_matrix`` (default: not ``quick``) runs every engine mutant through every check;
    otherwise through the checks declared to catch it. The declared checks run at the
    conformance suite's quick sizes with the sequential first-token design (it stops at the
    first evidence, so its calls are the samples to detection); a mutant they miss also runs
    the declared statistical checks at full sizes, and the samples of both count. The rest of
    the matrix runs at quick sizes. The unmutated subjects run after the mutants, through the
    same checks at the same sizes (full sizes only for the checks some mutant needed there).
    ``statistical=False`` (a smoke run) leaves out the engine controls whose declared checks
    are all statistical, and says so. ``engine`` keeps the engine controls of one built-in
    engine. ``mutants`` runs these records instead of the catalog's (an engine of your own
    can name its factory, ``module:factory``, as a record's engine). ``prove_results`` and
    ``smt_results`` reuse results already computed (the main job has them).
    """

    alpha = Budget(alpha).total  # validated in one place
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs={jobs!r} must be a positive integer")
    full = (not quick) if full_matrix is None else full_matrix
    chosen = catalog(tuple(layers)) if mutants is None else [m for m in mutants if m.layer in layers]
    controls = for_engine(chosen, engine)
    run = ControlsRun(quick, alpha, tuple(layers), full)
    controls, run.left_out = _installed(controls)
    writer = _Writer(Path(out)) if out else None
    start = time.perf_counter()

    def record(result: ControlResult | SubjectResult) -> None:
        is_control = isinstance(result, ControlResult)
        (run.controls if is_control else run.subjects).append(result)  # type: ignore[arg-type]
        run.wall_seconds = time.perf_counter() - start
        if writer:
            writer.write(run, "control" if is_control else "subject", result.to_json())
        callback = on_control if is_control else on_subject
        if callback:
            callback(result)  # type: ignore[arg-type]

    by_layer = {layer: [c for c in controls if c.layer == layer] for layer in LAYERS}
    if by_layer["verifier"] and "verifier" in layers:
        if prove_results is None:
            budget = ProveBudget.quick() if quick else ProveBudget()
            prove_results = prove(verifiers.names(), budget, jobs=jobs)
        for r in prove_results:
            if r.kind == "control":  # a verifier registered as a control
                control = next(c for c in by_layer["verifier"] if c.subject == r.name)
                record(ControlResult(control, [_prove_cell(r)], r.seconds))
            else:
                record(SubjectResult(r.name, "verifier", [_prove_cell(r)], r.seconds))
    if "index" in layers:
        for r in smt_results if smt_results is not None else run_catalog():
            seconds = getattr(r.result, "seconds", 0.0)
            if r.entry.expected == VerdictKind.REFUTED:
                control = next(c for c in by_layer["index"] if c.subject == r.entry.name)
                record(ControlResult(control, [_smt_cell(r)], seconds))
            else:
                record(SubjectResult(r.entry.name, "index", [_smt_cell(r)], seconds))
    if by_layer["engine"]:
        _run_engine_controls(
            by_layer["engine"], record, alpha=alpha, jobs=jobs, full=full, statistical=statistical
        )
    order = {c.name: i for i, c in enumerate(controls)}
    run.controls.sort(key=lambda r: order[r.control.name])
    run.wall_seconds = time.perf_counter() - start
    if writer:
        writer.finish(run)
    return run


def _run_engine_controls(
    controls: list[Mutant],
    record: Callable[[ControlResult | SubjectResult], None],
    *,
    alpha: float,
    jobs: int,
    full: bool,
    statistical: bool,
) -> None:
    """The engine layer: every mutant first, then each unmutated subject through the same
    checks at the same sizes its mutants needed (so the false-alarm record is on the tests
    that did the catching). Results are recorded as they complete."""
    statistical_checks = {c.name for c in checks() if c.statistical}
    check_order = [c.name for c in checks()]
    # engines run side by side share the cores: one engine's threads each, not all of them
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None
    escalated: dict[str, set[str]] = {}  # subject -> checks some mutant needed at full size

    def declared(wanted: set[str]) -> list[str]:
        if not statistical:
            wanted = wanted - statistical_checks
        return [n for n in check_order if n in wanted]

    def conformance(
        subject: str,
        options: dict[str, Any] | None,
        main: list[str],
        escalate: Callable[[list[Cell]], list[str]],
    ) -> list[Cell]:
        # the declared checks at quick sizes first, with the sequential first-token design
        # (it stops at the first evidence, so its calls are the samples to detection); then
        # the statistical ones at full sizes where ``escalate`` asks; the rest of the matrix
        # at quick sizes
        common = dict(alpha=alpha, options=options, threads=threads)
        runs = [conform(subject, quick=True, checks=main, design="sequential", **common)] if main else []  # type: ignore[arg-type]
        bigger = escalate([cell for r in runs for cell in _conformance_cells(r)])
        if bigger:
            runs.append(conform(subject, quick=False, checks=bigger, design="sequential", **common))  # type: ignore[arg-type]
        rest = [n for n in check_order if n not in main]
        if full and rest:
            runs.append(conform(subject, quick=True, checks=rest, **common))  # type: ignore[arg-type]
        return _merge([cell for r in runs for cell in _conformance_cells(r)], check_order)

    def mutant(control: Mutant) -> ControlResult:
        t0 = time.perf_counter()
        subject = control.engine or "reference"
        main = declared(set(control.caught_by))

        at_full: list[str] = []  # the checks run again at full sizes (the quick run missed it)

        def escalate(quick_cells: list[Cell]) -> list[str]:
            caught = any(catches(control, cell) for cell in quick_cells)
            at_full.extend([] if caught else [n for n in main if n in statistical_checks])
            escalated.setdefault(subject, set()).update(at_full)
            return at_full

        try:
            cells = conformance(subject, control.options, main, escalate)
        except Exception as exc:  # the run itself broke: an error, never a pass or a detection
            return ControlResult(control, [_broken(exc)], time.perf_counter() - t0)
        # the run that caught it: the declared checks at quick sizes, or at full sizes when
        # the quick run missed it
        reproduce = f"verispec conform --engine {subject} --mutation {control.subject}"
        reproduce += ("" if at_full else " --quick") + " --design sequential"
        reproduce += "".join(f" --check {n}" for n in at_full or main)
        return ControlResult(control, cells, time.perf_counter() - t0, reproduce=reproduce)

    def unmutated(subject: str) -> SubjectResult:
        t0 = time.perf_counter()
        mine = [c for c in controls if (c.engine or "reference") == subject]
        main = declared({n for c in mine for n in c.caught_by})
        needed = [n for n in main if n in escalated.get(subject, set())]
        # the engine its mutants were planted in: with the same fixes of its own bugs
        fixes = sorted({f for c in mine for f in c.fixes})
        try:
            cells = conformance(
                subject, {"fixes": fixes} if fixes else None, main, lambda quick_cells: needed
            )
        except Exception as exc:
            cells = [_broken(exc)]
        return SubjectResult(subject, "engine", cells, time.perf_counter() - t0, tuple(fixes))

    runnable = []
    for c in controls:
        if declared(set(c.caught_by)) or full:
            runnable.append(c)
        else:
            reason = "its declared checks are statistical: left out of the smoke run"
            record(ControlResult(c, [], 0.0, not_run=reason))
    # an engine is a subject only where some of its mutants run (a smoke run may leave all out)
    subjects = sorted({c.engine or "reference" for c in runnable})
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for done in as_completed([pool.submit(mutant, c) for c in runnable]):
            record(done.result())
        for finished in as_completed([pool.submit(unmutated, s) for s in subjects]):
            record(finished.result())


class _Writer:
    """The controls report folder, rewritten after every result."""

    def __init__(self, folder: Path) -> None:
        self.folder = ReportFolder(folder)

    def write(self, run: ControlsRun, kind: str, record: dict[str, Any]) -> None:
        self.folder.append({"kind": kind, **record})
        self.finish(run, partial=True)

    def finish(self, run: ControlsRun, partial: bool = False) -> None:
        data = run.to_json("running" if partial else "complete")
        self.folder.write("report.json", json.dumps(data, indent=2) + "\n")
        self.folder.write("report.md", markdown(data))
        self.folder.write("report.html", html(data))
