"""Token-level speculative sampling outputs the target law at one position.

For any vocabulary size V, target p and draft q: drafting x ~ q, accepting it with
probability min(1, p(x)/q(x)) and otherwise sampling the normalised residual [p - q]_+
outputs x with probability min(p_x, q_x) + (1 - beta) max(p_x - q_x, 0) / R = p_x, where
beta = sum min(p, q) is the acceptance mass and R = sum [p - q]_+ = 1 - beta. Proved three
ways: with the acceptance mass abstracted, for any V (sympy); fully case-split over the
sign pattern of p - q with symbolic rows for V = 2..5 (sympy); and for V = 2..4 by z3 over
the reals, independently of sympy. Round exactness for any gamma follows by induction
over positions (the chain rule), see verispec/exact/symbolic.py.
"""

import pytest

from verispec.exact.symbolic import (
    CASE_SPLIT_VOCABS,
    Z3_VOCABS,
    token_level_case_split,
    token_level_lemma,
    token_level_z3,
)


def test_any_vocabulary_size() -> None:
    result = token_level_lemma()
    assert result.verdict.passed, result.verdict


@pytest.mark.parametrize("vocab_size", CASE_SPLIT_VOCABS)
def test_case_split(vocab_size: int) -> None:
    result = token_level_case_split(vocab_size)
    assert result.verdict.passed, result.verdict


@pytest.mark.parametrize("vocab_size", Z3_VOCABS)
def test_z3(vocab_size: int) -> None:
    result = token_level_z3(vocab_size)
    assert result.verdict.passed, result.verdict


if __name__ == "__main__":
    for result in [
        token_level_lemma(),
        *map(token_level_case_split, CASE_SPLIT_VOCABS),
        *map(token_level_z3, Z3_VOCABS),
    ]:
        print(f"{result.name}: {result.verdict.kind} ({result.prover}, {result.seconds:.2f} s)")
