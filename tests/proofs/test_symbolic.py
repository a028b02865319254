"""The provers bite: each refuses a wrong formula that it must catch."""

from __future__ import annotations

from verispec.exact.symbolic import token_level_case_split, token_level_lemma, token_level_z3


class TestTokenLevelCaseSplit:
    def test_proves_the_right_formula(self) -> None:
        assert token_level_case_split(3).verdict.passed

    def test_refutes_resampling_from_p_after_rejection(self) -> None:
        """Mutant: the rejected mass goes to p instead of the residual (resample-target)."""
        result = token_level_case_split(
            3, output=lambda mins, maxs, beta, r, p, k: mins[k] + (1 - beta) * p[k]
        )
        assert result.verdict.kind == "unknown"
        assert "is not p" in result.verdict.reason

    def test_refutes_an_unweighted_residual(self) -> None:
        """Mutant: residual share beta * max(p - q, 0) / r instead of (1 - beta) * ..."""
        result = token_level_case_split(
            2, output=lambda mins, maxs, beta, r, p, k: mins[k] + beta * maxs[k] / r
        )
        assert not result.verdict.passed


class TestTokenLevelZ3:
    def test_proves_the_right_formula(self) -> None:
        assert token_level_z3(3).verdict.passed

    def test_finds_a_model_of_a_wrong_formula(self) -> None:
        result = token_level_z3(
            2, output_times_r=lambda mins, maxs, beta, r, p, k: mins[k] * r + (1 - beta) * p[k] * r
        )
        assert result.verdict.kind == "unknown"
        assert "z3 found a model of the negation" in result.verdict.reason


def test_lemma_statement_names_the_quantities() -> None:
    result = token_level_lemma()
    assert result.general
    assert "beta = sum_y min(p_y, q_y)" in result.statement
