"""Chain verifiers and controls: exact laws on hand-checkable instances.

Reference values come from the seed articles and from hand computations, as named.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.models import FixedModel, TableModel
from verispec.core.transforms import SamplingConfig
from verispec.errors import NonConformance
from verispec.exact.criterion import check_round, expected_accepted, round_law
from verispec.verifiers import registry
from verispec.verifiers.chain import acceptance_ratio
from verispec.verifiers.instance import ChainInstance, run_round

F = Fraction


def first_token(name: str, instance: ChainInstance) -> list[Fraction]:
    out = [F(0)] * instance.vocab_size
    for block, w in round_law(registry.get(name), instance).items():
        out[block[0]] += w
    return out


def fixed(target: list[str], draft: list[str], gamma: int = 1, **config) -> ChainInstance:
    return ChainInstance(FixedModel(target), FixedModel(draft), gamma, SamplingConfig(**config))


class TestTokenLevel:
    def test_three_token_example_outputs_p(self, article_instance) -> None:
        """Audit article: with p=(0.5,0.3,0.2), q=(0.2,0.2,0.6) the output is p."""
        assert first_token("token-level", article_instance) == [F(1, 2), F(3, 10), F(1, 5)]

    def test_round_law_has_accepted_drafts_then_one_token(self, article_instance) -> None:
        law = round_law(registry.get("token-level"), article_instance)
        # accepted x (then a bonus from p), or a residual sample (0.75, 0.25, 0) w.p. 0.4
        assert law[(0,)] == F(2, 5) * F(3, 4)
        assert law[(1,)] == F(2, 5) * F(1, 4)
        assert (2,) not in law
        assert sum(law.values()) == 1

    def test_expected_tokens_per_round(self, article_instance) -> None:
        check = check_round(registry.get("token-level"), article_instance)
        assert check.expected_tokens == F(8, 5)  # 1 + alpha, alpha = 0.6
        assert check.predicted_accepted == F(3, 5)


class TestControlsOnPublishedExamples:
    def test_resample_target_gives_the_articles_law(self, article_instance) -> None:
        """Audit article section 3: resampling from p after rejection gives (0.4, 0.32, 0.28)."""
        assert first_token("resample-target", article_instance) == [F(2, 5), F(8, 25), F(7, 25)]

    def test_greedy_draft_softmax_q_transformers_32867(self) -> None:
        """transformers #32867: p=[.6,.4], q=[.8,.2] gives [.75,.25]."""
        assert first_token("greedy-draft-softmax-q", fixed(["0.6", "0.4"], ["0.8", "0.2"])) == [
            F(3, 4),
            F(1, 4),
        ]

    def test_greedy_draft_softmax_q_jaymody_3(self) -> None:
        """jaymody/speculative-sampling #3: q=(1/2,1/3,1/6), p=(1/6,1/3,1/2) gives (1/3, 0, 2/3)."""
        inst = fixed(["1/6", "1/3", "1/2"], ["1/2", "1/3", "1/6"])
        assert first_token("greedy-draft-softmax-q", inst) == [F(1, 3), F(0), F(2, 3)]

    def test_softmax_residual_puts_mass_on_impossible_tokens(self, article_instance) -> None:
        law = first_token("softmax-residual", article_instance)
        assert float(law[2]) > 0.2  # target 0.2; the softmax residual pays C again
        check = check_round(registry.get("softmax-residual"), article_instance)
        assert not check.law_exact and check.decided

    def test_missing_bonus_keeps_the_law_but_breaks_accounting(self, article_instance) -> None:
        check = check_round(registry.get("missing-bonus"), article_instance)
        assert check.law_exact
        assert not check.accounting_exact
        assert check.expected_tokens == 1  # never more than the single accepted draft

    def test_bonus_wrong_row_needs_a_prefix_dependent_target(self) -> None:
        target = TableModel({(0,): ["1", "0"], (1,): ["0", "1"]}, ["1/2", "1/2"])
        inst = ChainInstance(target, FixedModel(["1/2", "1/2"]), 1)
        assert not check_round(registry.get("bonus-wrong-row"), inst).law_exact
        assert check_round(registry.get("bonus-wrong-row"), fixed(["1/2", "1/2"], ["1/2", "1/2"])).exact

    def test_raw_q_processed_draft_is_exact_without_truncation(self, article_instance) -> None:
        """Without top-k/top-p the raw q is the sampling law: the bug is invisible."""
        assert check_round(registry.get("raw-q-processed-draft"), article_instance).exact
        inst = fixed(["1/3", "1/3", "1/3"], ["1/5", "2/5", "2/5"], top_k=2)
        assert not check_round(registry.get("raw-q-processed-draft"), inst).law_exact


class TestBlockVerification:
    def test_toy_example_expected_lengths(self) -> None:
        """Sun et al. 2025, Section 2: 10/9 for token-level, 11/9 for block verification."""
        inst = fixed(["1/3", "2/3"], ["2/3", "1/3"], gamma=2)
        assert expected_accepted(registry.get("token-level"), inst) == F(10, 9)
        assert expected_accepted(registry.get("block"), inst) == F(11, 9)
        assert check_round(registry.get("block"), inst).exact

    def test_first_failure_control_is_biased_on_the_same_instance(self) -> None:
        inst = fixed(["1/3", "2/3"], ["2/3", "1/3"], gamma=2)
        assert not check_round(registry.get("block-first-failure"), inst).law_exact


class TestGreedy:
    def test_exact_under_the_greedy_contract(self) -> None:
        inst = fixed(["1/4", "3/8", "3/8"], ["1/3", "1/3", "1/3"], gamma=2, temperature=0)
        check = check_round(registry.get("greedy"), inst)
        assert check.exact
        assert first_token("greedy", inst) == [F(0), F(1), F(0)]  # tie: lowest id wins

    def test_not_exact_when_the_target_samples(self, article_instance) -> None:
        assert not check_round(registry.get("greedy"), article_instance).law_exact


class TestRoundContract:
    def test_zero_probability_draft_under_declared_q(self) -> None:
        with pytest.raises(
            NonConformance, match="draft token 0 has probability 0 under the declared draft law"
        ):
            acceptance_ratio([F(1), F(0)], [F(0), F(1)], 0)

    def test_blocks_of_the_wrong_shape_are_non_conformance(self, article_instance) -> None:
        draft = registry.get("token-level").draft
        with pytest.raises(NonConformance, match=r"block of 3 tokens; a round commits 1 to gamma\+1=2"):
            run_round(lambda *a: [0, 0, 0], draft, article_instance, _FirstBranch())
        with pytest.raises(NonConformance, match=r"token 7, outside the vocabulary 0\.\.2"):
            run_round(lambda *a: [7], draft, article_instance, _FirstBranch())


class _FirstBranch:
    def bernoulli(self, prob):
        return True

    def categorical(self, weights):
        return next(i for i, w in enumerate(weights) if w > 0)


class TestRegistry:
    def test_unknown_name_suggests_the_closest(self) -> None:
        from verispec.errors import UsageError

        with pytest.raises(
            UsageError, match=r"^verifier='token_level' is not a known name; did you mean 'token-level'\?"
        ):
            registry.get("token_level")

    def test_the_named_verifiers_are_registered(self) -> None:
        """The verifiers the docs, the seed articles and the engines name are registered. A
        subset: a new verifier or control needs no edit here (the tests that run every
        verifier read the registry)."""
        assert {"token-level", "greedy", "point-mass", "sample-and-match", "block"} <= set(
            registry.names("exact", "chain")
        )
        assert {"mss", "rrs-without-replacement", "k-seq", "greedy-tree"} <= set(
            registry.names("exact", "tree")
        )
        assert {"resample-target", "softmax-residual", "missing-bonus", "reused-uniform"} <= set(
            registry.names("control", "chain")
        )
        assert {"mss-without-replacement", "k-seq-rho-one"} <= set(registry.names("control", "tree"))

    @pytest.mark.parametrize("name", registry.names())
    def test_every_registered_verifier_is_declared_completely(self, name: str) -> None:
        """Each entry says what it is and where it comes from."""
        entry = registry.get(name)
        assert entry.kind in ("exact", "control") and entry.family in ("chain", "tree"), name
        assert entry.summary and entry.source, name

    def test_the_registry_lists_chain_before_tree_and_exact_before_control(self) -> None:
        order = [(e.family != "chain", e.kind != "exact") for e in registry.verifiers()]
        assert order == sorted(order)


class TestChainInstanceValidation:
    def test_vocabulary_mismatch_names_both_sizes(self) -> None:
        from verispec.errors import UsageError

        with pytest.raises(
            UsageError,
            match=r"^vocabulary mismatch: the target has vocab_size=3 but the draft has vocab_size=2$",
        ):
            ChainInstance(FixedModel(["1/3", "1/3", "1/3"]), FixedModel(["1/2", "1/2"]), 1)

    def test_bad_gamma_and_context(self) -> None:
        from verispec.errors import UsageError

        with pytest.raises(UsageError, match=r"^gamma=-1 must be a non-negative integer$"):
            fixed(["1/2", "1/2"], ["1/2", "1/2"], gamma=-1)
        with pytest.raises(UsageError, match=r"^context\[0\]=5 is not a token id in 0\.\.1$"):
            ChainInstance(FixedModel(["1/2", "1/2"]), FixedModel(["1/2", "1/2"]), 1, context=(5,))
