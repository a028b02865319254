"""ONNX Runtime GenAI through onnxruntime-genai: the float32 ONNX models its builder writes,
the adapter's rounds, seeds and end-of-sequence handling, and the engine's refusals.

All of it is marked ``ort_genai`` and runs where ``verispec[onnxruntime-genai]`` is installed
(CI's ONNX Runtime stage). The conformance run of the built-in engine is in
``test_conformance.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.engines.protocol import Request, RoundStat, Sampling
from verispec.errors import UsageError

pytestmark = [pytest.mark.torch, pytest.mark.ort_genai]
#: a prompt that repeats itself, so that n-gram lookup finds drafts in it
PROMPT = (0, 5, 6, 7, 5, 6, 7, 5, 6)


class TestRoundsFromCounters:
    def test_a_round_commits_its_accepted_drafts_and_one_more(self) -> None:
        from verispec.engines.ort_genai_engines import rounds_from_counters

        steps = [
            (10, {"rounds": 1, "draft_tokens_proposed": 3, "draft_tokens_accepted": 2}),
            (11, {"rounds": 0}),
            (12, {"rounds": 0}),
            (13, {"rounds": 0}),  # a plain step: no round
            (14, {"rounds": 1, "draft_tokens_proposed": 2, "draft_tokens_accepted": 2}),
            (15, {"rounds": 0}),
        ]
        rounds = rounds_from_counters(steps, 6)
        assert rounds == [RoundStat(10, 2, 3, proposed=3), RoundStat(14, 2, 2, proposed=2)]
        assert rounds[0].rejected and not rounds[1].rejected  # the second was cut by the request's end

    def test_a_round_the_engine_ended_at_its_end_of_sequence_id_is_marked(self) -> None:
        """The engine accepted three drafts, the first of them its end-of-sequence id: it ended
        its request after one token and the adapter resumed it there."""
        from verispec.engines.ort_genai_engines import rounds_from_counters

        steps = [
            (10, {"rounds": 1, "draft_tokens_proposed": 3, "draft_tokens_accepted": 3}),
            (11, {"rounds": 1, "draft_tokens_proposed": 3, "draft_tokens_accepted": 0}),
        ]
        rounds = rounds_from_counters(steps, 2, resumed=[11])
        assert rounds == [RoundStat(10, 1, 1, proposed=3, ended=True), RoundStat(11, 0, 1, proposed=3)]


@pytest.fixture(scope="module")
def ngram(tmp_path_factory) -> Any:
    pytest.importorskip("onnxruntime_genai")
    import os

    os.environ.setdefault("VERISPEC_CACHE", str(tmp_path_factory.mktemp("cache")))
    from verispec.engines import registry

    return registry.get("ortgenai-ngram").make(size="ci-wide")


class TestModels:
    def test_the_builder_writes_float32_weights_and_cache(self, ngram) -> None:
        from verispec.engines.onnx_files import onnx_pair

        target, draft = onnx_pair("ci-wide")
        config = json.loads((target / "genai_config.json").read_text())["model"]
        assert config["vocab_size"] == 24 and config["decoder"]["head_size"] == 32
        import onnx

        model = onnx.load(str(target / "model.onnx"), load_external_data=False)
        kv = [i for i in model.graph.input if i.name.startswith("past_key_values")]
        assert kv and {i.type.tensor_type.elem_type for i in kv} == {onnx.TensorProto.FLOAT}
        assert onnx_pair("ci-wide") == (target, draft)  # written once

    def test_heads_the_cpu_attention_refuses_are_refused_before_the_builder_runs(self, ngram) -> None:
        from verispec.engines.onnx_files import onnx_pair

        with pytest.raises(UsageError, match=r"8-wide attention heads.*multiples of 16"):
            onnx_pair("ci")

    def test_a_failed_conversion_gives_the_builders_own_reason(self, tmp_path, ngram) -> None:
        from verispec.engines.onnx_files import build_onnx

        (tmp_path / "ckpt").mkdir()
        config = {"model_type": "llama", "vocab_size": 8, "hidden_size": 32, "num_attention_heads": 2}
        (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config))
        with pytest.raises(UsageError, match="builder could not convert"):
            build_onnx(tmp_path / "ckpt", tmp_path / "out")


class TestEngine:
    def test_the_baseline_is_the_engines_model(self, ngram) -> None:
        assert ngram.baseline_gap < 1e-4
        assert ngram.logit_noise < 1e-4

    def test_a_seed_gives_the_same_tokens_with_and_without_speculation(self, ngram) -> None:
        prompt = PROMPT
        for seed, sampling in enumerate((Sampling(1.0), Sampling(0.7, top_k=5), Sampling(1.0, top_p=0.8))):
            spec = ngram.generate([Request(prompt, 24, sampling, seed=seed)])[0]
            plain = ngram.generate([Request(prompt, 24, sampling, seed=seed, speculative=False)])[0]
            assert spec.tokens == plain.tokens and plain.rounds is None
            assert spec.rounds and sum(r.committed for r in spec.rounds) <= len(spec.tokens)

    def test_the_end_of_sequence_id_is_a_token_unless_the_request_stops_there(self, ngram) -> None:
        """The generator stops at the model's end-of-sequence id (1 here); the protocol's
        requests go on past it unless they name it, with the same tokens on both paths."""
        prompt = PROMPT
        seen = 0
        for seed in range(40):
            request = Request(prompt, 24, Sampling(1.5), seed=seed)
            tokens = ngram.generate([request])[0].tokens
            assert len(tokens) == 24
            if 1 in tokens[:-1]:
                seen += 1
                stop = ngram.generate([Request(prompt, 24, Sampling(1.5), seed=seed, stop_ids=(1,))])[0]
                assert stop.finish_reason == "stop" and stop.tokens == tokens[: tokens.index(1) + 1]
        assert seen  # the case was exercised

    def test_settings_the_engine_cannot_take_are_refused_with_the_reason(self, ngram) -> None:
        prompt = PROMPT
        for sampling, name in (
            (Sampling(1.0, min_p=0.1), "min_p"),
            (Sampling(1.0, frequency_penalty=0.5), "frequency"),
        ):
            with pytest.raises(UsageError, match=f"does not take {name}"):
                ngram.generate([Request(prompt, 4, sampling)])


@pytest.fixture(scope="module")
def draft(ngram) -> Any:
    from verispec.engines import registry

    return registry.get("ortgenai-draft").make(size="ci-wide")


class TestDraftModel:
    def test_greedy_speculation_gives_the_plain_output_and_rounds_add_up(self, draft) -> None:
        spec = draft.generate([Request(PROMPT, 24, Sampling(0.0))])[0]
        plain = draft.generate([Request(PROMPT, 24, Sampling(0.0), speculative=False)])[0]
        assert spec.tokens == plain.tokens
        assert spec.rounds and all(r.committed == r.accepted + 1 for r in spec.rounds[:-1])
        assert sum(r.committed for r in spec.rounds) == len(spec.tokens)

    def test_the_draft_model_is_the_baselines_draft(self, draft) -> None:
        assert draft.draft_gap is not None and draft.draft_gap < 1e-4
        assert draft.baseline_gap < 1e-4
