"""The reference engine: same logits as transformers, proved index functions, planted bugs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.engines import registry  # noqa: E402
from verispec.engines.protocol import Request, Sampling  # noqa: E402
from verispec.engines.reference import Hooks, ReferenceEngine, planted_hooks, with_hooks  # noqa: E402
from verispec.engines.tiny import tiny_pair  # noqa: E402
from verispec.engines.torchlm import TorchLM  # noqa: E402
from verispec.errors import UsageError  # noqa: E402

pytestmark = pytest.mark.torch


def plant(engine: str, mutations: list[str]) -> Hooks:
    """The reference engine's hooks with the planted bugs ``mutations`` (what its factory does)."""
    return planted_hooks(registry.planted(engine, mutations))


#: fp32 logits of two implementations of the same network differ by reduction order only;
#: observed about 4e-6, the tolerance leaves a factor of 25.
LOGIT_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("ci", seed=0)


class TestTorchLM:
    @pytest.mark.parametrize("page_size", [None, 1, 3, 4])
    def test_logits_match_a_plain_transformers_forward(self, pair, page_size) -> None:
        lm = TorchLM(pair.target)
        ids = torch.tensor([3, 5, 7, 9, 11, 2, 4, 8])
        with torch.no_grad():
            reference = pair.target(ids[None]).logits[0].float()
        cache = lm.new_cache(32, page_size)
        # a prefill, then a verify pass of four tokens on top of it
        out = torch.cat([lm.causal_forward(ids[:4], cache), lm.causal_forward(ids[4:], cache)])
        assert (out - reference).abs().max().item() < LOGIT_TOLERANCE

    def test_crop_then_rewrite_is_recomputation(self, pair) -> None:
        lm = TorchLM(pair.target)
        ids = torch.tensor([3, 5, 7, 9, 11, 2])
        cache = lm.new_cache(32, 2)
        lm.causal_forward(torch.tensor([3, 5, 7, 13, 14, 15]), cache)  # three tokens to be rejected
        cache.crop(3)
        out = lm.causal_forward(ids[3:], cache)
        with torch.no_grad():
            reference = pair.target(ids[None]).logits[0, 3:].float()
        assert (out - reference).abs().max().item() < LOGIT_TOLERANCE

    @pytest.mark.parametrize("page_size", [None, 3])
    def test_tree_pass_and_compaction_match_a_plain_forward(self, pair, page_size) -> None:
        """A tree verify pass gives each node the logits of its own path, and compacting an
        accepted path leaves a cache that continues exactly like a plain forward."""
        lm = TorchLM(pair.target)
        prompt = [3, 5, 7, 9]
        tokens, parents = [9, 4, 6, 8, 10, 12], [-1, 0, 0, 1, 1, 2]  # root 9; 4 -> (8, 10); 6 -> 12
        cache = lm.new_cache(32, page_size)
        lm.causal_forward(torch.tensor(prompt[:-1]), cache)
        logits = lm.tree_forward(torch.tensor(tokens), parents, cache)
        paths = {0: [], 1: [4], 2: [6], 3: [4, 8], 4: [4, 10], 5: [6, 12]}
        with torch.no_grad():
            for node, path in paths.items():
                plain = pair.target(torch.tensor([prompt + path])).logits[0, -1].float()
                assert (logits[node] - plain).abs().max().item() < LOGIT_TOLERANCE
        L = len(prompt)
        from verispec.smt import index as ix

        for j, row in enumerate([0, 1, 4]):  # accept 4 then 10
            src, dst = ix.compaction_plan(j, row, L)
            cache.move(src, dst)
        cache.crop(ix.target_crop_length(L, 2))
        out = lm.causal_forward(torch.tensor([2]), cache)  # the next pending token
        with torch.no_grad():
            plain = pair.target(torch.tensor([[*prompt, 4, 10, 2]])).logits[0, -1].float()
        assert (out[-1] - plain).abs().max().item() < LOGIT_TOLERANCE

    @pytest.mark.parametrize("page_size", [None, 3])
    def test_a_ragged_batch_pass_equals_each_row_alone(self, pair, page_size) -> None:
        """Rows of different lengths (one of them idle), a crop in one row, then a second
        ragged pass: every row's logits are those of the row run on its own cache."""
        lm = TorchLM(pair.target)
        first = [[5, 6, 7], [8, 9, 10, 11, 12, 13], [4], [20, 21]]
        second = [[1, 2], [], [3, 4, 5], [6]]
        batch = lm.new_batch_cache(4, 32, page_size)
        alone = [lm.new_cache(32, page_size) for _ in first]
        with torch.no_grad():
            outs = lm.batch_causal_forward(first, batch)
            for tokens, cache, out in zip(first, alone, outs, strict=True):
                single = lm.causal_forward(torch.tensor(tokens), cache)
                assert (single - out).abs().max().item() < LOGIT_TOLERANCE
            batch.crop(0, 2)
            alone[0].crop(2)
            outs = lm.batch_causal_forward(second, batch)
            for tokens, cache, out in zip(second, alone, outs, strict=True):
                if tokens:
                    single = lm.causal_forward(torch.tensor(tokens), cache)
                    assert (single - out).abs().max().item() < LOGIT_TOLERANCE
                else:
                    assert out.shape[0] == 0
        assert batch.lengths == [c.length for c in alone] == [4, 6, 4, 3]


PROMPTS = [(5, 6, 7), (8, 9, 10, 11, 12, 13), (4, 9), (20, 21, 3, 11), (22,), (7, 7, 7, 7, 7, 7, 7)]


class TestReferenceEngine:
    @pytest.mark.parametrize("temperature", [0.0, 1.0])
    def test_a_batch_gives_each_request_its_own_tokens(self, pair, temperature) -> None:
        engine = ReferenceEngine(pair.target, pair.draft, max_batch=4)  # two batches: 4 + 2 rows
        requests = [Request(p, 20, Sampling(temperature), seed=i) for i, p in enumerate(PROMPTS)]
        together = engine.generate(requests)
        alone = [engine.generate([r])[0] for r in requests]
        assert [c.tokens for c in together] == [c.tokens for c in alone]
        accepted = {tuple(c.rounds[i].accepted for c in together[:4]) for i in range(3)}
        assert any(len(set(a)) > 1 for a in accepted), "the batch never had ragged acceptance"

    @pytest.mark.parametrize("mutation", ["ragged-shared-offset", "batch-order-by-length"])
    def test_batch_mutations_change_batched_rows_only(self, pair, mutation) -> None:
        engine = ReferenceEngine(pair.target, pair.draft, hooks=plant("reference", [mutation]))
        requests = [Request(p, 20, Sampling(0.0)) for p in PROMPTS]
        clean = ReferenceEngine(pair.target, pair.draft).generate(requests)
        assert [engine.generate([r])[0].tokens for r in requests] == [c.tokens for c in clean]
        assert [c.tokens for c in engine.generate(requests)] != [c.tokens for c in clean]

    def test_prompt_ids_outside_the_vocabulary(self, pair) -> None:
        engine = ReferenceEngine(pair.target, pair.draft)
        with pytest.raises(UsageError, match=r"requests\[1\]\.prompt holds id 30 outside the vocabulary"):
            engine.generate([Request((3,), 2), Request((4, 30), 2)])

    def test_greedy_speculative_equals_plain_decoding(self, pair) -> None:
        engine = ReferenceEngine(pair.target, pair.draft)
        prompt = (3, 5, 7, 11)
        spec = engine.generate([Request(prompt, 24, Sampling(0.0))])[0]
        plain = engine.generate([Request(prompt, 24, Sampling(0.0), speculative=False)])[0]
        assert spec.tokens == plain.tokens
        assert sum(r.committed for r in spec.rounds) == 24

    def test_forced_rejection_puts_the_first_rejection_where_asked(self, pair) -> None:
        engine = ReferenceEngine(pair.target, pair.draft, gamma=3)
        for position in range(3):
            c = engine.generate(
                [
                    Request(
                        (3, 5, 7),
                        12,
                        Sampling(1.0, top_k=6),
                        seed=1,
                        script={"kind": "forced-rejection", "position": position},
                    )
                ]
            )[0]
            assert all(r.accepted == position for r in c.rounds[:-1])
        full = engine.generate(
            [Request((3, 5, 7), 12, Sampling(1.0, top_k=6), seed=1, script={"kind": "full-acceptance"})]
        )[0]
        assert all(r.accepted == 3 for r in full.rounds[:-1])

    def test_forced_rejection_needs_a_truncating_sampler(self, pair) -> None:
        engine = ReferenceEngine(pair.target, pair.draft)
        with pytest.raises(UsageError, match="a forced rejection needs a token the target cannot emit"):
            engine.generate(
                [Request((3, 5), 4, Sampling(1.0), script={"kind": "forced-rejection", "position": 0})]
            )

    def test_stop_id_and_budget(self, pair) -> None:
        engine = ReferenceEngine(pair.target, pair.draft)
        c = engine.generate([Request((3, 5, 7), 30, Sampling(0.0), stop_ids=(9,))])[0]
        assert c.finish_reason == "stop" and c.tokens[-1] == 9 and 9 not in c.tokens[:-1]
        assert len(engine.generate([Request((3, 5, 7), 2, Sampling(1.0))])[0].tokens) == 2

    @pytest.mark.parametrize("mutation", [None, "tree-sibling-visible", "tree-no-compaction"])
    def test_tree_engine_greedy_equals_plain_decoding_unless_mutated(self, pair, mutation) -> None:
        hooks = plant("reference-tree", [mutation] if mutation else [])
        engine = ReferenceEngine(pair.target, pair.draft, tree=(2, 2), page_size=4, hooks=hooks)
        prompt = (5, 6, 7, 8)
        spec = engine.generate([Request(prompt, 20, Sampling(0.0))])[0]
        plain = engine.generate([Request(prompt, 20, Sampling(0.0), speculative=False)])[0]
        assert (spec.tokens == plain.tokens) == (mutation is None)
        assert max(r.accepted for r in spec.rounds) <= 2

    def test_tree_mutations_need_a_tree(self, pair) -> None:
        with pytest.raises(
            UsageError, match="mutation='tree-no-compaction' applies to the reference-tree engine only"
        ):
            plant("reference", ["tree-no-compaction"])
        with pytest.raises(UsageError, match="tree=\\(0,\\) must list children per depth"):
            ReferenceEngine(pair.target, pair.draft, tree=(0,))

    def test_unknown_mutation(self) -> None:
        with pytest.raises(UsageError, match="mutation='nope' is not a known name"):
            plant("reference", ["nope"])

    def test_two_bugs_on_one_seam_cannot_be_combined(self) -> None:
        with pytest.raises(UsageError, match="replace the same hook 'crop'"):
            plant("reference", ["crop-plus-one", "crop-no-op"])

    def test_every_reference_bug_replaces_its_seams(self) -> None:
        """Each record names seams of Hooks (its bug's, then any it needs alongside), and
        planting it changes exactly those fields."""
        for bug in registry.bugs("reference") + registry.bugs("reference-tree"):
            assert bug.seam in Hooks.names() and bug.mechanism and bug.source, bug.name
            assert set(bug.seams) <= set(Hooks.names()) and next(iter(bug.seams)) == bug.seam, bug.name
            planted = plant(bug.engine, [bug.name])
            changed = [h for h in Hooks.names() if getattr(planted, h) is not getattr(Hooks(), h)]
            assert changed == [h for h in Hooks.names() if h in bug.seams], bug.name
        # a bug that needs the verify seam alongside cannot be planted with another verify bug
        with pytest.raises(UsageError, match="replace the same hook 'verify'"):
            plant("reference", ["untruncated-draft", "resample-target"])
        with pytest.raises(UsageError, match="hooks \\['nope'\\] are not among"):
            with_hooks(nope=None)
