"""``verispec audit``: audit a third-party chain or tree verifier as a black box."""

from __future__ import annotations

import argparse
from typing import Any

from verispec.cli._common import int_at_least, progress, rate
from verispec.verdicts import RunVerdict

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "audit",
        help="audit a third-party chain or tree verifier (black box)",
        description="Sample a black-box verifier on a battery of exact instances (random conditionals "
        "with zeros, temperature, top-k/top-p, forced rejection at each position, full "
        "acceptance) in a subprocess with a time limit, and test the law of its rounds "
        "against the target's with a declared false-alarm rate and power.",
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
        "--alpha", type=rate("--alpha"), default=1e-6, help="family-wise false-alarm rate (default 1e-6)"
    )
    p.add_argument("--power", type=rate("--power"), default=0.99, help="power per instance (default 0.99)")
    p.add_argument(
        "--tv",
        type=float,
        default=0.05,
        help="smallest total-variation distance to detect per instance (default 0.05)",
    )
    p.add_argument("--seed", type=int_at_least("--seed", 0), default=0, help="seed (default 0)")
    p.add_argument("--timeout", type=float, default=120.0, help="time limit per instance in seconds")
    p.add_argument("--out", default=None, help="also write audit.json and audit.md to this folder")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> RunVerdict:
    import json
    import os

    from verispec.audits.runner import audit

    kind, function = ("chain", args.chain) if args.chain else ("tree", args.tree)

    def show(r: Any) -> None:
        if args.json:
            return
        p = "" if r.pvalue is None else f"p={r.pvalue:.3g}"
        mark = "BAD" if r.rejected else "ok "
        tv = "" if r.tv is None else f"TV~{r.tv:.3f}"
        progress(f"  {mark} {r.name:<45} n={r.n:<6} {p:<14} {tv:<10} {r.error or ''}")

    if not args.json:
        progress(f"auditing {function} ({kind}) in a subprocess, alpha {args.alpha:g}, power {args.power:g}")
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
    return result.verdict
