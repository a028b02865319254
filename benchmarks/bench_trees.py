"""Benchmarks of the exact tree layer. Prints figures and ratios; asserts nothing about time.

Usage::

    python benchmarks/bench_trees.py            # full run (several minutes on 2 cores)
    python benchmarks/bench_trees.py --quick

Figures (goals from the tree issue):

1. exact round checks per second (drafted trees enumerated, round criterion and accounting)
   for each tree verifier and the laws it is meant for, at (V=3, width 2, depth 2) and
   (V=4, width 3, depth 3); where the drafted trees cannot be enumerated (i.i.d. at V=4,
   width 3, depth 3 has 4**39), the count is printed instead;
2. the largest tree each law can be enumerated for exactly within 10 s;
3. 1,000 random trees per verifier and candidate law, checked exactly on 2 processes,
   against the goal of 60 s each.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from verispec.core.models import RandomRationalModel
from verispec.exact.criterion import check_round
from verispec.exact.search import random_tree_instances
from verispec.verifiers import registry
from verispec.verifiers.trees import TreeInstance

#: Above this many drafted trees a round check is not attempted.
MAX_TREES = 2_000_000


def drafted_trees(vocab: int, shape: tuple[int, ...], law: str) -> int:
    """Upper bound on the number of distinct drafted trees (full-support rows)."""
    if law in ("det", "adaptive-det"):
        return 1
    nodes, count = 1, 1
    for width in shape:
        per_node = (
            vocab**width if law in ("iid", "multi", "adaptive-iid") else math.perm(vocab, min(width, vocab))
        )
        count *= per_node**nodes
        nodes *= width
    return count


def rate(entry: Any, law: str, vocab: int, shape: tuple[int, ...], seconds: float) -> str:
    trees = drafted_trees(vocab, shape, law)
    if trees > MAX_TREES:
        return f"not enumerable ({trees:.1e} drafted trees)"
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds or n == 0:
        models = [RandomRationalModel(vocab, seed=10 * n + j) for j in range(1 + max(shape))]
        extra = tuple(models[2:]) if law == "multi" else ()
        inst = TreeInstance(models[0], models[1], shape, law, entry.settings[0], drafts=extra)
        check_round(entry, inst)
        n += 1
    return f"{n / (time.perf_counter() - start):8.2f} per second ({n} checks)"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def largest_within(limit: float, law: str, name: str, vocab: int) -> tuple[tuple[int, ...], float] | None:
    entry = registry.get(name)
    best = None
    signal.signal(signal.SIGALRM, _alarm)
    for shape in ((2,), (3,), (2, 2), (3, 2), (2, 2, 2), (3, 3), (3, 3, 2), (3, 3, 3), (4, 4, 4), (5, 5, 5)):
        inst = TreeInstance(
            RandomRationalModel(vocab, seed=1), RandomRationalModel(vocab, seed=2), shape, law
        )
        signal.alarm(int(limit) + 1)
        start = time.perf_counter()
        try:
            check_round(entry, inst)
        except _Timeout:
            break
        finally:
            signal.alarm(0)
        elapsed = time.perf_counter() - start
        if elapsed > limit:
            break
        best = (shape, elapsed)
    return best


def _sweep(args: tuple[str, str, int]) -> tuple[str, str, int, int, float]:
    name, law, count = args
    entry = registry.get(name)
    start = time.perf_counter()
    exact = sum(
        check_round(entry, inst).exact for inst in random_tree_instances(law, entry.settings, count, seed=11)
    )
    return name, law, count, exact, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    jobs = min(2, os.cpu_count() or 1)
    exact_trees = registry.verifiers("exact", family="tree")
    print(f"verispec exact tree benchmark ({jobs} processes)\n")

    print("exact round checks per second (drafted trees enumerated):")
    for vocab, shape in ((3, (2, 2)), (4, (3, 3, 3))):
        for entry in exact_trees:
            for law in entry.laws:
                figure = rate(entry, law, vocab, shape, 0.5 if args.quick else 3.0)
                print(f"  V={vocab} shape={list(shape)} {entry.name:<24} law={law:<13} {figure}")

    print("\nlargest tree enumerated exactly within 10 s (V=3, full-support rows, one check):")
    for law, name in (("iid", "mss"), ("wor", "rrs-without-replacement"), ("det", "point-mass-tree")):
        found = largest_within(2.0 if args.quick else 10.0, law, name, 3)
        text = "none" if found is None else f"shape {list(found[0])} ({found[1]:.2f} s)"
        print(f"  law={law:<4} {name:<24} {text}")

    count = 100 if args.quick else 1000
    print(f"\n{count} random trees per verifier and candidate law (V 2..3, depth <= 3), {jobs} processes:")
    work = [(e.name, law, count) for e in exact_trees for law in e.laws]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(_sweep, work))
    wall = time.perf_counter() - start
    worst = 0.0
    for name, law, n, exact, seconds in results:
        worst = max(worst, seconds / jobs)
        print(f"  {name:<24} law={law:<13} {n} trees, {exact} exact, {seconds:6.1f} s of one core")
    print(
        f"  all {len(results)} pairs: {wall:.1f} s wall on {jobs} processes; slowest pair on 2 cores "
        f"{worst:.1f} s, ratio to the 60 s goal: {worst / 60:.2f}"
    )


if __name__ == "__main__":
    main()
