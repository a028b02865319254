"""``verispec serve``: speculation on against off, time per committed token as a ratio of sums."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from verispec.cli._common import int_at_least, model_options, progress
from verispec.engines import registry
from verispec.engines.protocol import Sampling
from verispec.errors import UsageError
from verispec.serving import serve
from verispec.verdicts import RunVerdict


def _gammas(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--gammas={text!r} is not a comma-separated list of integers"
        ) from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"--gammas={text!r} must be positive draft lengths")
    return values


def add_parser(sub: Any) -> None:
    built_ins = ", ".join(registry.names())
    p = sub.add_parser(
        "serve",
        help="measure an engine's speed with speculation on against off",
        description="Run the same engine with speculation on and off (same model, sampling, prompts, seeds "
        "and output budget, interleaved request by request) and report time per committed token as a ratio "
        "of sums with bootstrap intervals, the paired speedup, p50/p95 latency, the survival of the accepted "
        "length (measured, tail-sum, independent formula) and, over --gammas, the draft-length rule decided "
        "on tuning requests kept apart from the test requests. Exit 0 measured, 10 inconclusive (no "
        "baseline: the engine cannot decode without speculation, or a request failed).",
    )
    p.add_argument("--engine", required=True, metavar="NAME|MODULE:FACTORY", help=f"built-in: {built_ins}")
    p.add_argument("--size", default=None, help="model pair for built-in engines (ci, small, smollm2, ...)")
    for flag in ("target", "draft"):
        p.add_argument(f"--{flag}", default=None, metavar="PATH", help=f"a checkpoint folder as the {flag}")
    p.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAME",
        help="apply a known engine bug's fix in the engine's process (vLLM: cpu-expand); the report says so",
    )
    p.add_argument("--gammas", type=_gammas, default=None, metavar="G1,G2,...", help="draft lengths to sweep")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=None)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int_at_least("--max-new-tokens", 1), default=32)
    p.add_argument(
        "--requests", type=int_at_least("--requests", 2), default=8, help="test requests per prompt kind"
    )
    p.add_argument(
        "--tuning", type=int_at_least("--tuning", 1), default=4, help="tuning requests per prompt kind"
    )
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0)
    p.add_argument(
        "--law-report",
        default=None,
        metavar="REPORT.json",
        help="a verispec conform report of the same engine: the speed comparison's quality contract",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="time limit per request in seconds")
    p.add_argument("--out", default=None, help="report folder (serve.json/.md/.html, results.jsonl)")
    p.add_argument("--force", action="store_true", help="write into an --out folder that holds a report")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    options = model_options(args)
    if args.out and os.path.exists(os.path.join(args.out, "serve.json")) and not args.force:
        raise UsageError(f"--out={args.out!r} already holds a serve report; pass --force to replace it")
    sampling = Sampling(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k)
    result = serve(
        args.engine,
        options=options,
        gammas=args.gammas,
        sampling=sampling,
        max_new_tokens=args.max_new_tokens,
        per_kind=args.requests,
        tuning_per_kind=args.tuning,
        seed=args.seed,
        timeout_s=args.timeout,
        law_report=args.law_report,
        out=args.out,
        on_progress=None if args.json else progress,
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(result.markdown())
    return result.verdict
