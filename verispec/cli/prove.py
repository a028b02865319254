"""``verispec prove``: prove exact verifiers and refute controls."""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from typing import Any

from verispec.cli._common import add_budget_options, progress
from verispec.exact.prove import ProveBudget, prove, prove_verdict
from verispec.report import write_json
from verispec.report.lines import prove_line
from verispec.verdicts import RunVerdict
from verispec.verifiers import registry

__all__ = ["add_parser", "budget", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "prove",
        help="prove exact verifiers and refute controls",
        description="Prove each exact verifier (bounded enumeration plus symbolic theorems) and "
        "refute each control with a shrunk exact counterexample.",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="verifiers to check (default: all)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--list", action="store_true", help="list the registered verifiers and exit")
    p.add_argument(
        "--explain",
        action="store_true",
        help="print each counterexample and each proof's scope after the table",
    )
    add_budget_options(p)
    p.set_defaults(handler=run)


def budget(args: argparse.Namespace) -> Any:
    chosen = ProveBudget.quick(args.seed) if args.quick else ProveBudget(seed=args.seed)
    if args.instances is not None:
        chosen = replace(chosen, instances=args.instances)
    return chosen


def run(args: argparse.Namespace) -> RunVerdict:
    if args.list:
        width = max(len(n) for n in registry.names())
        for entry in registry.verifiers():
            print(f"{entry.name:<{width}}  {entry.kind:<7}  {entry.summary}  [{entry.source}]")
        return RunVerdict.PASS
    names = args.names or registry.names()
    for name in names:
        registry.get(name)
    chosen = budget(args)
    width = max(len(n) for n in names)
    started = time.perf_counter()
    if not args.json:
        progress(f"checking {len(names)} verifier(s) with {args.jobs} process(es), seed {chosen.seed}")
    results = prove(
        names,
        chosen,
        jobs=args.jobs,
        on_result=None if args.json else (lambda r: progress(prove_line(r, width))),
    )
    if args.json:
        write_json([r.to_json() for r in results])
        return prove_verdict(results)
    print()
    print(f"{'verifier':<{width}}  {'kind':<7}  {'verdict':<10}  {'proof':<8}  {'instances':>9}     time")
    for r in results:
        print(
            f"{r.name:<{width}}  {r.kind:<7}  {r.verdict:<10}  {r.proof or '':<8}  "
            f"{r.instances:>9}  {r.seconds:>6.1f}s"
        )
    if args.explain:
        for r in results:
            print()
            if r.counterexample_text:
                print(r.counterexample_text)
            elif r.scope:
                print(f"{r.name}: proved on {r.scope}")
            if r.reason and not r.counterexample_text:
                print(f"{r.name}: {r.reason}")
    ok = sum(r.ok for r in results)
    print(
        f"\n{ok}/{len(results)} as expected in {time.perf_counter() - started:.1f} s "
        "(exact verifiers proved, controls refuted)"
    )
    if ok < len(results):
        print("not as expected: " + ", ".join(f"{r.name} ({r.verdict})" for r in results if not r.ok))
    return prove_verdict(results)
