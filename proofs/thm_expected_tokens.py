"""Expected tokens per round at alpha = 0.6, gamma = 3.

If each of gamma = 3 drafts is accepted independently with probability alpha = 0.6, a
round commits (1 - alpha^4) / (1 - alpha) = 2.176 tokens on average (exactly 272/125),
not four.

Checked by `verispec.exact.articles.expected_tokens_example`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, expected_tokens_example, print_article_check


def test_expected_tokens_example() -> None:
    assert_reproduced(expected_tokens_example())


if __name__ == "__main__":
    print_article_check(expected_tokens_example())
