"""``verispec audit``: audit a third-party chain or tree verifier as a black box."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from verispec.audits.budgeted import parse_budget
from verispec.audits.runner import audit, boundary_audit
from verispec.cli._common import int_at_least, progress, rate
from verispec.errors import UsageError
from verispec.report import write_json
from verispec.verdicts import RunVerdict

__all__ = ["DEFAULT_BUDGET", "add_parser", "run"]

#: The budget of an audit that names no design: about a minute, the budgeted design's
#: resolution reported per instance (a damped acceptance ratio the planned design at TV 0.05
#: passes is rejected within it).
DEFAULT_BUDGET = "60s"
#: The planned design's effect unless ``--tv`` says otherwise.
DEFAULT_TV = 0.05


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="audit a third-party chain or tree verifier (black box)",
        description="Sample a black-box verifier on a battery of exact instances (random conditionals "
        "with zeros, temperature, top-k/top-p, forced rejection at each position, full "
        "acceptance) in a subprocess with a time limit, and test the law of its rounds "
        "against the target's with a declared false-alarm rate and power. By default each "
        f"instance is sampled for its share of a {DEFAULT_BUDGET} budget and reports the smallest total "
        "variation it resolves; --planned samples the fixed size planned for --tv instead, and "
        "--boundary pins the verifier's uniforms at their edges.",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--chain",
        metavar="MODULE:FUNCTION",
        help="verify(target_probs, draft_probs, draft_tokens, rng) -> tokens",
    )
    target.add_argument("--tree", metavar="MODULE:FUNCTION", help="verify_tree(tree, rng) -> tokens")
    p.add_argument("--law", default="iid", help="candidate law of the tree battery (default iid)")
    p.add_argument(
        "--vocab",
        type=int_at_least("--vocab", 2),
        default=None,
        help="vocabulary of the battery's random instances (default 4 for chains, 3 for trees, which "
        "need at least 3)",
    )
    p.add_argument(
        "--instances",
        type=int_at_least("--instances", 0),
        default=None,
        metavar="N",
        help="extra random model pairs in the battery, the i-th over vocab + i tokens (default 0 for "
        "chains, 2 for trees)",
    )
    p.add_argument(
        "--drafts",
        choices=("given", "self"),
        default="given",
        help="given (default): verispec drafts from the declared law and hands the drafts over; self: the "
        "--chain function drafts for itself, speculate(model, rng) -> tokens, with "
        "model.target_logits(prefix), model.draft_logits(prefix), model.sampling, model.gamma and "
        "model.vocab_size",
    )
    p.add_argument(
        "--budget",
        nargs="?",
        const=DEFAULT_BUDGET,
        default=None,
        metavar="TIME|SAMPLES",
        help="budgeted design, the default: sample each instance for its share of a time (60s, 2m) or "
        "sample budget (2000000) and report the smallest total variation it resolves (default and "
        f"--budget alone: {DEFAULT_BUDGET})",
    )
    p.add_argument(
        "--planned",
        action="store_true",
        help="planned design instead of a budget: sample each instance to the size that detects a "
        f"total-variation distance of --tv (default {DEFAULT_TV:g}) with the declared power, the same "
        "samples on every machine",
    )
    p.add_argument(
        "--workers",
        type=int_at_least("--workers", 1),
        default=None,
        help="worker processes sampling instances at once in a budgeted audit (default: one per CPU; "
        "not with --planned or --boundary)",
    )
    p.add_argument(
        "--boundary",
        action="store_true",
        help="boundary mode: pin every uniform the verifier draws (from its rng or "
        "from numpy's, Python's and torch's global generators) at 0, the largest float below 1 and the "
        "drafted tokens' acceptance ratios, and report any emitted token of target probability 0 with the "
        "chance per draw that a real generator hits that boundary (not with --budget, --planned or --tv)",
    )
    p.add_argument(
        "--alpha", type=rate("--alpha"), default=1e-6, help="family-wise false-alarm rate (default 1e-6)"
    )
    p.add_argument("--power", type=rate("--power"), default=0.99, help="power per instance (default 0.99)")
    p.add_argument(
        "--tv",
        type=float,
        default=None,
        help="planned design: smallest total-variation distance to detect per instance (default "
        f"{DEFAULT_TV:g}; implies --planned)",
    )
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="seed (default 0)")
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="time limit in seconds per instance (per chunk of samples in a budgeted audit); the samples "
        "drawn before it are kept and tested, and an instance it cuts short makes the audit inconclusive "
        "unless something is rejected",
    )
    p.add_argument(
        "--threads",
        type=int_at_least("--threads", 1),
        default=1,
        help="threads per worker process (OpenMP, MKL, OpenBLAS, torch; default 1: more oversubscribe a "
        "loaded machine)",
    )
    p.add_argument(
        "--python",
        default=None,
        metavar="PATH",
        help="run the worker under this interpreter (where the audited package is installed; it needs "
        "numpy); default: verispec's own",
    )
    p.add_argument("--out", default=None, help="also write audit.json and audit.md to this folder")
    p.add_argument("--force", action="store_true", help="replace the report an --out folder already holds")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    kind, function = ("chain", args.chain) if args.chain else ("tree", args.tree)
    design = _design(args)
    _refuse_overwrite(args, "boundary" if design == "boundary" else "audit")
    if args.drafts == "self" and (design == "boundary" or kind != "chain"):
        raise UsageError("--drafts self audits a --chain function by sampling; not with --tree or --boundary")
    if design == "boundary":
        return _boundary(args, kind, function)
    budget = parse_budget(args.budget or DEFAULT_BUDGET) if design == "budgeted" else None
    tv = DEFAULT_TV if args.tv is None else args.tv

    def show(r: Any) -> None:
        if args.json:
            return
        p = "" if r.pvalue is None else f"p={r.pvalue:.3g}"
        if r.rejected and r.decided_by:
            p = f"{p} ({r.decided_by})"
        mark = "BAD" if r.rejected else "INC" if r.incomplete else "ok "
        tv = "" if r.tv is None else f"TV~{r.tv:.3f}"
        if r.stopped:
            resolved = "" if r.resolution is None else f"resolves TV {r.resolution:.4f}"
            tv = f"{tv} {resolved} (stopped by {r.stopped})"
        progress(f"  {mark} {r.name:<45} n={r.n:<8} {p:<26} {tv:<10} {r.error or r.incomplete or ''}")

    if not args.json:
        if budget is None:
            plan = f"planned for TV {tv:g}"
        elif args.budget is None:
            default = f"the default; --planned for a fixed design at TV {DEFAULT_TV:g}"
            plan = f"budget {budget.describe()} ({default})"
        else:
            plan = f"budget {budget.describe()}"
        under = f" under {args.python}" if args.python else ""
        progress(
            f"auditing {function} ({kind}) in a subprocess{under} ({args.threads} thread(s)), "
            f"alpha {args.alpha:g}, power {args.power:g}, {plan}"
        )
    result = audit(
        function,
        kind,
        alpha=args.alpha,
        power=args.power,
        tv=tv,
        seed=args.seed,
        timeout_s=args.timeout,
        law=args.law,
        on_instance=show,
        budget=budget,
        workers=args.workers,
        threads=args.threads,
        python=args.python,
        on_progress=None if args.json else progress,
        drafts=args.drafts,
        vocab=args.vocab,
        pairs=args.instances,
    )
    _finish(args, "audit", result, f"verdict: {result.verdict}; reproduce: {result.command}")
    return result.verdict


#: What each design does, for the usage error that names two of them.
_DESIGNS = {
    "boundary": "the boundary mode pins the verifier's uniforms and tests no law",
    "planned": "the planned design samples each instance to the size planned for --tv",
    "budgeted": "the budgeted design samples each for its share of the budget",
}


def _design(args: argparse.Namespace) -> str:
    """The audit's design: ``boundary`` (``--boundary``), ``planned`` (``--planned`` or
    ``--tv``) or ``budgeted`` (``--budget``, and the default). Options of two designs, or
    ``--workers`` outside a budgeted audit, are a usage error naming them."""
    chosen: list[tuple[str, str]] = []
    if args.boundary:
        chosen.append(("boundary", "--boundary"))
    if args.planned or args.tv is not None:
        chosen.append(("planned", "--planned" if args.planned else f"--tv={args.tv:g}"))
    if args.budget is not None:
        chosen.append(("budgeted", f"--budget={args.budget}"))
    if len(chosen) > 1:
        (first, a), (second, b) = chosen[:2]
        raise UsageError(
            f"{a} and {b} choose two designs ({_DESIGNS[first]}; {_DESIGNS[second]}): pass one of them"
        )
    design, option = chosen[0] if chosen else ("budgeted", "")
    if args.workers is not None and design != "budgeted":
        raise UsageError(
            f"--workers={args.workers} sets the worker processes of a budgeted audit; {option} runs one "
            "instance at a time"
        )
    return design


def _refuse_overwrite(args: argparse.Namespace, stem: str) -> None:
    """An ``--out`` folder that already holds a report is replaced only with ``--force``."""
    if args.out and not args.force:
        held = [f for f in (f"{stem}.json", f"{stem}.md") if os.path.exists(os.path.join(args.out, f))]
        if held:
            raise UsageError(
                f"--out={args.out!r} already holds {' and '.join(held)}; pass --force to replace them"
            )


def _finish(args: argparse.Namespace, stem: str, result: Any, summary: str) -> None:
    """Write ``STEM.json`` and ``STEM.md`` under ``--out``; print the JSON or the summary."""
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, f"{stem}.json"), "w", encoding="utf-8") as stream:
            json.dump(result.to_json(), stream, indent=2)
        with open(os.path.join(args.out, f"{stem}.md"), "w", encoding="utf-8") as stream:
            stream.write(result.markdown())
    if args.json:
        write_json(result.to_json())
    else:
        print(summary)


def _boundary(args: argparse.Namespace, kind: str, function: str) -> RunVerdict:
    def show(r: dict[str, Any]) -> None:
        if args.json:
            return
        found = len(r.get("findings", []))
        trouble = [*r.get("errors", {}).values(), *r.get("unpinnable", {}).values()]
        if r.get("error"):
            trouble.append(r["error"])
        mark = "BAD" if found or trouble else "ok "
        pinned = sum(r.get("draws", {}).values())
        detail = f"{found} token(s) of target probability 0" if found else (trouble[0] if trouble else "")
        progress(f"  {mark} {r['instance']:<45} {pinned:>6} pinned uniforms  {detail}")

    if not args.json:
        progress(f"boundary audit of {function} in a subprocess (uniforms pinned at 0, below 1, the ratio)")
    result = boundary_audit(
        function,
        kind,
        law=args.law,
        seed=args.seed,
        timeout_s=args.timeout,
        on_instance=show,
        threads=args.threads,
        python=args.python,
        vocab=args.vocab,
        pairs=args.instances,
    )
    _finish(
        args, "boundary", result, f"verdict: {result.verdict}: {result.reason}; reproduce: {result.command}"
    )
    return result.verdict
