"""Benchmark of the audit's budgeted design and boundary mode. Prints figures; asserts nothing.

    python benchmarks/bench_audits.py            # all three tables (about 7 minutes on 2 cores)

1. Resolution reached per instance with ``--budget 60s`` on a numpy verifier and on
   transformers' ``_speculative_sampling`` (through its adapter), as the CLI runs them (in the
   audit worker).
2. Samples to detection of the catalog's chain controls: the planned design's samples on the
   instance that rejects, next to the budgeted design's (the e-process stops an instance the
   first time its evidence is decisive), at the same family-wise rate; and how many
   instances the audit's combined test (sequence and position views) rejects against the
   sequence test alone, on the same samples.
3. The boundary mode's wall time per verifier, with what it pinned and found.
"""

from __future__ import annotations

import importlib.util
import time

NUMPY_BOX = "tests.fixtures.black_boxes:speculative_sampling"
HF_BOX = "conformance.hf_speculative_sampling:verify"
CONTROLS = ["resample-target", "softmax-residual", "reused-uniform", "bonus-wrong-row", "block-first-failure"]
#: The small bias the budgeted design exists for: the acceptance ratio damped by 5% where p < q.
DAMPED = "tests.fixtures.black_boxes:damped_ratio"
BOUNDARY = [
    "verispec.audits.adapters:token_level",
    "verispec.audits.adapters:point_mass",
    NUMPY_BOX,
    "tests.fixtures.black_boxes:accepts_at_equality",
    HF_BOX,
]


def _has_transformers() -> bool:
    return importlib.util.find_spec("transformers") is not None


def resolution_table() -> None:
    from verispec.audits.budgeted import SamplingBudget
    from verispec.audits.runner import audit

    print("== resolution per instance, --budget 60s (alpha 1e-6 over 8 instances, power 0.99)")
    for function in [NUMPY_BOX, HF_BOX]:
        if function == HF_BOX and not _has_transformers():
            print(f"{function}: left out (needs transformers)")
            continue
        start = time.perf_counter()
        result = audit(function, "chain", budget=SamplingBudget(seconds=60.0))
        wall = time.perf_counter() - start
        print(f"{function} ({wall:.0f} s, verdict {result.verdict})")
        for r in result.instances:
            resolved = "-" if r.resolution is None else f"{r.resolution:.4f}"
            print(f"  {r.name:<42}{r.n:>9} samples  resolution {resolved}  p = {r.pvalue:.3g}")
        worst = max((r.resolution or 1.0) for r in result.instances)
        print(f"  worst instance resolution: {worst:.4f}")


def detection_table() -> None:
    from verispec.audits.adapters import black_box
    from verispec.audits.budgeted import SamplingBudget
    from verispec.audits.runner import audit

    print("== samples to detection of the chain controls (alpha 1e-6)")
    print("   rejected: instances of 8 rejected by the sequence test alone (at the whole rate of the")
    print("   G-test it stands for; the e-process included) / by the audit's combined test, same samples")
    header = f"{'control':<22}{'planned: instance':<40}{'samples':>9}{'rejected':>10}   "
    print(f"{header}{'budgeted (400000): instance':<40}{'samples':>9}{'rejected':>10}")
    from verispec.isolation import load_function

    def first(result):
        rejected = [r for r in result.instances if r.rejected]
        return min(rejected, key=lambda r: r.n) if rejected else None

    def by_sequence_alone(r) -> bool:
        if r.error is not None or r.stopped == "e-process":
            return True
        return bool(r.view_pvalues) and r.view_pvalues["sequence"] <= r.alpha

    def cells(result) -> str:
        r = first(result)
        alone = sum(by_sequence_alone(x) for x in result.instances)
        both = sum(x.rejected for x in result.instances)
        shown = f"{r.name:<40}{r.n:>9}" if r else f"{'not detected':<40}{'':>9}"
        return f"{shown}{f'{alone} / {both}':>10}"

    for name in [*CONTROLS, DAMPED]:
        box = load_function(name) if ":" in name else black_box(name)
        planned = audit(box, "chain")
        budgeted = audit(box, "chain", budget=SamplingBudget(samples=400_000))
        b = first(budgeted)
        label = "damped-ratio (fixture)" if name == DAMPED else name
        print(f"{label:<22}{cells(planned)}   {cells(budgeted)}  ({b.stopped if b else '-'})")


def boundary_table() -> None:
    from verispec.audits.runner import boundary_audit

    print("== boundary mode (64 rounds per instance and boundary, in the audit worker)")
    print(f"{'verifier':<48}{'wall s':>8}{'pinned':>9}  {'verdict':<13}per-draw probability")
    for function in BOUNDARY:
        if function == HF_BOX and not _has_transformers():
            print(f"{function:<48}  left out: needs transformers")
            continue
        start = time.perf_counter()
        result = boundary_audit(function)
        wall = time.perf_counter() - start
        chance = result.per_draw_probability
        cell = f"{chance:.3g} ({len(result.findings)} findings)" if result.findings else "-"
        print(f"{function:<48}{wall:>8.1f}{sum(result.draws.values()):>9}  {result.verdict:<13}{cell}")


def main() -> None:
    resolution_table()
    detection_table()
    boundary_table()


if __name__ == "__main__":
    main()
