"""vLLM's speculative methods through its CPU build (skipped where the extra is not installed).

What the suite finds on vLLM 0.32 is in docs/audits/vllm.md; these tests pin the facts the
adapter relies on: the ``cpu-expand`` fix expands per-request settings to per-token ones (with
it every vLLM engine passes: ``test_builtin_engines_pass`` in test_conformance.py), and the
rounds recorded from vLLM's scheduler follow each output and are held to vLLM's counters.
"""

from __future__ import annotations

import itertools

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


@pytest.fixture(scope="module")
def draft_engine():
    from verispec.engines.vllm_engines import make_vllm

    return make_vllm(variant="vllm-draft", size="ci-wide", fixes=("cpu-expand",))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_rounds_recorded_from_the_scheduler_chain_through_each_output(draft_engine) -> None:
    """A draft model drafts on every step after the prefill one, so a request's rounds start
    right after its first token and each starts where the one before committed; their sums
    agree with vLLM's counters (generate raises otherwise)."""
    from verispec.engines.protocol import Request, Sampling

    requests = [Request((3, 5, 7, 9 + i), 16, Sampling(1.0), seed=i) for i in range(4)]
    for request, completion in zip(requests, draft_engine.generate(requests), strict=True):
        rounds = completion.rounds
        assert rounds, "no rounds recorded"
        assert rounds[0].start == len(request.prompt) + 1
        for before, after in itertools.pairwise(rounds):
            assert after.start == before.start + before.committed
        for r in rounds:
            assert r.committed == r.accepted + 1 and 1 <= len(r.drafts) <= draft_engine.gamma
        assert rounds[-1].start - len(request.prompt) < len(completion.tokens)


def test_rounds_that_disagree_with_vllms_counters_are_an_error(draft_engine) -> None:
    from verispec.engines.protocol import Completion, RoundStat

    fake = [Completion([1, 2, 3], "length", rounds=[RoundStat(5, 1, 2, (4, 6, 8))])]
    with pytest.raises(RuntimeError, match="do not add up to vLLM's spec-decode counters"):
        draft_engine._check_counters(draft_engine.counters(), fake)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_non_speculative_requests_run_on_a_plain_vllm_engine_beside_the_speculative_one(draft_engine) -> None:
    """One call with both kinds of request: the plain ones on vLLM's own non-speculative engine
    (no rounds, no drafts counted), the speculative ones as before; every token comes with the
    time it left vLLM's engine, and greedy decoding gives the same tokens on both."""
    from verispec.engines.protocol import Request, Sampling

    before = draft_engine.counters()
    requests = [
        Request((3, 5, 7, 9), 12, Sampling(0.0), seed=0, speculative=speculative)
        for speculative in (True, False, True, False)
    ]
    spec, plain, *_ = completions = draft_engine.generate(requests)
    assert spec.tokens == plain.tokens  # greedy: speculation on or off, the same text
    assert spec.rounds and plain.rounds is None
    for c in completions:
        assert len(c.token_times) == len(c.tokens) == 12
        assert all(0 <= a <= b for a, b in itertools.pairwise(c.token_times))
    after = draft_engine.counters()
    assert after["num_drafts"] - before["num_drafts"] == sum(len(c.rounds or []) for c in completions)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_serve_measures_vllm_prompt_lookup_against_vllm_without_speculation(tmp_path, capsys) -> None:
    """End to end in the engine worker: the n-gram engine (which loads numba, after which vLLM's
    CPU build cannot register its kernels again: finding 7) starts its plain twin, and the
    report has both arms' streams and the rounds vLLM's scheduler verified."""
    import json

    from verispec.cli import main

    args = ["serve", "--engine", "vllm-ngram", "--fix", "cpu-expand", "--requests", "2", "--tuning", "1"]
    assert main([*args, "--max-new-tokens", "12", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    record = data["draft_lengths"][0]
    assert data["name"] == "vllm-ngram+fix[cpu-expand]"
    for arm in ("speculative", "baseline"):
        assert record["test"]["all"][arm]["stream"]["time_to_first_token_p50_s"] > 0
    assert record["rounds"]["rounds"] > 0 and "source" not in record["rounds"]
    assert record["concurrent"]["baseline"]["latency_p95_s"] > 0
