"""Draft trees and tree verifiers: validation, published reference values, structural facts.

Reference values were computed by hand from the papers' definitions (SpecInfer, SpecTr, RSD,
EAGLE, traversal verification) and are named where used.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.models import FixedModel, RandomRationalModel
from verispec.errors import NonConformance, UsageError
from verispec.exact.criterion import check_round, round_law
from verispec.exact.optimum import draft_law, one_node_acceptance, optimal_acceptance, optimal_acceptance_lp
from verispec.verifiers import registry
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.tree_verifiers import optimal_rho
from verispec.verifiers.trees import DraftTree, TreeInstance, run_tree_round

F = Fraction
HALF = (F(1, 2), F(1, 2))


def tree(**overrides) -> DraftTree:
    fields = {
        "tokens": (-1, 0, 1),
        "parents": (-1, 0, 0),
        "target_probs": (HALF, HALF, HALF),
        "draft_probs": (HALF, HALF, HALF),
        "sampling": "iid",
    }
    fields.update(overrides)
    return DraftTree(**fields)


def first_token(name: str, instance) -> list[Fraction]:
    out = [F(0)] * instance.vocab_size
    for block, w in round_law(registry.get(name), instance).items():
        out[block[0]] += w
    return out


def fixed_tree(target, draft, shape, law) -> TreeInstance:
    return TreeInstance(FixedModel(target), FixedModel(draft), shape, law)


class TestDraftTreeValidation:
    """Bad trees are usage errors that name the node and the field."""

    def test_a_valid_tree(self) -> None:
        t = tree()
        assert t.children == ((1, 2), (), ())
        assert t.path(2) == (1,) and t.max_depth == 1

    def test_parent_not_smaller_than_child(self) -> None:
        with pytest.raises(
            UsageError, match=r"^tree node 1: parents\[1\]=1 must be a node index smaller than 1"
        ):
            tree(parents=(-1, 1, 0))

    def test_cycle_is_ruled_out_by_the_parent_order(self) -> None:
        with pytest.raises(
            UsageError, match=r"tree node 1: parents\[1\]=2 must be a node index smaller than 1"
        ):
            tree(parents=(-1, 2, 1))

    def test_root_parent(self) -> None:
        with pytest.raises(UsageError, match=r"^tree.parents\[0\]=0 must be -1"):
            tree(parents=(0, 0, 0))

    def test_wrong_row_length_names_node_and_field(self) -> None:
        with pytest.raises(UsageError, match=r"^tree node 2: draft_probs\[2\] has 3 entries, expected V=2$"):
            tree(draft_probs=(HALF, HALF, (F(1, 3),) * 3))

    def test_duplicates_under_without_replacement(self) -> None:
        with pytest.raises(
            UsageError,
            match=r"^tree node 2 duplicates its sibling node 1 \(token 0\) "
            r"under sampling='without_replacement'$",
        ):
            tree(tokens=(-1, 0, 0), sampling="without_replacement")

    def test_empty_tree_and_field_lengths(self) -> None:
        with pytest.raises(UsageError, match="tree has no nodes"):
            DraftTree((), (), (), (), "iid")
        with pytest.raises(UsageError, match=r"^tree.parents has 2 entries but tree.tokens has 3 nodes$"):
            tree(parents=(-1, 0))

    def test_unknown_sampling_and_token_outside_vocabulary(self) -> None:
        with pytest.raises(UsageError, match=r"^tree.sampling='random' is not one of"):
            tree(sampling="random")
        with pytest.raises(
            UsageError, match=r"^tree node 2: tokens\[2\]=5 is outside the vocabulary 0\.\.1$"
        ):
            tree(tokens=(-1, 0, 5))


class TestTreeInstanceValidation:
    def test_unknown_law_and_bad_shape(self) -> None:
        with pytest.raises(UsageError, match=r"^law='sorted' is not one of"):
            TreeInstance(FixedModel(HALF), FixedModel(HALF), (2,), "sorted")
        with pytest.raises(
            UsageError, match=r"^shape=\(2, 0\) must be a non-empty sequence of positive widths$"
        ):
            TreeInstance(FixedModel(HALF), FixedModel(HALF), (2, 0), "iid")

    def test_multi_needs_one_drafter_per_sibling(self) -> None:
        with pytest.raises(UsageError, match=r"has up to 3 siblings but 1 draft model\(s\) were given"):
            TreeInstance(FixedModel(HALF), FixedModel(HALF), (3,), "multi")

    def test_vocabulary_mismatch(self) -> None:
        with pytest.raises(UsageError, match=r"^vocabulary mismatch: the target has vocab_size=2 but draft"):
            TreeInstance(FixedModel(HALF), FixedModel(["1/3", "1/3", "1/3"]), (2,), "iid")


class TestReferenceValues:
    P, Q = ("1/6", "1/3", "1/2"), ("1/2", "1/3", "1/6")

    def test_mss_on_iid_children_accepts_13_18(self) -> None:
        assert one_node_acceptance("mss", [F(v) for v in self.P], [F(v) for v in self.Q], 2, "iid") == F(
            13, 18
        )

    def test_k_seq_rho_star_and_acceptance(self) -> None:
        """SpecTr example: rho* = 3/2 (equality holds exactly), acceptance 3/4."""
        assert optimal_rho(tuple(F(v) for v in self.P), tuple(F(v) for v in self.Q), 2) == F(3, 2)
        assert one_node_acceptance("k-seq", [F(v) for v in self.P], [F(v) for v in self.Q], 2, "iid") == F(
            3, 4
        )

    def test_optimum_29_36_by_closed_form_and_lp(self) -> None:
        p, q = [F(v) for v in self.P], [F(v) for v in self.Q]
        drafts = draft_law(q, 2, "iid")
        assert optimal_acceptance(p, drafts) == F(29, 36)
        assert optimal_acceptance_lp(p, drafts) == pytest.approx(29 / 36, abs=1e-9)

    def test_mss_on_deterministic_children_with_softmax_q(self) -> None:
        assert first_token("mss", fixed_tree(self.P, self.Q, (2,), "det")) == [F(1, 3), F(0), F(2, 3)]

    def test_mss_on_without_replacement_children(self) -> None:
        inst = fixed_tree(("0", "1/3", "2/3"), ("2/3", "0", "1/3"), (2,), "wor")
        assert first_token("mss", inst) == [F(0), F(0), F(1)]
        assert first_token("rrs-without-replacement", inst) == [F(0), F(1, 3), F(2, 3)]

    def test_merged_duplicates(self) -> None:
        inst = fixed_tree(("0", "1/3", "2/3"), ("2/3", "0", "1/3"), (2,), "iid")
        assert first_token("mss-merged-duplicates", inst) == [F(0), F(2, 9), F(7, 9)]
        assert first_token("mss", inst) == [F(0), F(1, 3), F(2, 3)]


class TestStructuralFacts:
    def test_traversal_on_a_chain_is_block_verification(self) -> None:
        target, draft = RandomRationalModel(3, seed=4), RandomRationalModel(3, seed=5)
        as_tree = TreeInstance(target, draft, (1, 1), "iid")
        as_chain = ChainInstance(target, draft, 2)
        assert round_law(registry.get("traversal"), as_tree) == round_law(registry.get("block"), as_chain)

    def test_traversal_on_one_level_is_rrs_without_replacement(self) -> None:
        inst = TreeInstance(RandomRationalModel(3, seed=8), RandomRationalModel(3, seed=9), (2,), "wor")
        assert round_law(registry.get("traversal"), inst) == round_law(
            registry.get("rrs-without-replacement"), inst
        )

    def test_point_mass_tree_reaches_the_optimum_on_deterministic_children(self) -> None:
        p, q = [F(v) for v in ("2/5", "1/4", "3/20", "1/5")], [F(v) for v in ("1/10", "1/2", "1/5", "1/5")]
        assert one_node_acceptance("point-mass-tree", p, q, 2, "det") == optimal_acceptance(
            p, draft_law(q, 2, "det")
        )

    @pytest.mark.parametrize("law", ["iid", "wor"])
    def test_no_verifier_beats_the_optimum(self, law: str) -> None:
        p, q = [F(v) for v in ("1/2", "3/10", "1/5")], [F(v) for v in ("1/5", "1/5", "3/5")]
        best = optimal_acceptance(p, draft_law(q, 2, law))
        for entry in registry.verifiers("exact", family="tree"):
            if law in entry.laws and entry.name != "greedy-tree":
                assert one_node_acceptance(entry.name, p, q, 2, law) <= best

    def test_expected_length_is_the_sum_of_path_probabilities(self) -> None:
        inst = TreeInstance(RandomRationalModel(3, seed=1), RandomRationalModel(3, seed=2), (2, 1), "det")
        check = check_round(registry.get("point-mass-tree"), inst)
        assert check.predicted_accepted is not None
        assert check.accounting_exact and check.exact

    def test_a_block_that_is_not_a_path_is_non_conformance(self) -> None:
        inst = fixed_tree(HALF, HALF, (1,), "det")
        with pytest.raises(NonConformance, match=r"accepted \[1\], which is not a path of the drafted tree"):
            run_tree_round(lambda t, r: [1, 0], inst, None)


class TestCandidateLaws:
    def test_without_replacement_never_repeats_and_stops_at_the_support(self) -> None:
        inst = fixed_tree(("1/2", "1/2", "0"), ("1/2", "1/2", "0"), (3,), "wor")
        law = round_law(registry.get("point-mass-tree"), inst)
        assert sum(law.values()) == 1

    def test_adaptive_deterministic_shape_depends_on_draft_only(self) -> None:
        inst = fixed_tree(HALF, ("9/10", "1/10"), (2, 2), "adaptive-det")
        assert check_round(registry.get("point-mass-tree"), inst).exact
