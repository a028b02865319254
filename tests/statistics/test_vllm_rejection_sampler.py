"""vLLM's v1 rejection sampler (its CPU C++ kernels) audited through
``conformance/vllm_rejection_sampler.py`` (docs/audits/vllm.md, finding 6).

The boundary runs are deterministic: with the float64 uniform pinned at 0, vLLM's
``target_prob / draft_prob >= uniform`` keeps a draft of target probability 0, with and
without draft probabilities. The sampled audit runs the battery at a coarser resolution than
the documented run (TV 0.1), one statistical test at the suite's per-test false-alarm rate.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("vllm")

from verispec.audits.runner import audit, boundary_audit
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.verdicts import RunVerdict

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = "conformance.vllm_rejection_sampler"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize("function", ["verify", "verify_no_draft_probs"])
def test_a_zero_uniform_keeps_a_draft_of_target_probability_zero(function: str) -> None:
    result = boundary_audit(f"{ADAPTER}:{function}")
    assert result.verdict == RunVerdict.FAIL, result.reason
    assert result.per_draw_probability == 2.0**-53  # vLLM draws its uniforms in float64
    assert all(f["boundary"] in {"zero", "ratio"} for f in result.findings)
    assert any(f["boundary"] == "zero" and f["accepted_draft"] for f in result.findings)
    # the recovered and bonus tokens come from an exponential race, left to the generator
    assert result.unpinned.get("Tensor.exponential_", 0) > 0


@pytest.mark.statistical
def test_greedy_and_random_requests_in_one_batch_keep_the_law() -> None:
    result = audit(f"{ADAPTER}:verify_mixed", kind="chain", alpha=PER_TEST_ALPHA, tv=0.1)
    assert result.verdict == RunVerdict.PASS, [(r.name, r.pvalue, r.error) for r in result.instances]
