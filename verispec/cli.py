"""The ``verispec`` command line.

Exit codes (a stable interface): 0 pass, 1 non-conformance, 2 usage error, 3 internal
error, 4 missing optional dependency, 10 inconclusive.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from verispec._version import __version__
from verispec.errors import ExitCode, MissingDependency, UsageError, VerispecError

__all__ = ["main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports misuse as a verispec usage error (exit code 2)."""

    def error(self, message: str) -> NoReturn:
        # "argument --jobs: --jobs=0 must be >= 1" reads better without its preamble
        raise UsageError(re.sub(r"^argument (\S+): (\1=)", r"\2", message))


def _int_at_least(name: str, minimum: int) -> Any:
    """An argparse type for integers ``>= minimum`` whose errors name the option."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}={text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name}={value} must be >= {minimum}")
        return value

    return parse


def _default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def _add_budget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a smoke-test budget (seconds)")
    p.add_argument(
        "--instances",
        type=_int_at_least("--instances", 0),
        default=None,
        help="random round instances per exact verifier (default 2000; 150 with --quick)",
    )
    p.add_argument(
        "--seed", type=_int_at_least("--seed", 0), default=0, help="seed of the random instances (default 0)"
    )
    p.add_argument(
        "--jobs",
        type=_int_at_least("--jobs", 1),
        default=_default_jobs(),
        help="parallel processes (default: min(2, CPUs))",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verispec",
        description="Prove and test that speculative decoding keeps the target model's distribution.",
        epilog="exit codes: 0 pass, 1 non-conformance, 2 usage error, 3 internal error, "
        "4 missing optional dependency, 10 inconclusive",
    )
    parser.add_argument("--version", action="version", version=f"verispec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    prove = sub.add_parser(
        "prove",
        help="prove exact verifiers and refute controls",
        description="Prove each exact verifier (bounded enumeration plus symbolic theorems) and "
        "refute each control with a shrunk exact counterexample.",
    )
    prove.add_argument("names", nargs="*", metavar="NAME", help="verifiers to check (default: all)")
    prove.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    prove.add_argument("--list", action="store_true", help="list the registered verifiers and exit")
    prove.add_argument(
        "--explain",
        action="store_true",
        help="print each counterexample and each proof's scope after the table",
    )
    _add_budget_options(prove)

    smt = sub.add_parser(
        "smt",
        help="prove index arithmetic (masks, positions, crops, trees) with z3",
        description="Check the conventions catalog: every mask, position, crop, draft-sync, paged-cache "
        "and tree convention proved for all sizes or refuted with a concrete case. With an "
        "audit option, check your own function instead (it runs in a subprocess with a "
        "time limit).",
    )
    smt.add_argument("names", nargs="*", metavar="NAME", help="catalog entries to check (default: all)")
    smt.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    smt.add_argument("--list", action="store_true", help="list the catalog and the obligations and exit")
    smt.add_argument(
        "--write-certificates",
        nargs="?",
        const="proofs/smt",
        metavar="DIR",
        help="write one SMT-LIB2 file per query (default folder: proofs/smt)",
    )
    smt.add_argument(
        "--check-certificates",
        nargs="?",
        const="proofs/smt",
        metavar="DIR",
        help="replay the certificates in DIR and check they are current",
    )
    for option in ("visible", "crop", "draft-sync", "positions", "tree-visible"):
        smt.add_argument(
            f"--{option}",
            metavar="MODULE:FUNCTION",
            help=f"audit your own {option.replace('-', ' ')} function (see docs/reference/smt.md)",
        )
    smt.add_argument(
        "--audit",
        action="append",
        default=[],
        metavar="OBLIGATION=MODULE:FUNCTION",
        help="audit a function against any obligation (repeatable)",
    )
    smt.add_argument(
        "--timeout",
        type=_int_at_least("--timeout", 1),
        default=120,
        help="time limit in seconds for each audited function (default 120)",
    )
    smt.add_argument(
        "--solver-timeout",
        type=_int_at_least("--solver-timeout", 1),
        default=20_000,
        help="z3 timeout per query in milliseconds (default 20000)",
    )

    plan = sub.add_parser(
        "plan",
        help="samples a test needs for an effect, alpha and power",
        description="Sample sizes of every design (Pearson, G-test, exact Pearson, the Neyman-Pearson "
        "optimum, SPRT, two-stage confirmation) for a null law and an alternative (or a "
        "total-variation effect against the least favourable alternative).",
    )
    plan.add_argument("--null", required=True, metavar="P1,P2,...", help="the target law, e.g. 0.5,0.3,0.2")
    plan.add_argument("--alternative", metavar="Q1,Q2,...", help="a specific buggy law, e.g. 0.4,0.32,0.28")
    plan.add_argument("--tv", type=float, help="total-variation effect (least favourable alternative)")
    plan.add_argument("--alpha", type=float, default=1e-6, help="false-alarm rate (default 1e-6)")
    plan.add_argument("--power", type=float, default=0.99, help="power (default 0.99)")
    plan.add_argument("--no-exact", action="store_true", help="skip the exact-enumeration designs")
    plan.add_argument("--json", action="store_true", help="print JSON")

    aud = sub.add_parser(
        "audit",
        help="audit a third-party chain or tree verifier (black box)",
        description="Sample a black-box verifier on a battery of exact instances (random conditionals "
        "with zeros, temperature, top-k/top-p, forced rejection at each position, full "
        "acceptance) in a subprocess with a time limit, and test the law of its rounds "
        "against the target's with a declared false-alarm rate and power.",
    )
    target = aud.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--chain",
        metavar="MODULE:FUNCTION",
        help="verify(target_probs, draft_probs, draft_tokens, rng) -> tokens",
    )
    target.add_argument("--tree", metavar="MODULE:FUNCTION", help="verify_tree(tree, rng) -> tokens")
    aud.add_argument("--law", default="iid", help="candidate law of the tree battery (default iid)")
    aud.add_argument("--alpha", type=float, default=1e-6, help="family-wise false-alarm rate (default 1e-6)")
    aud.add_argument("--power", type=float, default=0.99, help="power per instance (default 0.99)")
    aud.add_argument(
        "--tv",
        type=float,
        default=0.05,
        help="smallest total-variation distance to detect per instance (default 0.05)",
    )
    aud.add_argument("--seed", type=_int_at_least("--seed", 0), default=0, help="seed (default 0)")
    aud.add_argument("--timeout", type=float, default=120.0, help="time limit per instance in seconds")
    aud.add_argument("--out", default=None, help="also write audit.json and audit.md to this folder")
    aud.add_argument("--json", action="store_true", help="print JSON")

    conf = sub.add_parser(
        "conform",
        help="run the conformance suite on a real engine",
        description="Drive an engine (built-in: reference, reference-paged, reference-tree, "
        "hf-assisted, hf-lookup; or module:factory) in its own process with a time limit per "
        "request, force rejections at chosen positions, and test its outputs against the "
        "target's token-by-token conditionals with declared false-alarm rate and power.",
    )
    conf.add_argument("--engine", required=True, metavar="NAME|MODULE:FACTORY")
    conf.add_argument("--device", default="cpu", help="device passed to the engine factory (default cpu)")
    conf.add_argument("--quick", action="store_true", help="smaller samples and fewer settings (a smoke run)")
    conf.add_argument("--check", action="append", default=[], metavar="NAME", help="run only these checks")
    conf.add_argument("--seed", type=_int_at_least("--seed", 0), default=0)
    conf.add_argument(
        "--design",
        choices=("planned", "sequential"),
        default="planned",
        help="planned sample sizes, or a sequential first-token test that stops at the first evidence",
    )
    conf.add_argument("--alpha", type=float, default=1e-6, help="family-wise false-alarm rate (default 1e-6)")
    conf.add_argument("--size", default=None, help="tiny model size for built-in engines: ci, small, 1b")
    conf.add_argument(
        "--mutation",
        action="append",
        default=[],
        metavar="NAME",
        help="plant a bug in a built-in reference or hf-assisted engine (verispec controls list)",
    )
    conf.add_argument("--timeout", type=float, default=300.0, help="time limit per request in seconds")
    conf.add_argument("--out", default=None, help="report folder (report.json/.md/.html, junit.xml)")
    conf.add_argument("--json", action="store_true", help="print the report as JSON")

    ctl = sub.add_parser(
        "controls",
        help="show every planted bug caught (negative controls)",
        description="Run every control of the mutant catalog (verifier controls, reference-engine "
        "mutants reproducing public engine bugs, refuted index conventions) through the checks "
        "that apply to it, and the unmutated subjects through the same checks. Exits non-zero "
        "if a control escapes or a correct subject is flagged. 'verispec controls list' prints "
        "the catalog.",
    )
    ctl.add_argument("action", nargs="?", choices=("run", "list"), default="run")
    ctl.add_argument(
        "--layer",
        action="append",
        choices=("verifier", "engine", "index"),
        default=[],
        help="only these layers (repeatable; default all)",
    )
    ctl.add_argument("--engine", default=None, help="only the engine controls of this built-in engine")
    ctl.add_argument(
        "--quick",
        action="store_true",
        help="engine mutants through their declared checks only, exact layer on the quick budget",
    )
    ctl.add_argument("--jobs", type=_int_at_least("--jobs", 1), default=2, help="parallel engine runs")
    ctl.add_argument("--alpha", type=float, default=1e-6, help="false-alarm rate of each engine run")
    ctl.add_argument("--out", default="controls-report", help="report folder (default: controls-report)")
    ctl.add_argument("--json", action="store_true", help="print the report (or the catalog) as JSON")

    check = sub.add_parser(
        "check",
        help="run everything on built-in defaults and write a report folder",
        description="The main job, in six steps: the seed articles' numbers, symbolic theorems, "
        "the SMT catalog of index conventions, conformance of the reference and transformers "
        "engines on tiny seeded models, every verifier proved or refuted, and the negative "
        "controls. Writes report.json, report.md, report.html and results.jsonl (rewritten as "
        "each result arrives), with conformance/ and controls/ sub-folders. Exits non-zero if "
        "anything fails. --quick is a smoke run of a few minutes.",
    )
    check.add_argument("--out", default="verispec-report", help="report folder (default: verispec-report)")
    _add_budget_options(check)
    return parser


def _budget(args: argparse.Namespace) -> Any:
    from dataclasses import replace

    from verispec.exact.prove import ProveBudget

    budget = ProveBudget.quick(args.seed) if args.quick else ProveBudget(seed=args.seed)
    if args.instances is not None:
        budget = replace(budget, instances=args.instances)
    return budget


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _result_line(result: Any, width: int) -> str:
    proof = f" ({result.proof})" if result.proof else ""
    mark = "ok " if result.ok else "BAD"
    return (
        f"{mark} {result.name:<{width}} {result.kind:<7} {result.verdict + proof:<20} "
        f"{result.instances:>6} instances  {result.seconds:6.1f} s"
    )


def _exit_for(results: Sequence[Any]) -> ExitCode:
    if any(r.verdict == "refuted" and r.kind == "exact" for r in results):
        return ExitCode.NON_CONFORMANCE
    if any(not r.ok for r in results):
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


def cmd_prove(args: argparse.Namespace) -> ExitCode:
    from verispec.exact.prove import prove
    from verispec.verifiers import registry

    if args.list:
        width = max(len(n) for n in registry.names())
        for entry in registry.verifiers():
            print(f"{entry.name:<{width}}  {entry.kind:<7}  {entry.summary}  [{entry.source}]")
        return ExitCode.OK
    names = args.names or registry.names()
    for name in names:
        registry.get(name)
    budget = _budget(args)
    width = max(len(n) for n in names)
    started = time.perf_counter()
    if not args.json:
        _progress(f"checking {len(names)} verifier(s) with {args.jobs} process(es), seed {budget.seed}")
    results = prove(
        names,
        budget,
        jobs=args.jobs,
        on_result=None if args.json else (lambda r: _progress(_result_line(r, width))),
    )
    if args.json:
        from verispec.report import write_json

        write_json([r.to_json() for r in results])
    else:
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
    return _exit_for(results)


def _smt_line(name: str, convention: str, expected: str | None, result: Any, width: int) -> str:
    verdict = result.verdict.kind
    mark = "   " if expected is None else ("ok " if verdict == expected else "BAD")
    cx = f"  counterexample: {result.counterexample}" if result.counterexample else ""
    why = f"  ({result.verdict.reason})" if verdict == "unknown" else ""
    return f"{mark} {name:<{width}} {verdict:<8} {result.seconds * 1000:8.1f} ms  {convention}{cx}{why}"


def _smt_audit(args: argparse.Namespace, audits: list[tuple[str, str]]) -> ExitCode:
    from verispec.smt.audit import audit

    results = [
        (spec, audit(ob, spec, timeout_s=args.timeout, solver_timeout_ms=args.solver_timeout))
        for ob, spec in audits
    ]
    if args.json:
        from verispec.report import write_json

        write_json([{"function": spec, **r.to_json()} for spec, r in results])
    else:
        width = max(len(spec) for spec, _ in results)
        for spec, r in results:
            print(_smt_line(spec, r.obligation, None, r, width))
    kinds = {r.verdict.kind for _, r in results}
    if "refuted" in kinds:
        return ExitCode.NON_CONFORMANCE
    return ExitCode.OK if kinds == {"proved"} else ExitCode.INCONCLUSIVE


def _smt_catalog(args: argparse.Namespace) -> ExitCode:
    from verispec.errors import unknown_name
    from verispec.smt.catalog import CATALOG, run_catalog

    known = {e.name for e in CATALOG}
    for name in args.names:
        if name not in known:
            raise unknown_name("catalog entry", name, known)
    width = max(len(e.name) for e in CATALOG)

    def show(r: Any) -> None:
        print(_smt_line(r.entry.name, r.entry.convention, r.entry.expected, r.result, width))

    results = run_catalog(
        args.names or None, timeout_ms=args.solver_timeout, on_result=None if args.json else show
    )
    if args.json:
        from verispec.report import write_json

        write_json([r.to_json() for r in results])
    else:
        ok = sum(r.ok for r in results)
        total = sum(r.result.seconds for r in results)
        print(f"\n{ok}/{len(results)} conventions with the expected verdict, {total:.1f} s of solver time")
    if any(not r.ok and r.result.verdict.kind != "unknown" for r in results):
        return ExitCode.NON_CONFORMANCE
    return ExitCode.OK if all(r.ok for r in results) else ExitCode.INCONCLUSIVE


def cmd_smt(args: argparse.Namespace) -> ExitCode:
    from verispec.smt.audit import AUDIT_OPTIONS
    from verispec.smt.catalog import CATALOG
    from verispec.smt.obligations import OBLIGATIONS

    if args.list:
        width = max(len(e.name) for e in CATALOG)
        for entry in CATALOG:
            print(f"{entry.name:<{width}}  {entry.expected:<8}  {entry.obligation:<24} {entry.convention}")
        print()
        for ob in OBLIGATIONS.values():
            print(f"{ob.name}: {ob.signature}\n    {ob.statement}")
        return ExitCode.OK
    audits = [(ob, getattr(args, option)) for option, ob in AUDIT_OPTIONS.items() if getattr(args, option)]
    for item in args.audit:
        if "=" not in item:
            raise UsageError(f"--audit={item!r} must be OBLIGATION=MODULE:FUNCTION")
        obligation, spec = item.split("=", 1)
        if obligation not in OBLIGATIONS:
            raise UsageError(f"--audit obligation={obligation!r} is not one of {', '.join(OBLIGATIONS)}")
        audits.append((obligation, spec))
    if audits:
        return _smt_audit(args, audits)
    if args.write_certificates:
        from verispec.smt.certificates import write_certificates

        paths = write_certificates(args.write_certificates)
        print(f"wrote {len(paths)} certificate(s) to {args.write_certificates}/")
        return ExitCode.OK
    if args.check_certificates:
        from verispec.smt.certificates import check_certificates

        problems = check_certificates(args.check_certificates)
        for problem in problems:
            print(f"{problem.file}: {problem.problem}")
        if not problems:
            print(
                f"every certificate in {args.check_certificates}/ is current and replays to its stated status"
            )
        return ExitCode.NON_CONFORMANCE if problems else ExitCode.OK
    return _smt_catalog(args)


def cmd_check(args: argparse.Namespace, argv: Sequence[str]) -> ExitCode:
    from verispec.exact.lengths import length_table
    from verispec.exact.optimum import optimum_table
    from verispec.exact.prove import prove
    from verispec.exact.seeds import SEED_CHECKS
    from verispec.exact.symbolic import theorems_for
    from verispec.report import ReportWriter
    from verispec.verifiers import registry

    budget = _budget(args)
    report = ReportWriter(
        args.out,
        command=["verispec", *argv],
        settings={"quick": args.quick, "jobs": args.jobs, "budget": budget.to_json()},
    )
    started = time.perf_counter()
    failures: list[str] = []
    unknown: list[str] = []

    _progress(f"verispec check: writing {args.out}/ (report.md, report.json, results.jsonl)")
    _progress(f"[1/6] the seed articles' numbers ({len(SEED_CHECKS)} checks)")
    for seed_check in SEED_CHECKS:
        result = seed_check()
        report.add("seeds", result.to_json())
        _progress(f"  {'ok ' if result.ok else 'BAD'} {result.name}")
        if not result.ok:
            failures.append(f"seed {result.name}: " + "; ".join(result.mismatches()))

    general = theorems_for(None)
    _progress(
        f"[2/6] symbolic theorems ({len(general)} general; the rest run with their verifier) "
        "and expected lengths"
    )
    for theorem in general:
        t = theorem()
        report.add("theorems", t.to_json())
        _progress(f"  {'ok ' if t.verdict.passed else 'BAD'} {t.name} [{t.prover}] {t.verdict.kind}")
        if not t.verdict.passed:
            unknown.append(f"theorem {t.name}")

    rows = length_table()
    for row in rows:
        report.add("lengths", row.to_json())
        if not (row.agrees and row.exact):
            failures.append(f"expected length of {row.verifier} on {row.instance}: law and tail sum disagree")
    _progress(
        f"  ok  expected accepted length of {len(registry.names('exact'))} verifiers on "
        f"{len(rows) // len(registry.names('exact'))} reference instances"
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
    _progress(f"  ok  one-node acceptance of the tree verifiers against the optimum ({len(optimum)} rows)")

    from verispec.smt.catalog import CATALOG, run_catalog

    _progress(f"[3/6] SMT: {len(CATALOG)} mask, position, crop, draft-sync, paged-cache and tree conventions")
    smt_width = max(len(e.name) for e in CATALOG)

    smt_results: list[Any] = []

    def record_smt(r: Any) -> None:
        smt_results.append(r)
        report.add("smt", r.to_json())
        _progress("  " + _smt_line(r.entry.name, r.entry.convention, r.entry.expected, r.result, smt_width))
        if not r.ok:
            (unknown if r.result.verdict.kind == "unknown" else failures).append(
                f"smt {r.entry.name}: {r.result.verdict.kind}, expected {r.entry.expected}"
            )

    run_catalog(on_result=record_smt)

    names = registry.names()
    width = max(len(n) for n in names)
    _progress(f"[4/6] {len(names)} verifiers with {args.jobs} process(es), seed {budget.seed}")

    def record(result: Any) -> None:
        report.add("prove", result.to_json())
        for theorem_json in result.theorems:
            report.add("theorems", theorem_json)
        _progress("  " + _result_line(result, width))

    results = prove(names, budget, jobs=args.jobs, on_result=record)
    conformance = _check_conformance(args, report, failures)
    controls_caught = _check_controls(args, report, failures, results, smt_results)
    code = _exit_for(results)
    if failures:
        code = ExitCode.NON_CONFORMANCE
    elif unknown and code == ExitCode.OK:
        code = ExitCode.INCONCLUSIVE
    failures += [f"{r.name}: {r.verdict}" for r in results if not r.ok]
    verdict = {ExitCode.OK: "pass", ExitCode.NON_CONFORMANCE: "fail"}.get(code, "inconclusive")
    exact = [r for r in results if r.kind == "exact"]
    controls = [r for r in results if r.kind == "control"]
    seeds = report.data["sections"].get("seeds", [])
    summary = {
        "exact proved": f"{sum(r.ok for r in exact)}/{len(exact)}",
        "controls refuted": f"{sum(r.ok for r in controls)}/{len(controls)}",
        "seed checks": f"{sum(s['ok'] for s in seeds)}/{len(SEED_CHECKS)}",
        "smt conventions": f"{sum(r['ok'] for r in report.data['sections'].get('smt', []))}/{len(CATALOG)}",
        "engines conforming": conformance,
        "controls caught": controls_caught,
        "seconds": round(time.perf_counter() - started, 1),
    }
    report.finish(verdict, summary)
    _progress("")
    _progress(f"verdict: {verdict.upper()} ({', '.join(f'{k} {v}' for k, v in summary.items())})")
    for line in failures + unknown:
        _progress(f"  not as expected: {line}")
    _progress(f"report: {args.out}/report.html (also report.md, report.json)")
    return code


#: Engines the main job runs the conformance suite on, with tiny seeded models.
CHECK_ENGINES = ("reference", "hf-assisted")


def _check_conformance(args: argparse.Namespace, report: Any, failures: list[str]) -> str:
    """Step 5 of the main job: the conformance suite on the built-in engines; the family-wise
    false-alarm budget is split between them. Without torch and transformers it is skipped,
    and the report says so."""
    import importlib.util

    from verispec.conformance.runner import conform
    from verispec.stats.constants import SUITE_ALPHA

    mode = "quick" if args.quick else "full"
    _progress(f"[5/6] conformance ({mode}) of {', '.join(CHECK_ENGINES)} on tiny seeded models")
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"skipped: {' and '.join(missing)} not installed (pip install 'verispec[all]')"
        _progress(f"  --  {reason}")
        for engine in CHECK_ENGINES:
            report.add("conformance", {"engine": engine, "verdict": "skip", "reason": reason})
        return "skipped"
    passed = 0
    for engine in CHECK_ENGINES:
        run = conform(
            engine,
            quick=args.quick,
            alpha=SUITE_ALPHA / len(CHECK_ENGINES),
            out=os.path.join(args.out, "conformance", engine),
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
        _progress(f"  {'ok ' if run.verdict == 'pass' else 'BAD'} {engine}: {statuses}")
        passed += run.verdict == "pass"
        bad = [r for r in run.results if r.status in ("fail", "error")]
        failures += [f"conformance of {engine}: {r.name}: {r.reason}" for r in bad]
    return f"{passed}/{len(CHECK_ENGINES)}"


def _check_controls(
    args: argparse.Namespace, report: Any, failures: list[str], prove_results: Any, smt_results: Any
) -> str:
    """Step 6 of the main job: the negative controls, reusing the verifier and SMT results of
    steps 3 and 4. ``--quick`` leaves out the engine controls whose checks are statistical."""
    import importlib.util

    mode = "smoke: deterministic engine checks" if args.quick else "declared checks at full size"
    _progress(f"[6/6] negative controls ({mode}); report in {args.out}/controls/")
    layers: tuple[str, ...] = ("verifier", "index")
    if all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers")):
        layers = ("verifier", "engine", "index")
    else:
        _progress("  --  engine controls skipped: torch and transformers are not installed")
    from verispec.controls.runner import run_controls

    # steps 3 and 4 have shown the verifier and index results already
    def show(r: Any) -> None:
        if r.control.layer == "engine":
            _show_control(r)

    def show_subject(s: Any) -> None:
        if s.layer == "engine":
            _show_subject(s)

    run = run_controls(
        layers,  # type: ignore[arg-type]
        quick=args.quick,
        statistical=not args.quick,
        full_matrix=False,
        jobs=max(args.jobs, 2),
        out=os.path.join(args.out, "controls"),
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


def _floats(name: str, text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise UsageError(f"{name}={text!r} must be comma-separated numbers") from None


def cmd_plan(args: argparse.Namespace) -> ExitCode:
    from verispec.stats.plan import plan

    null = _floats("--null", args.null)
    alternative = _floats("--alternative", args.alternative) if args.alternative else None
    result = plan(null, alternative, tv=args.tv, alpha=args.alpha, power=args.power, exact=not args.no_exact)
    if args.json:
        from verispec.report import write_json

        write_json(result.to_json())
        return ExitCode.OK
    print(f"alpha {result.alpha:g}, power {result.power:g}, effect: TV {result.tv:.4g}, w {result.w:.4g}")
    width = max(len(d) for d, _, _ in result.rows)
    for design, n, note in result.rows:
        print(f"  {design:<{width}}  {n:>9}  {note}")
    return ExitCode.OK


def cmd_audit(args: argparse.Namespace) -> ExitCode:
    from verispec.audit.runner import audit

    kind, function = ("chain", args.chain) if args.chain else ("tree", args.tree)

    def show(r: Any) -> None:
        if args.json:
            return
        p = "" if r.pvalue is None else f"p={r.pvalue:.3g}"
        mark = "BAD" if r.rejected else "ok "
        tv = "" if r.tv is None else f"TV~{r.tv:.3f}"
        _progress(f"  {mark} {r.name:<45} n={r.n:<6} {p:<14} {tv:<10} {r.error or ''}")

    if not args.json:
        _progress(f"auditing {function} ({kind}) in a subprocess, alpha {args.alpha:g}, power {args.power:g}")
    result = audit(
        function,
        kind,
        alpha=args.alpha,
        power=args.power,
        tv=args.tv,
        seed=args.seed,
        timeout_s=args.timeout,
        law=args.law,
        on_instance=show,
    )
    if args.out:
        import os

        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "audit.json"), "w", encoding="utf-8") as stream:
            json.dump(result.to_json(), stream, indent=2)
        with open(os.path.join(args.out, "audit.md"), "w", encoding="utf-8") as stream:
            stream.write(result.markdown())
    if args.json:
        from verispec.report import write_json

        write_json(result.to_json())
    else:
        print(f"verdict: {result.verdict}; reproduce: {result.command}")
    return ExitCode.NON_CONFORMANCE if result.verdict != "pass" else ExitCode.OK


def cmd_conform(args: argparse.Namespace) -> ExitCode:
    from verispec.conformance.runner import conform

    options: dict[str, Any] = {}
    if args.size:
        options["size"] = args.size
    if args.mutation:
        options["mutations"] = args.mutation

    live = sys.stderr.isatty() and not args.json

    def tick(check: str, done: int, planned: int) -> None:
        if live:
            print(f"\r  ..  {check:<22} {done}/{planned} samples", end="", file=sys.stderr, flush=True)

    def show(r: Any) -> None:
        if live:
            print("\r\033[K", end="", file=sys.stderr)
        if not args.json:
            mark = {"pass": "ok ", "skip": "-- "}.get(r.status, "BAD")
            p = "" if r.pvalue is None else f"p={r.pvalue:.3g}"
            _progress(
                f"  {mark} {r.name:<22} {r.status:<5} {p:<12} {r.generate_calls:>4} calls "
                f"{r.seconds:6.1f} s  {r.reason}"
            )

    if not args.json:
        _progress(
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
    )
    if args.json:
        from verispec.report import write_json

        write_json(run.to_json())
    else:
        perf = run.to_json()["performance"]
        print(
            f"verdict: {run.verdict} ({run.name}; {perf['generate_calls']} generate calls, "
            f"{perf['wall_seconds']} s)" + (f"; report: {args.out}/report.html" if args.out else "")
        )
    return {"pass": ExitCode.OK, "fail": ExitCode.NON_CONFORMANCE}.get(run.verdict, ExitCode.INTERNAL_ERROR)


def cmd_controls(args: argparse.Namespace) -> ExitCode:
    from verispec.controls.catalog import catalog, for_engine

    layers = tuple(args.layer) or ("verifier", "engine", "index")
    if args.action == "list":
        controls = for_engine(catalog(layers), args.engine)
        if args.json:
            from verispec.report import write_json

            write_json([c.to_json() for c in controls])
            return ExitCode.OK
        for layer in layers:
            chosen = [c for c in controls if c.layer == layer]
            print(f"{layer} layer ({len(chosen)})")
            for c in chosen:
                bug = f" [engines.md #{c.bug}]" if c.bug else ""
                label = c.name.split(":", 1)[1]
                print(f"  {label:<34} {c.mechanism}{bug}")
                print(f"  {'':<34} source: {c.source}; reproduce: {c.reproduce}")
        return ExitCode.OK
    run = _run_controls(args, layers)
    if args.json:
        from verispec.report import write_json

        write_json(run.to_json())
    return ExitCode.OK if run.verdict == "pass" else ExitCode.NON_CONFORMANCE


def _show_control(r: Any) -> None:
    """One line per control result: outcome, samples to detection, the checks that caught it."""
    mark = "ok " if r.outcome.startswith("caught") else "-- " if r.outcome == "not-run" else "BAD"
    by = "by " + (", ".join(c.check for c in r.cells if c.status == "fail") or "no check")
    if r.outcome == "error":
        by = "; ".join(f"{c.check}: {c.evidence}" for c in r.cells if c.status == "error")
    samples = f"{r.samples_to_detection} samples" if r.samples_to_detection else ""
    _progress(f"  {mark} {r.control.name:<44} {r.outcome:<15} {samples:<13} {r.not_run or by}")


def _show_subject(s: Any) -> None:
    mark = "ok " if s.outcome == "pass" else "BAD"
    _progress(f"  {mark} unmutated {s.layer} subject {s.name}: {s.outcome}")


def _run_controls(args: argparse.Namespace, layers: tuple[str, ...]) -> Any:
    """Run the controls with a line per result on stderr; returns the run."""
    from verispec.controls.runner import run_controls

    quiet = getattr(args, "json", False)
    if not quiet:
        _progress(
            f"negative controls ({', '.join(layers)}{'; quick' if args.quick else ''}): writing {args.out}/"
        )
    run = run_controls(
        layers,  # type: ignore[arg-type]
        quick=args.quick,
        alpha=args.alpha,
        jobs=args.jobs,
        engine=getattr(args, "engine", None),
        out=args.out,
        on_control=None if quiet else _show_control,
        on_subject=None if quiet else _show_subject,
    )
    if not quiet:
        summary = run.detection_summary()
        _progress(
            f"controls: {run.verdict} ({len(run.controls) - len(run.escaped)}/{len(run.controls)} caught, "
            f"{len(run.subjects) - len(run.flagged)}/{len(run.subjects)} correct subjects pass; engine "
            f"mutants' generate calls to detection median {summary['median_generate_calls']}, max "
            f"{summary['max_generate_calls']}; {run.wall_seconds:.0f} s); report: {args.out}/report.html"
        )
        for r in run.escaped:
            _progress(f"  not caught: {r.control.name} ({r.outcome})")
        for s in run.flagged:
            _progress(f"  correct subject flagged: {s.name}")
    return run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``verispec`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        if args.command == "prove":
            return int(cmd_prove(args))
        if args.command == "check":
            return int(cmd_check(args, argv))
        if args.command == "smt":
            return int(cmd_smt(args))
        if args.command == "plan":
            return int(cmd_plan(args))
        if args.command == "audit":
            return int(cmd_audit(args))
        if args.command == "conform":
            return int(cmd_conform(args))
        if args.command == "controls":
            return int(cmd_controls(args))
        build_parser().print_help()
        return int(ExitCode.USAGE_ERROR)
    except MissingDependency as exc:
        print(f"verispec: {exc}", file=sys.stderr)
        return int(ExitCode.MISSING_DEPENDENCY)
    except UsageError as exc:
        print(f"verispec: error: {exc}", file=sys.stderr)
        return int(ExitCode.USAGE_ERROR)
    except VerispecError as exc:
        print(f"verispec: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        print("verispec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`verispec controls list | head`): not an error of ours; point
        # stdout at devnull so that the interpreter's final flush does not complain again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OK)
    except Exception:
        traceback.print_exc()
        print(
            "verispec: internal error (this is a bug in verispec; please report it with the traceback above)",
            file=sys.stderr,
        )
        return int(ExitCode.INTERNAL_ERROR)


if __name__ == "__main__":
    sys.exit(main())
