"""Benchmark of the statistics layer. Prints figures and ratios; asserts nothing.

Usage::

    python benchmarks/bench_stats.py

In one run (statistics issue): the samples each test needs to detect the seed article's
resample-from-target bug (p = (0.5, 0.3, 0.2), buggy output (0.4, 0.32, 0.28)) at
alpha = 1e-6 and power 0.99, next to the Neyman-Pearson optimum; the expected samples when
the sampler is correct under the sequential designs; simulated stopping times of the SPRT
and the e-process; and verify rounds per second of the vectorised sampler (gamma = 4, V = 32).
"""

from __future__ import annotations

import math
import time

import numpy as np

from verispec.stats.plan import plan
from verispec.stats.vectorised import token_level_rounds

P = [0.5, 0.3, 0.2]
Q = [0.4, 0.32, 0.28]
ALPHA, POWER = 1e-6, 0.99


def simulated_stopping(law: list[float], reps: int, cap: int, seed: int) -> dict[str, float]:
    """Stopping times of the SPRT (against Q) and the Dirichlet(100 p) e-process on draws from ``law``."""
    rng = np.random.default_rng(seed)
    p, q = np.asarray(P), np.asarray(Q)
    draws = rng.choice(3, size=(reps, cap), p=law)
    llr = np.cumsum(np.log(q[draws] / p[draws]), axis=1)
    upper, lower = math.log(POWER / ALPHA), math.log((1 - POWER) / (1 - ALPHA))
    up = np.where((llr >= upper).any(1), (llr >= upper).argmax(1), cap)
    down = np.where((llr <= lower).any(1), (llr <= lower).argmax(1), cap)
    sprt = np.minimum(up, down) + 1
    a = 100 * p
    counts = np.zeros((reps, 3))
    log_e = np.zeros(reps)
    stop = np.full(reps, cap)
    for t in range(cap):
        x = draws[:, t]
        log_e += np.log((a[x] + counts[np.arange(reps), x]) / (100 + t) / p[x])
        counts[np.arange(reps), x] += 1
        newly = (log_e >= math.log(1 / ALPHA)) & (stop == cap)
        stop[newly] = t + 1
    return {
        "sprt_mean": float(sprt.mean()),
        "sprt_p99": float(np.quantile(sprt, 0.99)),
        "e_median": float(np.median(stop)),
        "e_p99": float(np.quantile(stop, 0.99)),
        "e_reached_cap": float((stop == cap).mean()),
    }


def main() -> None:
    result = plan(P, Q, alpha=ALPHA, power=POWER)
    designs = {d: n for d, n, _ in result.rows}
    optimum = designs["neyman-pearson optimum"]
    print(f"samples to detect q = {Q} against p = {P}, alpha {ALPHA:g}, power {POWER:g}:")
    for design, n, note in result.rows:
        print(f"  {design:<42} {n:>8}   {float(n) / optimum:5.2f}x the Neyman-Pearson optimum   ({note})")
    planned = designs["pearson, exact critical value"]
    print(f"  planned fixed-size test / optimum: {planned / optimum:.3f} (goal <= 1.15)")
    correct = designs["two-stage confirm, expected if correct"]
    print(
        f"  expected samples when correct, two-stage confirm: {correct} (goal <= 600); "
        f"SPRT against q: {designs['sprt against q, expected if correct (p)']}"
    )

    print("\nsimulated stopping times (4000 paths, cap 6000):")
    under_q = simulated_stopping(Q, 4000, 6000, 1)
    under_p = simulated_stopping(P, 4000, 6000, 2)
    print(
        f"  buggy sampler (q): SPRT mean {under_q['sprt_mean']:.0f}, p99 {under_q['sprt_p99']:.0f}; "
        f"e-process median {under_q['e_median']:.0f}, p99 {under_q['e_p99']:.0f}"
    )
    print(
        f"  correct sampler (p): SPRT mean {under_p['sprt_mean']:.0f}, p99 {under_p['sprt_p99']:.0f}; "
        f"e-process runs to its cap on {under_p['e_reached_cap']:.1%} of paths (it only ever rejects)"
    )

    rng = np.random.default_rng(0)
    gamma, vocab = 4, 32
    target = rng.dirichlet(np.full(vocab, 0.5), size=gamma + 1)
    draft = rng.dirichlet(np.full(vocab, 0.5), size=gamma)
    token_level_rounds(target, draft, 10_000, rng)
    n = 2_000_000
    start = time.perf_counter()
    token_level_rounds(target, draft, n, rng)
    rate = n / (time.perf_counter() - start)
    print(
        f"\nvectorised token-level verify rounds (gamma={gamma}, V={vocab}): {rate:,.0f} per second "
        f"({rate / 1e6:.2f}x the goal of 1,000,000)"
    )


if __name__ == "__main__":
    main()
