"""Recursive rejection at one tree node outputs the target law, with or without replacement.

At a node with target P and m candidates, trying the j-th candidate with
min(1, P_j(x)/q_j(x)), updating P_{j+1} = norm([P_j - q_j]_+) after each rejection and
emitting a sample of P_{m+1} when all are rejected outputs y with probability P(y), for any
vocabulary size and any m, whenever q_j is the law of the j-th candidate given the earlier
ones: q for i.i.d. children (SpecInfer MSS), q without the earlier tokens for children drawn
without replacement (RSD, Sequoia), and a point mass for deterministic children (EAGLE).
The induction on m reduces each step to the one-position lemma; by induction over depth
the tree round is exact. The bounded enumeration in `verispec prove` checks the same
verifiers on hundreds of random trees per candidate law.
"""

from verispec.exact.symbolic import rrs_node_lemma


def test_rrs_node_lemma() -> None:
    result = rrs_node_lemma()
    assert result.verdict.passed, result.verdict


if __name__ == "__main__":
    result = rrs_node_lemma()
    print(f"{result.name}: {result.verdict.kind} ({result.prover})")
