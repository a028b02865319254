"""Argmax drafting with a softmax q (transformers #32867, jaymody/speculative-sampling #3).

A drafter that takes the argmax while the verifier divides by the softmax q is biased:
p = (0.6, 0.4), q = (0.8, 0.2) outputs (0.75, 0.25), and p = (1/6, 1/3, 1/2),
q = (1/2, 1/3, 1/6) outputs (1/3, 0, 2/3).

Checked by `verispec.exact.articles.known_bug_examples`, which recomputes every number
with verispec's registered verifier code and exact executor.
"""

from verispec.exact.articles import assert_reproduced, known_bug_examples, print_article_check


def test_known_bug_examples() -> None:
    assert_reproduced(known_bug_examples())


if __name__ == "__main__":
    print_article_check(known_bug_examples())
