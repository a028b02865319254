"""The audit article's three-token example.

With p = (0.5, 0.3, 0.2) and q = (0.2, 0.2, 0.6), token-level speculative sampling
accepts A and B always and C with probability 1/3; each token contributes 0.2 of directly
accepted mass, so alpha = 0.6 and a rejection happens with probability 0.4. The residual
is (0.75, 0.25, 0); distributing the rejected mass in these proportions adds (0.3, 0.1, 0)
and recovers p exactly. Resampling from p after a rejection instead outputs
(0.4, 0.32, 0.28): C, already overpaid by the draft, is paid again.

Checked by `verispec.exact.articles.three_token_example`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, print_article_check, three_token_example


def test_three_token_example() -> None:
    assert_reproduced(three_token_example())


if __name__ == "__main__":
    print_article_check(three_token_example())
