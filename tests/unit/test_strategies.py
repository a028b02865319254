"""The public hypothesis strategies produce valid, small, shrinkable instances."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from verispec import strategies as vst
from verispec.errors import UsageError


@given(vst.distributions(4))
def test_distributions_are_exact_and_normalised(row) -> None:
    assert len(row) == 4 and sum(row) == 1 and all(v >= 0 for v in row)


@settings(max_examples=50)
@given(vst.chain_instances(max_vocab=3, max_gamma=2))
def test_chain_instances_respect_bounds(instance) -> None:
    assert 2 <= instance.vocab_size <= 3 and 1 <= instance.gamma <= 2
    assert sum(instance.target_probs(())) == 1


@settings(max_examples=50)
@given(vst.draft_chains(max_vocab=3, max_gamma=3))
def test_draft_chains_draw_drafts_from_the_support(chain) -> None:
    gamma = chain.instance.gamma
    assert len(chain.target_probs) == gamma + 1 and len(chain.draft_probs) == gamma
    assert all(q[x] > 0 for q, x in zip(chain.draft_probs, chain.draft_tokens, strict=True))


def test_bad_bounds_are_usage_errors() -> None:
    with pytest.raises(UsageError, match=r"^min_vocab=4 must be <= max_vocab=3$"):
        vst.chain_instances(min_vocab=4, max_vocab=3)
    with pytest.raises(UsageError, match=r"^settings=\(\) is empty"):
        vst.chain_instances(settings=())
