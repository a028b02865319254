"""The programmable bigram draft model: its plans, its weights, and an engine drafting with it."""

from __future__ import annotations

import random

import pytest

from verispec.engines.bigram import (
    LOGIT_GAP,
    BigramPlan,
    bigram_checkpoint,
    bigram_model,
    bigram_state,
    plan_rejections,
    script_plan,
)
from verispec.errors import UsageError


def _simulate(plan: BigramPlan, context: list[int], greedy: list[int], gamma: int, lead: int = 0) -> list:
    """An engine at temperature 0, written independently of the planner: it drafts the
    table's successors and keeps each draft while it equals the target's greedy token."""
    rounds, n, sequence = [], lead, [*context, *greedy]
    while n < len(greedy) - 1:
        proposed = min(gamma, len(greedy) - n - 1)
        drafts, last = [], sequence[len(context) + n - 1]
        for _ in range(proposed):
            last = plan.successor(last)
            drafts.append(last)
        accepted = next((i for i, d in enumerate(drafts) if d != greedy[n + i]), proposed)
        rounds.append((len(context) + n, proposed, accepted))
        n += accepted + 1
    return rounds


class TestPlan:
    def test_distinct_tokens_put_every_first_rejection_where_asked(self) -> None:
        context, greedy = [1, 2], list(range(10, 40))
        for position in range(4):
            plan = plan_rejections(context, greedy, 3, position, 64)
            assert all(r.as_wanted for r in plan.rounds), position
            expected = None if position == 3 else position
            assert {r.first_rejection for r in plan.rounds[:-1]} == {expected}

    def test_the_rounds_are_the_ones_an_engine_runs_even_where_the_plan_conflicts(self) -> None:
        rng = random.Random(0)
        for trial in range(200):
            vocab = rng.choice([4, 8, 24, 200])
            context = [rng.randrange(max(vocab // 2, 4)) for _ in range(rng.randrange(1, 6))]
            # a small alphabet repeats tokens, so successors conflict
            greedy = [rng.randrange(max(vocab // 2, 4)) for _ in range(rng.randrange(2, 40))]
            gamma, position, lead = rng.randrange(1, 6), rng.randrange(0, 7), rng.randrange(0, 2)
            plan = plan_rejections(context, greedy, gamma, position, vocab, lead=lead)
            assert [(r.start, r.proposed, r.accepted) for r in plan.rounds] == _simulate(
                plan, context, greedy, gamma, lead
            ), trial
            if len({*context, *greedy}) < vocab:
                assert plan.default not in {*context, *greedy}

    def test_the_certain_rejection_is_the_largest_unused_id(self) -> None:
        plan = plan_rejections([0, 1], [2, 3], 2, 0, 10)
        assert plan.default == 9 and plan.successors == {1: 9}

    def test_a_path_holding_every_token_still_rejects_where_asked(self) -> None:
        context, greedy = [0, 1], [2, 3, 1, 0, 3, 2, 3]
        plan = plan_rejections(context, greedy, 2, 0, 4)
        assert [r.accepted for r in plan.rounds] == [0] * len(plan.rounds)
        assert [(r.start, r.proposed, r.accepted) for r in plan.rounds] == _simulate(plan, context, greedy, 2)

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (([1], [2], 0, 0, 8), "gamma=0 must be at least 1"),
            (([1], [2], 2, -1, 8), "position=-1"),
            (([1], [9], 2, 0, 8), "token 9 is outside the vocabulary of 8"),
        ],
    )
    def test_bad_input_is_named(self, args, message) -> None:
        with pytest.raises(UsageError, match=message):
            plan_rejections(*args)

    def test_a_script_round_trips_and_bad_scripts_are_named(self) -> None:
        plan = plan_rejections([1, 2], [3, 4, 5, 6], 2, 1, 16)
        assert script_plan(plan.script(), 16) == (plan.successors, plan.default)
        with pytest.raises(UsageError, match="needs successors"):
            script_plan({"kind": "bigram", "default": 3}, 16)
        with pytest.raises(UsageError, match="token 40 is outside the vocabulary of 16"):
            script_plan({"kind": "bigram", "successors": [[1, 40]], "default": 3}, 16)


class TestModel:
    def test_weights_put_the_gap_on_the_successor(self) -> None:
        np = pytest.importorskip("numpy")
        successors, default = {0: 5, 3: 7, 4: 5}, 11
        config, state = bigram_state(successors, default, 12)
        assert config["hidden_size"] % 64 == 0 and config["num_hidden_layers"] == 1
        assert not state["model.layers.0.self_attn.o_proj.weight"].any()
        assert not state["model.layers.0.mlp.down_proj.weight"].any()
        hidden = config["hidden_size"]
        for t in range(12):
            logits = state["lm_head.weight"] @ (state["model.embed_tokens.weight"][t] * np.sqrt(hidden))
            assert int(np.argmax(logits)) == successors.get(t, default)
            assert np.isclose(np.sort(logits)[-1] - np.sort(logits)[-2], LOGIT_GAP, rtol=1e-5)

    @pytest.mark.torch
    def test_the_model_drafts_the_table_whatever_came_before(self, tmp_path) -> None:
        torch = pytest.importorskip("torch")
        transformers = pytest.importorskip("transformers")
        like = transformers.LlamaConfig(vocab_size=24, bos_token_id=0, eos_token_id=1, pad_token_id=2)
        successors, default = {t: (3 * t + 1) % 24 for t in range(0, 24, 2)}, 23
        model = bigram_model(successors, default, like)
        ids = torch.tensor([random.Random(1).choices(range(24), k=40)])
        with torch.no_grad():
            probs = model(ids).logits[0].softmax(-1)
        expected = [successors.get(int(t), default) for t in ids[0]]
        assert probs.argmax(-1).tolist() == expected
        assert float(probs.max(-1).values.min()) > 1 - 24 * 2**-50
        # written once as a checkpoint folder, named by its table; loads to the same logits
        folder = bigram_checkpoint(successors, default, like, tmp_path)
        assert bigram_checkpoint(successors, default, like, tmp_path) == folder
        loaded = transformers.AutoModelForCausalLM.from_pretrained(str(folder))
        with torch.no_grad():
            assert torch.allclose(loaded(ids).logits, model(ids).logits)


@pytest.mark.torch
def test_assisted_generation_follows_a_plan_and_keeps_the_argmax_path() -> None:
    """transformers' assisted generation with the bigram planned on the target's own greedy
    path: every plan gives the target's greedy output, the draft is the bigram (its first
    rejections fall where planned: the output is unchanged, so this looks at the draft)."""
    torch = pytest.importorskip("torch")
    from verispec.engines.hf import make_hf_assisted
    from verispec.engines.protocol import Request, Sampling

    engine = make_hf_assisted()
    prompt = (5, 9, 14, 3)
    plain = engine.generate([Request(prompt, 20, Sampling(0.0), speculative=False)])[0].tokens
    for position in range(4):
        plan = plan_rejections(prompt, plain, 3, position, engine.vocab_size)
        out = engine.generate([Request(prompt, 20, Sampling(0.0), script=plan.script())])[0]
        assert out.tokens == plain, position
    # the drafter the last request used (built then: a second build would return None)
    _, drafter = engine._bigrams.get(plan.script(), lambda *_: None)
    with torch.no_grad():
        row = drafter(torch.tensor([[prompt[-1]]])).logits[0, -1]
    assert int(row.argmax()) == plan.successor(prompt[-1])
