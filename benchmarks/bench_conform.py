"""Benchmark of the conformance suite. Prints figures and ratios; asserts nothing.

Usage::

    python benchmarks/bench_conform.py            # full default run of reference and hf-assisted
    python benchmarks/bench_conform.py --quick    # the --quick design

Per engine (conformance issue): the wall time of the run, requests and tokens per second
through the harness, the engine's start-up, the harness's share of the remaining wall
time, and generate calls per check. The baseline, in the same run, is the same engine
generating the same number of requests in-process with no harness: the ratio of the two
throughputs is the harness's whole cost (process boundary, baseline logits, statistics).
"""

from __future__ import annotations

import argparse
import time

from verispec.conformance.runner import conform
from verispec.engines.protocol import Request, Sampling


def in_process_rate(engine_name: str, requests: int) -> float:
    """Requests per second of the bare engine on 24-token sampled requests (no harness)."""
    if engine_name == "reference":
        from verispec.engines.reference import make_reference as make
    else:
        from verispec.engines.hf import make_hf_assisted as make
    engine = make()
    batch = [Request((5, 6, 7, 8), 24, Sampling(1.0), seed=i) for i in range(requests)]
    engine.generate(batch[:2])  # warm-up
    start = time.perf_counter()
    engine.generate(batch)
    return requests / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--engines", default="reference,hf-assisted")
    args = parser.parse_args()
    for name in args.engines.split(","):
        run = conform(name, quick=args.quick)
        perf = run.to_json()["performance"]
        print(
            f"{name} ({'quick' if args.quick else 'full'}): verdict {run.verdict}, "
            f"wall {perf['wall_seconds']} s "
            f"(start-up {perf['startup_seconds']} s), {perf['generate_calls']} requests, "
            f"{perf['tokens']} tokens: {perf['requests_per_second']} requests/s, "
            f"{perf['tokens_per_second']} tokens/s; harness share {perf['harness_share']}"
        )
        for r in run.results:
            print(f"  {r.name:<22} {r.status:<5} {r.generate_calls:>5} calls {r.seconds:7.1f} s")
        bare = in_process_rate(name, 100)
        mean_tokens = perf["tokens"] / max(perf["generate_calls"], 1)
        print(
            f"  baseline: the bare engine runs {bare:.1f} requests/s ({24 * bare:.0f} tokens/s) of 24 "
            f"tokens in-process; the harness delivers {perf['requests_per_second']} requests/s of "
            f"{mean_tokens:.1f} tokens ({perf['tokens_per_second']} tokens/s, ratio "
            f"{perf['tokens_per_second'] / (24 * bare):.2f}, start-up, baselines and statistics included)"
        )


if __name__ == "__main__":
    main()
