"""vLLM's speculative methods through its CPU build (skipped where the extra is not installed).

What the quick suite finds on vLLM 0.32 is in docs/audits/vllm.md; these tests pin the two
facts the adapter relies on: the ``cpu-expand`` fix expands per-request settings to per-token
ones; with it every vLLM engine passes (``test_builtin_engines_pass`` in test_conformance.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.vllm


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")  # inside vLLM's imports
def test_the_cpu_expand_fix_writes_each_requests_value_to_its_tokens() -> None:
    from verispec.engines.vllm_engines import fix_cpu_expand

    fix_cpu_expand()
    from vllm.platforms import current_platform
    from vllm.v1.sample.rejection_sampler import expand_batch_to_tokens

    current_platform.register_triton_kernel_overrides()
    ends = torch.tensor([3, 6], dtype=torch.int32)
    assert expand_batch_to_tokens(torch.tensor([0.5, 0.7]), ends, 6).tolist() == pytest.approx(
        [0.5, 0.5, 0.5, 0.7, 0.7, 0.7]
    )
    assert expand_batch_to_tokens(torch.tensor([0.0, 0.7]), torch.tensor([1, 3]), 3, 0, 1).tolist() == (
        pytest.approx([1.0, 0.7, 0.7])
    )
