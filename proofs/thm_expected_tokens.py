"""Expected tokens per round at alpha = 0.6, gamma = 3.

If each of gamma = 3 drafts is accepted independently with probability alpha = 0.6, a
round commits (1 - alpha^4) / (1 - alpha) = 2.176 tokens on average (exactly 272/125),
not four.

Checked by `verispec.exact.seeds.expected_tokens_example`, which recomputes every number with verispec's
registered verifier code and exact executor.
"""

from verispec.exact.seeds import expected_tokens_example


def test_expected_tokens_example() -> None:
    result = expected_tokens_example()
    assert result.ok, result.mismatches()


if __name__ == "__main__":
    result = expected_tokens_example()
    print(result.statement)
    for key, value in result.computed.items():
        print(f"  {key}: {value} (article: {result.expected[key]})")
    print("reproduced" if result.ok else "MISMATCH")
