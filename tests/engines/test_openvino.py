"""OpenVINO GenAI through openvino-genai: the float32 models verispec writes on OpenVINO's
operation set, the adapter's batches, rounds and seeds, and the findings of
docs/audits/openvino.md.

All of it is marked ``openvino`` and runs where ``verispec[openvino]`` is installed (CI's
OpenVINO stage). The conformance runs of the built-in engines are in ``test_conformance.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.engines.protocol import Request, Sampling
from verispec.errors import UsageError

pytestmark = [pytest.mark.torch, pytest.mark.openvino]
#: a prompt that repeats itself, so that prompt lookup finds candidates in it
PROMPT = (0, 5, 6, 7, 5, 6, 7, 5, 6)
FIX = ("no-prefix-caching",)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Any:
    pytest.importorskip("openvino_genai")
    import os

    os.environ.setdefault("VERISPEC_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def lookup(cache) -> Any:
    from verispec.engines import registry

    return registry.get("openvino-lookup").make(size="ci", fixes=FIX)


@pytest.fixture(scope="module")
def draft(cache) -> Any:
    from verispec.engines import registry

    return registry.get("openvino-draft").make(size="ci", fixes=FIX)


def _generate(engine: Any, requests: list[Request]) -> list[list[int]]:
    return [c.tokens for c in engine.generate(requests)]


class TestModels:
    def test_the_written_model_is_the_baselines_at_float32(self, lookup, draft) -> None:
        import xml.etree.ElementTree as ET

        from verispec.engines.openvino_files import openvino_pair

        assert lookup.baseline_gap < 1e-4 and draft.draft_gap is not None and draft.draft_gap < 1e-4
        target, _ = openvino_pair("ci")
        types = {
            port.get("precision")
            for layer in ET.parse(target / "openvino_model.xml").getroot().iter("layer")
            if layer.get("type") == "Const"
            for port in layer.iter("port")
        }
        assert "FP16" not in types and "FP32" in types  # no weight compressed to half precision

    def test_a_model_that_is_not_a_llama_is_refused_by_name(self, cache, tmp_path) -> None:
        import transformers

        from verispec.engines.openvino_files import write_llama_openvino

        config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=16)
        with pytest.raises(UsageError, match="model_type='gpt2'"):
            write_llama_openvino(transformers.GPT2LMHeadModel(config), tmp_path / "x")

    def test_an_unknown_fix_is_named(self, cache) -> None:
        from verispec.engines import registry

        with pytest.raises(UsageError, match="fix='nope' is not one of no-prefix-caching"):
            registry.get("openvino-lookup").make(size="ci", fixes=["nope"])


class TestEngine:
    def test_a_seed_gives_the_same_tokens_with_and_without_prompt_lookup(self, lookup) -> None:
        for seed, sampling in enumerate((Sampling(1.0), Sampling(0.7, top_k=5), Sampling(1.0, top_p=0.8))):
            spec = lookup.generate([Request(PROMPT, 24, sampling, seed=seed)])[0]
            plain = lookup.generate([Request(PROMPT, 24, sampling, seed=seed, speculative=False)])[0]
            assert spec.tokens == plain.tokens and plain.rounds is None
            assert spec.token_times is not None and len(spec.token_times) == len(spec.tokens)

    def test_a_batch_gives_each_row_what_it_gives_alone(self, lookup) -> None:
        requests = [Request(PROMPT[: 4 + i], 6 + 3 * i, Sampling(0.9), seed=i) for i in range(4)]
        alone = [_generate(lookup, [r])[0] for r in requests]
        assert _generate(lookup, requests) == alone
        assert [len(t) for t in alone] == [6, 9, 12, 15]

    def test_a_stop_id_ends_the_request_with_it(self, lookup) -> None:
        tokens = _generate(lookup, [Request(PROMPT, 24, Sampling(0.0))])[0]
        stop = tokens[5]
        out = lookup.generate([Request(PROMPT, 24, Sampling(0.0), stop_ids=(stop,))])[0]
        assert out.finish_reason == "stop" and out.tokens == tokens[: tokens.index(stop) + 1]

    def test_settings_the_engine_cannot_take_are_refused_with_the_reason(self, lookup) -> None:
        for sampling, name in (
            (Sampling(1.0, min_p=0.1), "min_p"),
            (Sampling(1.0, presence_penalty=0.5), "presence"),
        ):
            with pytest.raises(UsageError, match=f"does not take {name}"):
                lookup.generate([Request(PROMPT, 4, sampling)])

    def test_draft_rounds_commit_their_accepted_drafts_and_one_more(self, draft) -> None:
        spec = draft.generate([Request(PROMPT, 24, Sampling(0.0))])[0]
        plain = draft.generate([Request(PROMPT, 24, Sampling(0.0), speculative=False)])[0]
        assert spec.tokens == plain.tokens
        assert spec.rounds and all(r.committed == r.accepted + 1 for r in spec.rounds)
        assert 1 + sum(r.committed for r in spec.rounds) == len(
            spec.tokens
        )  # the first token is the prompt's


class TestFindings:
    """The reductions of docs/audits/openvino.md: each test shows the engine bug as it is in
    openvino-genai 2026.4.1 (and fails once the bug is fixed, so the page is revisited)."""

    def test_finding_1_a_draft_token_the_target_forbids_is_accepted(self, draft) -> None:
        """Sampled at top-k 1 the target can emit one token per position, so its output is its
        greedy path; with the draft model the output takes a token that top-1 forbids (the
        draft's own), because acceptance compares the draft's probability of its token with
        the target's probability of the target's token, never the target's of the draft's."""
        prompt = (0, 9, 4, 13, 7)
        plain = _generate(draft, [Request(prompt, 16, Sampling(1.0, top_k=1), seed=1, speculative=False)])[0]
        greedy = _generate(draft, [Request(prompt, 16, Sampling(0.0))])[0]
        assert plain == greedy  # top-k 1: the target's only token at each step
        spec = _generate(draft, [Request(prompt, 16, Sampling(1.0, top_k=1), seed=1)])[0]
        assert spec != greedy
        import numpy as np

        part = next(i for i, (a, b) in enumerate(zip(spec, greedy, strict=True)) if a != b)
        law = np.asarray(draft.target_logits_along(prompt, [*spec[:part], 0]))[-1]
        assert int(law.argmax()) == greedy[part] != spec[part]  # outside the target's top-1

    def test_finding_1_reaches_the_first_token_of_a_prompt_the_scheduler_defers(self, draft) -> None:
        """The scheduler prefills at most 256 tokens a step. A prompt it defers is prefilled by
        the draft pipeline first, which samples its own first token; the main pipeline takes it
        as a candidate and verifies it by finding 1's rule, so the first token leaves the
        target's law. Eight prompts of 100 tokens at top-k 1: the first two fit the first step
        and keep the target's only token, a later one takes another; alone, none moves."""
        import numpy as np

        rng = np.random.default_rng(0)
        prompts = [(0, *map(int, rng.integers(3, draft.vocab_size, 99))) for _ in range(8)]
        top1 = Sampling(1.0, top_k=1)
        plain = [
            t[0]
            for t in _generate(
                draft, [Request(p, 4, top1, seed=i, speculative=False) for i, p in enumerate(prompts)]
            )
        ]
        together = [
            t[0] for t in _generate(draft, [Request(p, 4, top1, seed=i) for i, p in enumerate(prompts)])
        ]
        alone = [_generate(draft, [Request(p, 4, top1, seed=i)])[0][0] for i, p in enumerate(prompts)]
        moved = [i for i in range(8) if together[i] != plain[i]]
        assert alone == plain
        assert moved and min(moved) >= 2  # the first two prompts (200 tokens) fit the first step
        for i in moved:  # outside the target's top-1
            assert (
                int(np.asarray(draft.target_logits_along(prompts[i][:-1], [prompts[i][-1], 0]))[-1].argmax())
                == plain[i]
            )

    def test_finding_2_after_a_rejected_last_draft_a_seeded_request_does_not_repeat(self, cache) -> None:
        """With one draft per round every rejection is of the last candidate: the sampler
        records one token fewer than it removed, the next step reads a token id past the end
        of the sequence (leftover memory), and the same request and seed give other tokens."""
        from verispec.engines import registry

        one = registry.get("openvino-draft").make(size="ci", gamma=1, fixes=FIX)
        request = Request((0, 9, 4, 13, 7), 24, Sampling(1.0), seed=0)
        outputs = {tuple(_generate(one, [request])[0]) for _ in range(6)}
        assert len(outputs) > 1  # plain sampling and prompt lookup repeat (TestEngine, determinism)

    def test_finding_3_prefix_caching_fails_a_sampled_speculative_request(self, cache) -> None:
        from verispec.engines import registry

        engine = registry.get("openvino-draft").make(size="ci")  # the default scheduler
        with pytest.raises(RuntimeError, match=r"content_length <= prompt_ids.size\(\)"):
            for seed in range(8):
                engine.generate([Request(PROMPT, 16, Sampling(1.0), seed=seed)])
