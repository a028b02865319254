"""Registered verispec verifiers behind the black-box signatures (numpy in, token ids out).

``black_box("token-level")`` returns ``verify(target_probs, draft_probs, draft_tokens, rng)``
running the registered verify function on the float rows with the given generator; tree
verifiers get ``verify_tree(tree, rng)``. The audit of an exact verifier through these
adapters must pass, and the audit of a control must be rejected: that is how the audit is
shown to bite.

The module-level names ``token_level``, ``resample_target``, ... let the command line audit
them by ``verispec.audits.adapters:token_level``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verispec.core.random import SeededRandom
from verispec.verifiers import registry
from verispec.verifiers.trees import DraftTree

__all__ = ["black_box"]


def black_box(name: str) -> Callable[..., list[int]]:
    """The registered verifier ``name`` as a black box with the DESIGN.md signature."""
    entry = registry.get(name)
    if isinstance(entry, registry.TreeVerifier):
        verify_tree = entry.verify

        def rows(values: Any) -> tuple[tuple[float, ...], ...]:
            return tuple(tuple(float(v) for v in row) for row in values)

        def tree_box(tree: Any, rng: Any) -> list[int]:
            sampling = str(tree.sampling)
            sibling = getattr(tree, "sibling_probs", None)
            drafted = DraftTree(
                tokens=tuple(int(t) for t in tree.tokens),
                parents=tuple(int(p) for p in tree.parents),
                target_probs=rows(tree.target_probs),
                draft_probs=rows(tree.draft_probs),
                sampling=sampling,
                sibling_probs=None if sibling is None else rows(sibling),
            )
            return list(verify_tree(drafted, SeededRandom(generator=rng)))

        tree_box.__qualname__ = f"black_box({name!r})"
        return tree_box
    verify = entry.verify

    def chain_box(target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: Any) -> list[int]:
        return list(
            verify(
                [list(map(float, row)) for row in target_probs],
                [list(map(float, row)) for row in draft_probs],
                [int(t) for t in draft_tokens],
                SeededRandom(generator=rng),
            )
        )

    chain_box.__qualname__ = f"black_box({name!r})"
    return chain_box


token_level = black_box("token-level")
block_verification = black_box("block")
sample_and_match = black_box("sample-and-match")
point_mass = black_box("point-mass")
resample_target = black_box("resample-target")
softmax_residual = black_box("softmax-residual")
reused_uniform = black_box("reused-uniform")
bonus_wrong_row = black_box("bonus-wrong-row")
mss = black_box("mss")
rrs_without_replacement = black_box("rrs-without-replacement")
mss_merged_duplicates = black_box("mss-merged-duplicates")
