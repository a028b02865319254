"""``verispec plan``: the samples a test needs for an effect, alpha and power."""

from __future__ import annotations

import argparse
from typing import Any

from verispec.cli._common import rate
from verispec.errors import UsageError
from verispec.report import write_json
from verispec.stats.plan import plan
from verispec.verdicts import RunVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="samples a test needs for an effect, alpha and power",
        description="Sample sizes of every design (Pearson, G-test, exact Pearson, the Neyman-Pearson "
        "optimum, SPRT, two-stage confirmation) for a null law and an alternative (or a "
        "total-variation effect against the least favourable alternative).",
    )
    p.add_argument("--null", required=True, metavar="P1,P2,...", help="the target law, e.g. 0.5,0.3,0.2")
    p.add_argument("--alternative", metavar="Q1,Q2,...", help="a specific buggy law, e.g. 0.4,0.32,0.28")
    p.add_argument("--tv", type=float, help="total-variation effect (least favourable alternative)")
    p.add_argument("--alpha", type=rate("--alpha"), default=1e-6, help="false-alarm rate (default 1e-6)")
    p.add_argument("--power", type=rate("--power"), default=0.99, help="power (default 0.99)")
    p.add_argument("--no-exact", action="store_true", help="skip the exact-enumeration designs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def _floats(name: str, text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError(f"{name}={text!r} must be comma-separated numbers") from None


def run(args: argparse.Namespace) -> RunVerdict:
    null = _floats("--null", args.null)
    alternative = _floats("--alternative", args.alternative) if args.alternative else None
    result = plan(null, alternative, tv=args.tv, alpha=args.alpha, power=args.power, exact=not args.no_exact)
    if args.json:
        write_json(result.to_json())
        return RunVerdict.PASS
    print(f"alpha {result.alpha:g}, power {result.power:g}, effect: TV {result.tv:.4g}, w {result.w:.4g}")
    width = max(len(d) for d, _, _ in result.rows)
    for design, n, note in result.rows:
        print(f"  {design:<{width}}  {n:>9}  {note}")
    return RunVerdict.PASS
