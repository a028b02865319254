"""Benchmarks of the exact layer. Prints figures and ratios; asserts nothing about time.

Usage::

    python benchmarks/bench_exact.py            # full run (a few minutes on 2 cores)
    python benchmarks/bench_exact.py --quick    # a short run

Figures (goals from the foundation issue):

1. exact round checks per second for ``token-level`` at (V=4, gamma=3) and (V=8, gamma=4);
2. random chain instances (V <= 4, gamma <= 3, with zeros) checked per minute on 2
   processes, against the goal of 10,000 within 60 s;
3. the largest (V, gamma) one exact round check finishes within 10 s;
4. seconds to refute each control (goal: under 5 s each);
5. a same-run baseline: the multi-round law by composing exact round laws against direct
   enumeration of every path through every round (same laws, checked; ratio printed).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Hashable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from verispec.core.models import RandomRationalModel
from verispec.core.random import Random
from verispec.exact.criterion import check_multi_round, check_round
from verispec.exact.executor import output_law
from verispec.exact.search import find_counterexample, random_instances
from verispec.verifiers import registry
from verispec.verifiers.instance import ChainInstance, run_round

TOKEN_LEVEL = registry.get("token-level")


def _instance(vocab: int, gamma: int, seed: int, zero_prob: float = 0.3) -> ChainInstance:
    return ChainInstance(
        RandomRationalModel(vocab, seed=2 * seed, zero_prob=zero_prob),
        RandomRationalModel(vocab, seed=2 * seed + 1, zero_prob=zero_prob),
        gamma,
    )


def checks_per_second(vocab: int, gamma: int, seconds: float) -> tuple[float, int]:
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        assert check_round(TOKEN_LEVEL, _instance(vocab, gamma, n)).exact
        n += 1
    return n / (time.perf_counter() - start), n


def _sweep_chunk(args: tuple[int, int, int]) -> int:
    seed, start, count = args
    settings = registry.STOCHASTIC_SETTINGS
    passed = 0
    for k, inst in enumerate(random_instances(settings, start + count, seed=seed)):
        if k >= start:
            passed += check_round(TOKEN_LEVEL, inst).exact
    return passed


def sweep(total: int, jobs: int) -> tuple[float, int]:
    chunk = total // jobs
    parts = [(7, i * chunk, chunk if i < jobs - 1 else total - i * chunk) for i in range(jobs)]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        passed = sum(pool.map(_sweep_chunk, parts))
    return time.perf_counter() - start, passed


def largest_within(limit: float, gammas: range) -> list[tuple[int, int, float]]:
    frontier = []
    for gamma in gammas:
        best = None
        for vocab in (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64):
            start = time.perf_counter()
            check_round(TOKEN_LEVEL, _instance(vocab, gamma, 1, zero_prob=0.0))
            elapsed = time.perf_counter() - start
            if elapsed > limit:
                break
            best = (vocab, gamma, elapsed)
            if elapsed > limit / 4:  # the next size would exceed the limit
                break
        if best is None:
            break
        frontier.append(best)
    return frontier


def direct_multi_round(instance: ChainInstance, n_tokens: int) -> dict[Hashable, Any]:
    """Baseline: enumerate every path of every round until n_tokens are committed."""

    def rounds(rand: Random) -> Hashable:
        committed: tuple[int, ...] = ()
        while len(committed) < n_tokens:
            here = instance.with_context(instance.context + committed)
            committed += run_round(TOKEN_LEVEL.verify, TOKEN_LEVEL.draft, here, rand)
        return committed[:n_tokens]

    return output_law(rounds)


def multi_round_ratio(count: int, n_tokens: int) -> tuple[float, float]:
    instances = [_instance(3, 2, 100 + k) for k in range(count)]
    start = time.perf_counter()
    for inst in instances:
        assert check_multi_round(TOKEN_LEVEL, inst, n_tokens).exact
    composed = time.perf_counter() - start
    start = time.perf_counter()
    for inst in instances:
        law = direct_multi_round(inst, n_tokens)
        assert sum(law.values()) == 1
    direct = time.perf_counter() - start
    return composed, direct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quick = args.quick
    jobs = min(2, os.cpu_count() or 1)
    print(f"verispec exact-layer benchmark ({platform.processor() or platform.machine()}, {jobs} processes)")
    print()
    for vocab, gamma in ((4, 3), (8, 4)):
        rate, n = checks_per_second(vocab, gamma, 2.0 if quick else 8.0)
        print(f"token-level round checks at V={vocab} gamma={gamma}: {rate:8.1f} per second ({n} checks)")

    total = 2_000 if quick else 10_000
    elapsed, passed = sweep(total, jobs)
    print(
        f"\n{total} random instances (V<=4, gamma<=3, zeros, 6 settings): {elapsed:.1f} s, "
        f"{total / elapsed * 60:,.0f} per minute; {passed}/{total} exact; "
        f"ratio to the goal (10,000 in 60 s): {total / elapsed * 60 / 10_000:.2f}x"
    )

    print("\nlargest (V, gamma) for one exact round check within 10 s (full-support rows):")
    for vocab, gamma, seconds in largest_within(10.0, range(1, 4 if quick else 7)):
        print(f"  gamma={gamma}: V={vocab} ({seconds:.2f} s)")

    print("\ncontrols refuted (goal: under 5 s each):")
    worst = 0.0
    for entry in registry.verifiers("control"):
        start = time.perf_counter()
        cx = find_counterexample(entry, max_examples=3000)
        seconds = time.perf_counter() - start
        worst = max(worst, seconds)
        shape = f"V={cx.instance.vocab_size} gamma={cx.instance.gamma}" if cx else "NOT REFUTED"
        print(f"  {entry.name:<24} {seconds:5.2f} s  ({shape})")
    print(f"  slowest: {worst:.2f} s, ratio to the 5 s goal: {worst / 5:.2f}")

    count = 5 if quick else 20
    composed, direct = multi_round_ratio(count, 4)
    print(
        f"\nmulti-round law, 4 tokens, {count} instances (V=3, gamma=2): composed round laws "
        f"{composed:.2f} s, direct path enumeration {direct:.2f} s; speedup {direct / composed:.1f}x"
    )


if __name__ == "__main__":
    main()
