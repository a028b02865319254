"""llama.cpp through llama-cpp-python: the float32 GGUF files, the adapter's rounds and seeds,
the engine's sampling order, and the findings of docs/audits/llama-cpp.md.

All of it is marked ``llama_cpp`` and runs where ``verispec[llama-cpp]`` is installed (CI's
llama.cpp stage). The conformance runs of both built-in
llama.cpp engines, and the catching of their planted bugs, are in ``test_conformance.py``.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.engines.protocol import Request, Sampling

pytestmark = pytest.mark.torch


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Any:
    monkeypatch.setenv("VERISPEC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.llama_cpp  # needs gguf, which the llama-cpp extra installs
class TestGGUFFiles:
    def test_the_rotary_permutation_interleaves_each_heads_halves(self) -> None:
        import numpy as np

        from verispec.engines.gguf_files import permute_rotary

        rows = np.arange(2 * 8).reshape(16, 1)  # two heads of dimension 8
        out = permute_rotary(rows, 2).ravel().tolist()
        assert out == [0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15]

    def test_a_tiny_pair_is_written_once_at_float32(self, cache) -> None:
        pytest.importorskip("gguf")
        import gguf

        from verispec.engines.gguf_files import gguf_pair, read_llama_gguf_config

        target, draft = gguf_pair("ci", seed=0)
        assert target.is_file() and draft.is_file()
        stamp = target.stat().st_mtime_ns
        assert gguf_pair("ci", seed=0) == (target, draft) and target.stat().st_mtime_ns == stamp
        config = read_llama_gguf_config(target)
        assert config["general.architecture"] == "llama"
        assert config["llama.block_count"] == 2 and config["llama.vocab_size"] == 24
        assert config["llama.rope.dimension_count"] == 8
        reader = gguf.GGUFReader(str(target))
        assert {t.tensor_type for t in reader.tensors} == {gguf.GGMLQuantizationType.F32}
        assert len(reader.tensors) == 3 + 2 * 9  # embeddings, final norm, head; 9 per layer

    def test_a_model_that_is_not_a_llama_is_refused_by_name(self, tmp_path) -> None:
        pytest.importorskip("gguf")
        import transformers

        from verispec.engines.gguf_files import write_llama_gguf
        from verispec.errors import UsageError

        config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=16)
        with pytest.raises(UsageError, match="model_type='gpt2'"):
            write_llama_gguf(transformers.GPT2LMHeadModel(config), tmp_path / "x.gguf")


@pytest.fixture(scope="module")
def lookup(tmp_path_factory) -> Any:
    pytest.importorskip("llama_cpp")
    import os

    os.environ.setdefault("VERISPEC_CACHE", str(tmp_path_factory.mktemp("cache")))
    from verispec.engines import registry

    return registry.get("llamacpp-lookup").make(size="ci")


@pytest.fixture(scope="module")
def scripted(tmp_path_factory) -> Any:
    pytest.importorskip("llama_cpp")
    from verispec.engines import registry

    return registry.get("llamacpp-scripted").make(size="ci")


#: a prompt that repeats, so prompt lookup has something to copy
REPEATING = (3, 4, 5, 6, 3, 4, 5, 6, 3, 4)


@pytest.mark.llama_cpp
class TestEngine:
    def test_the_baseline_is_llama_cpps_model(self, lookup) -> None:
        """The engine refuses to start unless llama.cpp's logits match the transformers
        baseline on a probe; the gap it measured is in its notes."""
        assert lookup.baseline_gap <= 1e-3
        assert "largest logit gap" in lookup.notes[0]
        assert lookup.sampling_order == "truncation-first"

    def test_greedy_output_equals_the_plain_path_and_rounds_add_up(self, lookup) -> None:
        spec = lookup.generate([Request(REPEATING, 24, Sampling(0.0))])[0]
        plain = lookup.generate([Request(REPEATING, 24, Sampling(0.0), speculative=False)])[0]
        assert spec.tokens == plain.tokens and plain.rounds is None
        assert spec.rounds, "prompt lookup proposed nothing on a repeating prompt"
        for r in spec.rounds:
            assert r.committed == r.accepted + 1 or r is spec.rounds[-1]
            assert 0 < len(r.drafts) <= lookup.gamma

    def test_a_seed_gives_the_same_tokens_with_and_without_speculation(self, lookup) -> None:
        for seed in (1, 2, 3):
            request = Request(REPEATING, 32, Sampling(1.0), seed=seed)
            spec = lookup.generate([request])[0]
            plain = lookup.generate([Request(REPEATING, 32, Sampling(1.0), seed=seed, speculative=False)])[0]
            assert spec.tokens == plain.tokens
            assert lookup.generate([request])[0].tokens == spec.tokens

    def test_a_stop_id_ends_the_request_with_it(self, lookup) -> None:
        free = lookup.generate([Request(REPEATING, 24, Sampling(0.0))])[0]
        stop = free.tokens[5]
        first = free.tokens.index(stop)
        out = lookup.generate([Request(REPEATING, 24, Sampling(0.0), stop_ids=(stop,))])[0]
        assert out.tokens == free.tokens[: first + 1] and out.finish_reason == "stop"

    def test_the_repetition_penalty_is_refused_with_the_reason(self, lookup) -> None:
        from verispec.errors import UsageError

        with pytest.raises(UsageError, match=r"repetition_penalty: .*prompt"):
            lookup.generate([Request(REPEATING, 4, Sampling(1.0, repetition_penalty=1.3))])

    def test_a_scripted_rejection_falls_at_or_before_its_position(self, scripted) -> None:
        sampling = Sampling(1.0, top_k=4)
        for position in (0, 1, 2):
            script = {"kind": "forced-rejection", "position": position}
            out = scripted.generate([Request((3, 4, 5), 16, sampling, seed=position, script=script)])[0]
            assert out.rounds
            assert all(r.accepted <= position and len(r.drafts) == position + 1 for r in out.rounds)
            assert any(r.accepted == position for r in out.rounds)


@pytest.fixture(scope="module")
def target_gguf(lookup) -> Any:
    from verispec.engines.gguf_files import gguf_pair

    return str(gguf_pair("ci", seed=0)[0])


#: a greedy request of the findings' reproductions
GREEDY = {"temp": 0.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}


def _generate(llm: Any, prompt: Any, n: int, **kwargs: Any) -> list[int]:
    return [int(t) for _, t in zip(range(n), llm.generate(list(prompt), **GREEDY, **kwargs), strict=False)]


@pytest.mark.llama_cpp
class TestFindings:
    """The llama-cpp-python 0.3.36 behaviours docs/audits/llama-cpp.md reports, reproduced on
    the ``ci`` target: if a release changes one, its test says so and the page is updated."""

    def test_finding_1_a_draft_model_without_logits_all_overflows_past_n_batch(self, target_gguf) -> None:
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        llm = Llama(
            model_path=target_gguf,
            n_ctx=256,
            n_batch=16,
            draft_model=LlamaPromptLookupDecoding(),
            verbose=False,
        )
        with pytest.raises(ValueError, match="could not broadcast"):
            _generate(llm, REPEATING * 2, 4)  # 20 prompt tokens, over n_batch
        fixed = Llama(
            model_path=target_gguf, n_ctx=256, n_batch=16, logits_all=True,
            draft_model=LlamaPromptLookupDecoding(), verbose=False,
        )  # fmt: skip
        assert len(_generate(fixed, REPEATING * 2, 4)) == 4

    def test_finding_2_logits_processors_see_uncommitted_drafts(self, target_gguf) -> None:
        import numpy as np
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        def run(draft: Any) -> tuple[list[int], list[int]]:
            llm = Llama(model_path=target_gguf, n_ctx=256, logits_all=True, draft_model=draft, verbose=False)
            lengths: list[int] = []

            def no_immediate_repeat(ids: Any, logits: Any) -> Any:
                lengths.append(len(ids))
                out = logits.copy()
                out[ids[-1]] = -np.inf
                return out

            return _generate(llm, REPEATING, 12, logits_processor=[no_immediate_repeat]), lengths

        plain, plain_lengths = run(None)
        spec, spec_lengths = run(LlamaPromptLookupDecoding(num_pred_tokens=3))
        assert plain_lengths[:12] == list(range(10, 22))  # the committed history, one longer each time
        assert spec_lengths[:12] != list(range(10, 22))  # the verify batch's drafts are counted
        assert all(a != b for a, b in itertools.pairwise(plain))
        assert spec != plain and any(a == b for a, b in itertools.pairwise(spec))

    def test_finding_3_stopping_criteria_get_the_first_rows_logits(self, target_gguf) -> None:
        import numpy as np
        from llama_cpp import Llama, StoppingCriteriaList

        llm = Llama(model_path=target_gguf, n_ctx=256, logits_all=True, verbose=False)
        handed: list[bool] = []

        def criterion(ids: Any, logits: Any) -> bool:
            handed.append(bool(np.array_equal(logits, llm.scores[0])))
            return False

        _generate(llm, (3, 4, 5, 6, 7), 3, stopping_criteria=StoppingCriteriaList([criterion]))
        assert handed == [True, True, True]  # row 0, not the row each token was sampled from
