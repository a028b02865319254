"""One-line renderings of results, for progress on a terminal (the CLI and the main job)."""

from __future__ import annotations

from typing import Any

from verispec.verdicts import Outcome, Status, SubjectOutcome, VerdictKind

__all__ = ["check_line", "control_line", "prove_line", "smt_line", "subject_line"]


def prove_line(result: Any, width: int) -> str:
    """``ok  token-level  exact  proved (symbolic)  2000 instances  27.0 s``"""
    proof = f" ({result.proof})" if result.proof else ""
    mark = "ok " if result.ok else "BAD"
    return (
        f"{mark} {result.name:<{width}} {result.kind:<7} {result.verdict + proof:<20} "
        f"{result.instances:>6} instances  {result.seconds:6.1f} s"
    )


def smt_line(name: str, convention: str, expected: str | None, result: Any, width: int) -> str:
    """One SMT verdict, marked against the expected one where there is one."""
    verdict = result.verdict.kind
    mark = "   " if expected is None else ("ok " if verdict == expected else "BAD")
    cx = f"  counterexample: {result.counterexample}" if result.counterexample else ""
    why = f"  ({result.verdict.reason})" if verdict == VerdictKind.UNKNOWN else ""
    return f"{mark} {name:<{width}} {verdict:<8} {result.seconds * 1000:8.1f} ms  {convention}{cx}{why}"


def check_line(result: Any) -> str:
    """One conformance check: status, p-value, calls, time and reason."""
    mark = {Status.PASS: "ok ", Status.SKIP: "-- ", Status.XFAIL: "xf "}.get(result.status, "BAD")
    p = "" if result.pvalue is None else f"p={result.pvalue:.3g}"
    reason = f"expected failure ({result.expected}): {result.reason}" if result.expected else result.reason
    return (
        f"  {mark} {result.name:<22} {result.status:<5} {p:<12} {result.generate_calls:>4} calls "
        f"{result.seconds:6.1f} s  {reason}"
    )


def control_line(result: Any) -> str:
    """One negative control: outcome, samples to detection, the checks that caught it."""
    outcome = result.outcome
    mark = "ok " if outcome == Outcome.CAUGHT else "-- " if outcome == Outcome.NOT_RUN else "BAD"
    caught = [f"{c.check} ({c.evidence or 'refuted'})" for c in result.cells if result.catches(c)]
    failed = [
        f"{c.check} ({c.failure or c.status}: {c.detail[:120]})"
        for c in result.cells
        if c.status in (Status.FAIL, Status.ERROR)
    ]
    by = "by " + ", ".join(caught) if caught else "; ".join(failed) or "no check failed"
    samples = f"{result.samples_to_detection} samples" if result.samples_to_detection else ""
    return f"  {mark} {result.control.name:<44} {outcome:<15} {samples:<13} {result.not_run or by}"


def subject_line(subject: Any) -> str:
    mark = "ok " if subject.outcome == SubjectOutcome.PASS else "BAD"
    fixes = getattr(subject, "fixes", ())
    fixed = f" (with fix {', '.join(fixes)})" if fixes else ""
    return f"  {mark} unmutated {subject.layer} subject {subject.name}{fixed}: {subject.outcome}"
