"""The reference catalog's multi-draft numbers, recomputed exactly.

For p = (1/6, 1/3, 1/2) and q = (1/2, 1/3, 1/6) with two i.i.d. drafts: MSS (recursive
rejection with replacement) accepts the first token with probability 13/18, K-SEQ with the
smallest valid rho = 3/2 accepts with 3/4, and the optimal coupling reaches 29/36 (closed
form and linear program agree). MSS applied to top-2 children with the softmax q outputs
(1/3, 0, 2/3); for p = (0, 1/3, 2/3), q = (2/3, 0, 1/3), MSS on children drawn without
replacement outputs token 2 with probability 1, and MSS on a trie that merged duplicate
siblings outputs (0, 2/9, 7/9). Sources: Miao et al., SpecInfer (MSS); Sun et al., SpecTr (K-SEQ
and its rho); the max-flow bound of verispec.exact.optimum; the numbers were first computed by
hand and are recomputed here with the registered verifiers and the exact executor.
"""

from fractions import Fraction as F

from verispec.core.models import FixedModel
from verispec.exact.criterion import round_law
from verispec.exact.optimum import draft_law, one_node_acceptance, optimal_acceptance, optimal_acceptance_lp
from verispec.verifiers import registry
from verispec.verifiers.tree_verifiers import optimal_rho
from verispec.verifiers.trees import TreeInstance

P = [F(1, 6), F(1, 3), F(1, 2)]
Q = [F(1, 2), F(1, 3), F(1, 6)]


def first_token(name: str, target: list[F], draft: list[F], law: str) -> list[F]:
    out = [F(0)] * len(target)
    for block, w in round_law(
        registry.get(name), TreeInstance(FixedModel(target), FixedModel(draft), (2,), law)
    ).items():
        out[block[0]] += w
    return out


def test_acceptances_and_optimum() -> None:
    assert one_node_acceptance("mss", P, Q, 2, "iid") == F(13, 18)
    assert optimal_rho(tuple(P), tuple(Q), 2) == F(3, 2)
    assert one_node_acceptance("k-seq", P, Q, 2, "iid") == F(3, 4)
    drafts = draft_law(Q, 2, "iid")
    assert optimal_acceptance(P, drafts) == F(29, 36)
    assert abs(optimal_acceptance_lp(P, drafts) - 29 / 36) < 1e-9


def test_wrong_pairings() -> None:
    assert first_token("mss", P, Q, "det") == [F(1, 3), F(0), F(2, 3)]
    p2, q2 = [F(0), F(1, 3), F(2, 3)], [F(2, 3), F(0), F(1, 3)]
    assert first_token("mss", p2, q2, "wor") == [F(0), F(0), F(1)]
    assert first_token("mss-merged-duplicates", p2, q2, "iid") == [F(0), F(2, 9), F(7, 9)]


if __name__ == "__main__":
    test_acceptances_and_optimum()
    test_wrong_pairings()
    print("MSS 13/18, K-SEQ 3/4 (rho* = 3/2), alpha* = 29/36; (1/3, 0, 2/3); (0, 0, 1); (0, 2/9, 7/9)")
    print("reproduced")
