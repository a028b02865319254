"""The mutant catalog: every planted bug, its mechanism, its public source and its layer.

Three layers:

* ``verifier``: the registered control verifiers (:mod:`verispec.verifiers.registry`),
  caught by the exact checker with a shrunk counterexample;
* ``engine``: mutations of the reference engine (:data:`verispec.engines.reference.MUTATIONS`)
  and patches of transformers' assisted generation (:data:`verispec.engines.hf.MUTATIONS`),
  caught by the conformance checks;
* ``index``: the refuted conventions of the SMT catalog (:mod:`verispec.smt.catalog`),
  caught by z3 with a concrete case.

``bug`` is the row number in the reference list of real engine bugs (``engines.md``,
section 3) where the mutant reproduces one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from verispec.errors import UsageError, unknown_name

__all__ = ["ENGINE_SOURCES", "Control", "catalog", "find", "for_engine"]

Layer = Literal["verifier", "engine", "index"]


@dataclass(frozen=True)
class Control:
    name: str  # unique across layers: "<layer>:<subject>"
    layer: Layer
    subject: str  # the verifier, engine mutation or SMT convention entry
    mechanism: str
    source: str
    bug: int | None = None
    engine: str | None = None  # the engine a mutation applies to (engine layer)
    expected: tuple[str, ...] = ()  # the checks declared to catch it (engine layer)

    @property
    def reproduce(self) -> str:
        if self.layer == "verifier":
            return f"verispec prove {self.subject} --explain"
        if self.layer == "index":
            return f"verispec smt {self.subject}"
        checks = "".join(f" --check {c}" for c in self.expected)
        run = f"verispec conform --engine {self.engine} --mutation {self.subject}"
        return f"{run} --quick --design sequential{checks}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "expected": list(self.expected), "reproduce": self.reproduce}


#: Engine mutation -> (row in engines.md section 3, public source).
ENGINE_SOURCES: dict[str, tuple[int | None, str]] = {
    "target-default-params": (1, "vllm-project/vllm #9834 -> PR #10198"),
    "greedy-draft-softmax-q": (2, "huggingface/transformers #32867 -> PR #33534"),
    "softmax-residual": (3, "huggingface/transformers PR #28508"),
    "raw-q-processed-draft": (5, "huggingface/transformers #47932 / PR #47961"),
    "draft-probs-none": (6, "vllm-project/vllm #40149 -> PR #40269"),
    "min-p-verify-ignored": (7, "vllm-project/vllm #42744 -> PR #42802"),
    "always-accept": (9, "vllm-project/vllm-ascend #13730"),
    "reused-uniform": (10, "flashinfer-ai/flashinfer PR #424"),
    "bonus-wrong-row": (11, "NVIDIA/TensorRT-LLM PR #15098; SafeAILab/EAGLE PR #47"),
    "unnormalised-draft": (12, "NVIDIA/TensorRT-LLM #3125 -> PR #3278"),
    "bonus-untruncated": (14, "SafeAILab/EAGLE PR #215"),
    "penalty-ignored": (16, "vllm-project/vllm #18902"),
    "draft-temperature-ignored": (19, "z-lab/dflash #74"),
    "batch-order-by-length": (21, "vllm-project/vllm PR #14645"),
    "crop-no-op": (28, "ml-explore/mlx-lm PR #1109 (#846)"),
    "ragged-shared-offset": (30, "Blaizzy/mlx-vlm PR #1155 (#1144)"),
    "eos-budget-first": (31, "sgl-project/sglang #31599 / PR #31569"),
    "no-eos-crop": (33, "huggingface/transformers #47912"),
    "vocab-overflow": (35, "vllm-project/vllm GHSA-8wr5-jm2h-8r4f"),
    "draft-no-catch-up": (
        40,
        "vllm-project/vllm PR #9730 (draft KV after a bonus token); masks.md pitfall 4",
    ),
    "crop-plus-one": (None, "masks.md pitfall 3: the crop target is L+n, not L+n+1"),
    "top-left-mask": (None, "masks.md: PyTorch SDPA is_causal and FlashAttention < 2.1 on Sq != Sk"),
    "positions-reset": (None, "masks.md section 4: positions must never restart at 0 after a rollback"),
    "resample-target": (None, "seed article, section 3: a fresh target sample instead of the residual"),
    "missing-bonus": (None, "the round contract (verifiers.md section 1): accepted + 1 committed"),
    "unseeded": (None, "vLLM test_deterministic_when_seeded (engines.md section 2)"),
    "tree-sibling-visible": (23, "vllm-project/vllm PR #22226 (tree attention); masks.md tree masks"),
    "tree-depth-mask": (None, "masks.md pitfall 7: an explicit ancestor mask is required"),
    "tree-positions-by-row": (None, "masks.md section 4: a tree node sits at L-1+depth"),
    "tree-no-compaction": (25, "NVIDIA/TensorRT-LLM #10343: one rewind length cannot rewind a tree"),
}


def _engine_controls() -> list[Control]:
    """The reference engine's mutants (``engine:<mutation>``), then the transformers
    adapter's patches (``engine:hf-assisted/<mutation>``)."""
    from verispec.conformance.checks import CHECKS
    from verispec.engines import hf, reference

    def control(name: str, mutation: str, mechanism: str, engine: str) -> Control:
        bug, source = ENGINE_SOURCES[mutation]
        expected = tuple(c.name for c in CHECKS if mutation in c.mutants)
        return Control(name, "engine", mutation, mechanism, source, bug, engine, expected)

    out = [
        control(
            f"engine:{m}", m, mechanism, "reference-tree" if m in reference.TREE_MUTATIONS else "reference"
        )
        for m, mechanism in reference.MUTATIONS.items()
    ]
    out += [control(f"engine:hf-assisted/{m}", m, text, "hf-assisted") for m, text in hf.MUTATIONS.items()]
    return out


def _verifier_controls() -> list[Control]:
    from verispec.verifiers import registry

    return [
        Control(f"verifier:{v.name}", "verifier", v.name, v.summary, v.source)
        for v in registry.verifiers("control")
    ]


def _index_controls() -> list[Control]:
    from verispec.smt.catalog import CATALOG

    return [
        Control(f"index:{e.name}", "index", e.name, e.convention, e.source)
        for e in CATALOG
        if e.expected == "refuted"
    ]


def catalog(layers: tuple[Layer, ...] = ("verifier", "engine", "index")) -> list[Control]:
    """Every control of the given layers, verifier layer first."""
    found: list[Control] = []
    if "verifier" in layers:
        found += _verifier_controls()
    if "engine" in layers:
        found += _engine_controls()
    if "index" in layers:
        found += _index_controls()
    return found


def for_engine(controls: list[Control], engine: str | None) -> list[Control]:
    """``controls`` with only the engine controls of ``engine`` (all of them for ``None``)."""
    if engine is None:
        return controls
    engines = sorted({c.engine or "" for c in controls if c.layer == "engine"})
    if engine not in engines:
        raise UsageError(f"engine={engine!r} has no controls; engine controls exist for {engines}")
    return [c for c in controls if c.layer != "engine" or c.engine == engine]


def find(name: str) -> Control:
    """A control by its full name (``engine:crop-plus-one``) or by its subject alone."""
    controls = catalog()
    by_name = {c.name: c for c in controls}
    if name in by_name:
        return by_name[name]
    matches = [c for c in controls if c.subject == name]
    if len(matches) == 1:
        return matches[0]
    raise unknown_name("control", name, by_name)
