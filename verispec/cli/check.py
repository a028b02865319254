"""``verispec check``: the main job (:func:`verispec.mainjob.run_main_job`) on a terminal."""

from __future__ import annotations

import argparse
from typing import Any

from verispec.cli._common import add_budget_options, progress
from verispec.mainjob import run_main_job
from verispec.verdicts import RunVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="run everything on built-in defaults and write a report folder",
        description="The main job, in six steps: the seed articles' numbers, symbolic theorems, "
        "the SMT catalog of index conventions, every verifier proved or refuted, conformance of the "
        "reference and transformers engines on tiny seeded models, and the negative controls. "
        "Writes report.json, report.md, report.html and results.jsonl (rewritten as each result "
        "arrives), with conformance/ and controls/ sub-folders. Exits non-zero if anything fails. "
        "--quick is a smoke run of a few minutes.",
    )
    p.add_argument("--out", default="verispec-report", help="report folder (default: verispec-report)")
    add_budget_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    job = run_main_job(
        args.out,
        quick=args.quick,
        instances=args.instances,
        seed=args.seed,
        jobs=args.jobs,
        command=["verispec", *args.argv],
        progress=progress,
    )
    progress("")
    progress(f"verdict: {job.verdict.upper()} ({', '.join(f'{k} {v}' for k, v in job.summary.items())})")
    for line in job.failures + job.unknown:
        progress(f"  not as expected: {line}")
    progress(f"report: {args.out}/report.html (also report.md, report.json)")
    return job.verdict
