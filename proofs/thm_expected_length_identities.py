"""The expected-length identities behind every tokens-per-round number.

Tail sum: for the number K in {0, ..., gamma} of accepted drafts, with any law,
E[K] = sum_{i=1}^{gamma} Pr(K >= i); no independence is needed (checked with a symbolic law
for every gamma up to 16). Geometric: if each draft is accepted independently with
probability alpha < 1, a round commits sum_{i=0}^{gamma} alpha^i = (1 - alpha^(gamma+1)) /
(1 - alpha) tokens and E[K] = alpha (1 - alpha^gamma) / (1 - alpha); gamma + 1 at alpha = 1
(symbolic alpha and gamma).
"""

from verispec.exact.symbolic import geometric_identity, tail_sum_identity


def test_tail_sum_identity() -> None:
    result = tail_sum_identity()
    assert result.verdict.passed, result.verdict


def test_geometric_identity() -> None:
    result = geometric_identity()
    assert result.verdict.passed, result.verdict


if __name__ == "__main__":
    for result in (tail_sum_identity(), geometric_identity()):
        print(f"{result.name}: {result.verdict.kind} ({result.prover})")
