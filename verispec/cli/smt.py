"""``verispec smt``: prove index arithmetic with z3, or audit your own function."""

from __future__ import annotations

import argparse
from typing import Any

from verispec.cli._common import int_at_least
from verispec.errors import UsageError, unknown_name
from verispec.report import write_json
from verispec.report.lines import smt_line
from verispec.smt.audit import AUDIT_OPTIONS, audit
from verispec.smt.catalog import CATALOG, catalog_verdict, run_catalog
from verispec.smt.certificates import check_certificates, write_certificates
from verispec.smt.obligations import OBLIGATIONS
from verispec.verdicts import RunVerdict, VerdictKind

__all__ = ["add_parser", "run"]

#: The audit options, each an obligation (see verispec.smt.audit.AUDIT_OPTIONS).
_OPTIONS = ("visible", "crop", "draft-sync", "positions", "tree-visible")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "smt",
        help="prove index arithmetic (masks, positions, crops, trees) with z3",
        description="Check the conventions catalog: every mask, position, crop, draft-sync, paged-cache "
        "and tree convention proved for all sizes or refuted with a concrete case. With an "
        "audit option, check your own function instead (it runs in a subprocess with a "
        "time limit).",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="catalog entries to check (default: all)")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.add_argument("--list", action="store_true", help="list the catalog and the obligations and exit")
    p.add_argument(
        "--write-certificates",
        nargs="?",
        const="proofs/smt",
        metavar="DIR",
        help="write one SMT-LIB2 file per query (default folder: proofs/smt)",
    )
    p.add_argument(
        "--check-certificates",
        nargs="?",
        const="proofs/smt",
        metavar="DIR",
        help="replay the certificates in DIR and check they are current",
    )
    for option in _OPTIONS:
        p.add_argument(
            f"--{option}",
            metavar="MODULE:FUNCTION",
            help=f"audit your own {option.replace('-', ' ')} function (see docs/reference/smt.md)",
        )
    p.add_argument(
        "--audit",
        action="append",
        default=[],
        metavar="OBLIGATION=MODULE:FUNCTION",
        help="audit a function against any obligation (repeatable)",
    )
    p.add_argument(
        "--timeout",
        type=int_at_least("--timeout", 1),
        default=120,
        help="time limit in seconds for each audited function (default 120)",
    )
    p.add_argument(
        "--solver-timeout",
        type=int_at_least("--solver-timeout", 1),
        default=20_000,
        help="z3 timeout per query in milliseconds (default 20000)",
    )
    p.set_defaults(handler=run)


def _audit(args: argparse.Namespace, audits: list[tuple[str, str]]) -> RunVerdict:
    results = [
        (spec, audit(ob, spec, timeout_s=args.timeout, solver_timeout_ms=args.solver_timeout))
        for ob, spec in audits
    ]
    if args.json:
        write_json([{"function": spec, **r.to_json()} for spec, r in results])
    else:
        width = max(len(spec) for spec, _ in results)
        for spec, r in results:
            print(smt_line(spec, r.obligation, None, r, width))
    kinds = {r.verdict.kind for _, r in results}
    if VerdictKind.REFUTED in kinds:
        return RunVerdict.FAIL
    return RunVerdict.PASS if kinds == {VerdictKind.PROVED} else RunVerdict.INCONCLUSIVE


def _catalog(args: argparse.Namespace) -> RunVerdict:
    known = {e.name for e in CATALOG}
    for name in args.names:
        if name not in known:
            raise unknown_name("catalog entry", name, known)
    width = max(len(e.name) for e in CATALOG)

    def show(r: Any) -> None:
        print(smt_line(r.entry.name, r.entry.convention, r.entry.expected, r.result, width))

    results = run_catalog(
        args.names or None, timeout_ms=args.solver_timeout, on_result=None if args.json else show
    )
    if args.json:
        write_json([r.to_json() for r in results])
    else:
        ok = sum(r.ok for r in results)
        total = sum(r.result.seconds for r in results)
        print(f"\n{ok}/{len(results)} conventions with the expected verdict, {total:.1f} s of solver time")
    return catalog_verdict(results)


def run(args: argparse.Namespace) -> RunVerdict:
    if args.list:
        width = max(len(e.name) for e in CATALOG)
        for entry in CATALOG:
            print(f"{entry.name:<{width}}  {entry.expected:<8}  {entry.obligation:<24} {entry.convention}")
        print()
        for ob in OBLIGATIONS.values():
            print(f"{ob.name}: {ob.signature}\n    {ob.statement}")
        return RunVerdict.PASS
    audits = [(ob, getattr(args, option)) for option, ob in AUDIT_OPTIONS.items() if getattr(args, option)]
    for item in args.audit:
        if "=" not in item:
            raise UsageError(f"--audit={item!r} must be OBLIGATION=MODULE:FUNCTION")
        obligation, spec = item.split("=", 1)
        if obligation not in OBLIGATIONS:
            raise UsageError(f"--audit obligation={obligation!r} is not one of {', '.join(OBLIGATIONS)}")
        audits.append((obligation, spec))
    if audits:
        return _audit(args, audits)
    if args.write_certificates:
        paths = write_certificates(args.write_certificates)
        print(f"wrote {len(paths)} certificate(s) to {args.write_certificates}/")
        return RunVerdict.PASS
    if args.check_certificates:
        problems = check_certificates(args.check_certificates)
        for problem in problems:
            print(f"{problem.file}: {problem.problem}")
        if not problems:
            print(
                f"every certificate in {args.check_certificates}/ is current and replays to its stated status"
            )
        return RunVerdict.FAIL if problems else RunVerdict.PASS
    return _catalog(args)
