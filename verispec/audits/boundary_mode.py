"""The boundary mode's audit: every instance of the battery run with the verifier's uniforms
pinned at the edges of their range (:mod:`verispec.audits.boundary`), and its report.

``verispec audit --boundary`` (or :func:`boundary_audit`) sends one request per instance to
the audit worker (or runs a callable here) and collects the findings: emitted tokens of target
probability 0, each with the chance per draw that a real generator hits that boundary.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verispec.audits.boundary import GRID_BITS
from verispec.audits.instances import AuditInstance, battery, battery_options, law_option, to_spec
from verispec.audits.sampling import WORKER_THREADS, answer_each, check_isolation, open_lane, target_name
from verispec.report.markdown import table
from verispec.verdicts import RunVerdict

__all__ = ["BOUNDARY_CALLS", "BoundaryResult", "boundary_audit"]

#: Rounds per instance and boundary in the boundary mode (the drafts vary; the pins do not).
BOUNDARY_CALLS = 64


@dataclass
class BoundaryResult:
    """The boundary mode's outcome (:mod:`verispec.audits.boundary`)."""

    function: str
    seed: int
    command: str
    instances: list[dict[str, Any]]
    seconds: float = 0.0

    def _tally(self, key: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.instances:
            for source, count in r.get(key, {}).items():
                out[source] = out.get(source, 0) + count
        return out

    @property
    def draws(self) -> dict[str, int]:
        """Pinned uniforms by source and width."""
        return self._tally("draws")

    @property
    def unpinned(self) -> dict[str, int]:
        """Categorical draws left to the real generator, by source."""
        return self._tally("unpinned")

    @property
    def per_draw_probability(self) -> float | None:
        """The chance that one uniform of the widest grid the verifier drew from (the coarsest:
        float32 before float64) takes a given boundary value: ``2^-24`` or ``2^-53``."""
        widths = [w for w in GRID_BITS if any(f"({w})" in source for source in self.draws)]
        return 2.0 ** -min(GRID_BITS[w] for w in widths) if widths else None

    @property
    def findings(self) -> list[dict[str, Any]]:
        return [{"instance": r["instance"], **f} for r in self.instances for f in r.get("findings", [])]

    @property
    def verdict(self) -> RunVerdict:
        """``fail`` on a finding or an error; ``inconclusive`` when nothing could be pinned."""
        if self.findings or any(r.get("errors") or r.get("error") for r in self.instances):
            return RunVerdict.FAIL
        if not self.draws or self.unpinnable:
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    @property
    def unpinnable(self) -> list[str]:
        return [f"{r['instance']}: {m}" for r in self.instances for m in r.get("unpinnable", {}).values()]

    @property
    def reason(self) -> str:
        if self.findings:
            f = self.findings[0]
            where = "an accepted draft" if f["accepted_draft"] else "the corrected or bonus token"
            return (
                f"{len(self.findings)} emitted token(s) of target probability 0; first: token "
                f"{f['token']} at position {f['position']} ({where}) of instance {f['instance']} with "
                f"every uniform at the {f['boundary']} boundary, drafts {f['drafts']}, block "
                f"{f['block']}; a real generator draws that uniform with probability "
                f"{self.per_draw_probability or 0:.3g} per draw"
            )
        errors = [
            (r["instance"], e)
            for r in self.instances
            for e in [r.get("error"), *r.get("errors", {}).values()]
            if e
        ]
        if errors:
            return f"{errors[0][0]}: {errors[0][1]}"
        if self.unpinnable:
            return f"inconclusive: {self.unpinnable[0]}"
        if not self.draws:
            return (
                "the verifier drew no uniform the boundary mode can pin (neither from the rng it was "
                "given nor from numpy's, Python's or torch's global generators): inconclusive"
            )
        return (
            f"no token of target probability 0 at any boundary ({sum(self.draws.values())} pinned uniforms)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "mode": "boundary",
            "verdict": self.verdict,
            "finding_class": "boundary non-conformance" if self.findings else None,
            "reason": self.reason,
            "per_draw_probability": self.per_draw_probability,
            "pinned_draws": self.draws,
            "unpinned_draws": self.unpinned,
            "seed": self.seed,
            "reproduce": self.command,
            "seconds": round(self.seconds, 3),
            "instances": self.instances,
        }

    def markdown(self) -> str:
        lines = [
            f"# Boundary audit of `{self.function}`: **{self.verdict}**",
            "",
            f"- {self.reason}",
            "- pinned uniforms by source: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.draws.items())) or "none"),
            *(
                [
                    "- left to the real generator (no boundary value is one of its draws): "
                    + ", ".join(f"{k} {v}" for k, v in sorted(self.unpinned.items()))
                ]
                if self.unpinned
                else []
            ),
            f"- seed {self.seed}; reproduce with `{self.command}`",
            "",
        ]
        rows = [
            [f["instance"], f["boundary"], f["position"], f["token"], f["drafts"], f["block"]]
            for f in self.findings[:50]
        ]
        if rows:
            lines.append(
                table(["instance", "boundary", "position", "token (p = 0)", "drafts", "block"], rows)
            )
        return "\n".join(lines) + "\n"


def boundary_audit(
    function: str | Callable[..., Any],
    kind: str = "chain",
    *,
    law: str = "iid",
    seed: int = 0,
    timeout_s: float = 120.0,
    calls: int = BOUNDARY_CALLS,
    instances: list[AuditInstance] | None = None,
    on_instance: Callable[[dict[str, Any]], None] | None = None,
    threads: int | None = WORKER_THREADS,
    python: str | None = None,
    vocab: int | None = None,
    pairs: int | None = None,
) -> BoundaryResult:
    """Run the verifier ``function`` at every boundary of its uniforms on the chain battery
    (``kind="chain"``) or the tree battery of candidate law ``law`` (``kind="tree"``):
    ``"module:function"`` in a subprocess with a time limit, or a callable here."""
    name = target_name(function, seed)
    isolation = check_isolation(threads, python)
    items = instances or battery(kind, seed, law, vocab=vocab, pairs=pairs)
    results: list[dict[str, Any]] = []
    start = time.perf_counter()

    def finish(index: int, data: dict[str, Any]) -> None:
        results.append({"instance": items[index].name, **data})
        if on_instance:
            on_instance(results[-1])

    requests = [
        {"index": i, "mode": "boundary", "spec": to_spec(item), "n": calls, "seed": seed * 1000 + i}
        for i, item in enumerate(items)
    ]
    with open_lane(function, isolation, timeout_s) as lane:
        answer_each(lane, requests, timeout_s, finish)
    command = f"verispec audit --{kind} {name}{law_option(kind, law)} --boundary --seed {seed}"
    command += battery_options(vocab, pairs)
    return BoundaryResult(name, seed, command, results, time.perf_counter() - start)
