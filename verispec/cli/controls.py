"""``verispec controls [list]``: every planted bug, and the check that catches it."""

from __future__ import annotations

import argparse
from typing import Any, cast

from verispec.cli._common import int_at_least, progress, rate
from verispec.controls.mutants import LAYERS, Layer, catalog, for_engine
from verispec.controls.runner import run_controls
from verispec.report import write_json
from verispec.report.lines import control_line, subject_line
from verispec.verdicts import RunVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "controls",
        help="show every planted bug caught (negative controls)",
        description="Run every control of the mutant catalog (verifier controls, engine mutants "
        "reproducing public engine bugs, refuted index conventions) through the checks that apply "
        "to it, and the unmutated subjects through the same checks. Exits non-zero if a control "
        "escapes or a correct subject is flagged. 'verispec controls list' prints the catalog.",
    )
    p.add_argument("action", nargs="?", choices=("run", "list"), default="run")
    p.add_argument(
        "--layer",
        action="append",
        choices=("verifier", "engine", "index"),
        default=[],
        help="only these layers (repeatable; default all)",
    )
    p.add_argument("--engine", default=None, help="only the engine controls of this built-in engine")
    p.add_argument(
        "--quick",
        action="store_true",
        help="engine mutants through their declared checks only, exact layer on the quick budget",
    )
    p.add_argument("--jobs", type=int_at_least("--jobs", 1), default=2, help="parallel engine runs")
    p.add_argument(
        "--alpha",
        type=rate("--alpha"),
        default=1e-6,
        help="false-alarm rate of each engine run (default 1e-6)",
    )
    p.add_argument("--out", default="controls-report", help="report folder (default: controls-report)")
    p.add_argument("--json", action="store_true", help="print the report (or the catalog) as JSON")
    p.set_defaults(handler=run)


def _list(args: argparse.Namespace, layers: tuple[Layer, ...]) -> RunVerdict:
    mutants = for_engine(catalog(layers), args.engine)
    if args.json:
        write_json([m.to_json() for m in mutants])
        return RunVerdict.PASS
    for layer in layers:
        chosen = [m for m in mutants if m.layer == layer]
        print(f"{layer} layer ({len(chosen)})")
        for m in chosen:
            label = m.name.split(":", 1)[1]
            seams = [m.hook, *m.alongside] if m.hook else []
            seam = f" [replaces {' and '.join(seams)}]" if seams else ""
            print(f"  {label:<34} {m.mechanism}{seam}")
            print(f"  {'':<34} source: {m.source}; reproduce: {m.reproduce}")
    return RunVerdict.PASS


def run(args: argparse.Namespace) -> RunVerdict:
    layers = cast(tuple[Layer, ...], tuple(args.layer) or LAYERS)
    if args.action == "list":
        return _list(args, layers)
    quiet = args.json
    if not quiet:
        progress(
            f"negative controls ({', '.join(layers)}{'; quick' if args.quick else ''}): writing {args.out}/"
        )
    result = run_controls(
        layers,
        quick=args.quick,
        alpha=args.alpha,
        jobs=args.jobs,
        engine=args.engine,
        out=args.out,
        on_control=None if quiet else (lambda r: progress(control_line(r))),
        on_subject=None if quiet else (lambda s: progress(subject_line(s))),
    )
    if quiet:
        write_json(result.to_json())
        return result.verdict
    summary = result.detection_summary()
    progress(
        f"controls: {result.verdict} "
        f"({len(result.controls) - len(result.escaped)}/{len(result.controls)} caught, "
        f"{len(result.subjects) - len(result.flagged)}/{len(result.subjects)} correct subjects pass; engine "
        f"mutants' generate calls to detection median {summary['median_generate_calls']}, max "
        f"{summary['max_generate_calls']}; {result.wall_seconds:.0f} s); report: {args.out}/report.html"
    )
    for r in result.escaped:
        progress(f"  not caught: {r.control.name} ({r.outcome})")
    for s in result.flagged:
        progress(f"  correct subject flagged: {s.name}")
    return result.verdict
