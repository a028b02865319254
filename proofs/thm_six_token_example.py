"""The derived article's six-token exactness example.

With p = (0.4, 0.25, 0.15, 0.1, 0.07, 0.03) and the deliberately bad draft
q = (0.1, 0.1, 0.3, 0.3, 0.1, 0.1), speculative sampling outputs exactly p (here by exact
enumeration and the round criterion, not by sampling) and accepts with probability
sum min(p, q) = 0.55. The article's million-sample run, repeated with its seed, prints the
same frequencies to three decimals and the acceptance rate 0.550.

Checked by `verispec.exact.articles.six_token_example`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, print_article_check, six_token_example


def test_six_token_example() -> None:
    assert_reproduced(six_token_example())


if __name__ == "__main__":
    print_article_check(six_token_example())
