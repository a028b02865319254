"""The derived article's tokens-per-step table.

With independent acceptance alpha and k drafts a step yields (1 - alpha^(k+1)) / (1 - alpha)
tokens. For alpha in (0.6, 0.8, 0.9) and k in (2, 4, 8) the formula gives 1.96, 2.31, 2.47;
2.44, 3.36, 4.33; 2.71, 4.10, 6.13, and the article's 200,000-step simulations (seed 0)
give 1.96, 2.31, 2.48; 2.44, 3.36, 4.32; 2.71, 4.10, 6.13.

Checked by `verispec.exact.articles.formula_table`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, formula_table, print_article_check


def test_formula_table() -> None:
    assert_reproduced(formula_table())


if __name__ == "__main__":
    print_article_check(formula_table())
