"""Point-mass verification of a deterministic draft outputs the target law.

For any vocabulary size, target p and draft token x (a greedy drafter, n-gram or prompt
lookup: q is a point mass at x): accepting x with probability p(x) and otherwise sampling
p with x removed, renormalised, outputs every token y with probability p(y). This is
vLLM's IS_NGRAM path and EAGLE's sampling verification at one node.
"""

from verispec.exact.symbolic import point_mass_lemma


def test_point_mass_lemma() -> None:
    result = point_mass_lemma()
    assert result.verdict.passed, result.verdict


if __name__ == "__main__":
    result = point_mass_lemma()
    print(f"{result.name}: {result.verdict.kind} ({result.prover})")
