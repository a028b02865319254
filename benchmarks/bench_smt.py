"""Benchmark of the SMT catalog. Prints the time of every obligation; asserts nothing.

Usage::

    python benchmarks/bench_smt.py

Goals (SMT issue): the whole chain catalog proved or refuted in under 10 s on 2 cores, and
trees up to the chosen size in under 60 s. The last section times the exhaustive tree
query for each size, to show where the chosen bound sits.
"""

from __future__ import annotations

import time

import verispec.smt.obligations as obligations
from verispec.smt import index as ix
from verispec.smt.catalog import run_catalog


def main() -> None:
    print("conventions catalog (one process):")
    totals = {"chain": 0.0, "tree": 0.0}
    for r in run_catalog():
        totals[r.entry.family] += r.result.seconds
        ms = r.result.seconds * 1000
        print(f"  {r.entry.family:<5} {r.entry.name:<26} {r.result.verdict.kind:<8} {ms:9.1f} ms")
    print(
        f"  chain catalog: {totals['chain']:.2f} s (goal 10 s: {totals['chain'] / 10:.3f} of it); "
        f"tree catalog up to {obligations.MAX_TREE_NODES} nodes: {totals['tree']:.1f} s "
        f"(goal 60 s: {totals['tree'] / 60:.2f} of it)"
    )
    print("\nexhaustive tree-visibility query, one size at a time:")
    for n in range(2, 13):
        obligations.MAX_TREE_NODES = n
        start = time.perf_counter()
        result = obligations.check("tree-visibility", ix.tree_visible, timeout_ms=60_000)
        total = time.perf_counter() - start
        print(f"  trees up to {n:>2} nodes: {result.verdict.kind:<8} {total:7.2f} s (all sizes up to {n})")
        if total > 60:
            break


if __name__ == "__main__":
    main()
