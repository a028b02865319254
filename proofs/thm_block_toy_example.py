"""Block verification's toy example (Sun et al. 2025, Section 2).

With context-free M_b = (1/3, 2/3) and M_s = (2/3, 1/3) and gamma = 2, the expected number of
accepted drafts is 10/9 for token-level verification and 11/9 for block verification, and
the unattainable joint bound sum_i sum_{x^i} min(M_s(x^i), M_b(x^i)) is 12/9. Block
verification is also round-exact on this instance.

Checked by `verispec.exact.articles.block_toy_example`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, block_toy_example, print_article_check


def test_block_toy_example() -> None:
    assert_reproduced(block_toy_example())


if __name__ == "__main__":
    print_article_check(block_toy_example())
