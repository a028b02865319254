"""Index functions of a speculative round: one definition, three interpretations.

Every function here uses only arithmetic, comparisons and :mod:`verispec.smt.portable`, so
it evaluates on Python ints, z3 integer terms and torch tensors. z3 proves the obligations
of :mod:`verispec.smt.obligations` about these very functions, and the reference engine
builds its masks, positions and crops with them.

Notation (``docs/explanation/index-conventions.md``): ``L`` is the committed length
including the pending token, which has no KV yet (the cache holds ``L - 1`` entries at the
start of a round); ``gamma`` drafts; a verify pass feeds ``gamma + 1`` queries
``[pending, d1..d_gamma]`` against ``L + gamma`` keys; ``accepted`` drafts are kept.

The functions whose names start with ``wrong_`` are conventions engines have shipped; the
catalog refutes each with a concrete counterexample.
"""

from __future__ import annotations

from typing import Any

from verispec.smt.portable import and_, floordiv, maximum, minimum, mod, or_, where

__all__ = [
    "committed_count",
    "compaction_plan",
    "draft_sync",
    "next_offset",
    "pages_needed",
    "query_position",
    "slot",
    "target_crop_length",
    "tree_depth",
    "tree_position",
    "tree_visible",
    "visible",
]

# ------------------------------------------------------------------------------ chains


def query_position(row: Any, L: Any) -> Any:
    """Absolute position of verify-pass query ``row`` (row 0 is the pending token)."""
    return L - 1 + row


def visible(row: Any, key: Any, L: Any, gamma: Any) -> Any:
    """May verify-pass query ``row`` attend to key index ``key``? (``Sq = gamma+1, Sk = L+gamma``)

    The keys are the contiguous cache (positions ``0..L-2``) followed by the block, so key
    ``j`` has position ``j``; a query sees exactly the keys at or before its own position.
    """
    return key <= query_position(row, L)


def target_crop_length(L: Any, accepted: Any) -> Any:
    """Entries the target cache keeps after ``accepted`` drafts: ``L + accepted``.

    That is the old prefix, the pending token and the accepted drafts; the next slot holds
    the rejected draft (or nothing after full acceptance) and the new pending token (the
    correction or bonus) has no KV yet.
    """
    return L + accepted


def draft_sync(L: Any, gamma: Any, accepted: Any) -> tuple[Any, Any]:
    """How the draft cache catches up: ``(crop_length, catch_up)``.

    The draft fed ``[pending, d1..d_{gamma-1}]`` (``d_gamma`` was sampled, never fed), so its
    cache holds ``L - 1 + gamma`` entries. It keeps ``min(L + accepted, L - 1 + gamma)`` and
    must then feed ``catch_up`` accepted tokens it never processed: one (``d_gamma``) after
    full acceptance, none otherwise. Afterwards it covers ``[0, L' - 1)`` like the target.
    """
    crop = minimum(L + accepted, L - 1 + gamma)
    return crop, L + accepted - crop


def committed_count(block_len: Any, eos_index: Any, budget: Any) -> Any:
    """How many tokens of a block are emitted: cut after an EOS and at the token budget.

    ``eos_index`` is the index of the first EOS in the block, or ``block_len`` if none;
    ``budget`` is how many new tokens the request may still emit.
    """
    return minimum(block_len, minimum(eos_index + 1, budget))


def pages_needed(length: Any, page_size: Any) -> Any:
    """Pages a paged cache needs for ``length`` entries (ceiling division)."""
    return floordiv(length + page_size - 1, page_size)


def slot(pos: Any, page_size: Any, block_table: Any) -> Any:
    """Physical slot of position ``pos`` in a paged cache: ``table[pos // B] * B + pos % B``."""
    return block_table[floordiv(pos, page_size)] * page_size + mod(pos, page_size)


def next_offset(offset: Any, accepted: Any) -> Any:
    """A batch row's cache offset after a round that accepted ``accepted`` of its drafts."""
    return offset + accepted + 1


# ------------------------------------------------------------------------------- trees


def tree_visible(parents: Any, x: Any, y: Any, max_depth: int) -> Any:
    """May tree node ``x`` attend to tree node ``y``? Exactly when ``y`` is ``x`` or an ancestor.

    ``parents[0] == -1`` (the root), ``parents[i] < i``. ``max_depth`` bounds the walk up
    the tree (a tree of ``N`` nodes needs ``N - 1``). Every prefix key is visible to every
    node; that part is the chain mask.
    """
    cur = x
    seen = cur == y
    for _ in range(max_depth):
        cur = where(cur > 0, parents[cur], cur)
        seen = or_(seen, cur == y)
    return seen


def tree_depth(parents: Any, x: Any, max_depth: int) -> Any:
    """Depth of node ``x`` (the root has depth 0)."""
    cur, depth = x, x * 0
    for _ in range(max_depth):
        depth = depth + where(cur > 0, 1, 0)
        cur = where(cur > 0, parents[cur], cur)
    return depth


def tree_position(parents: Any, x: Any, L: Any, max_depth: int) -> Any:
    """Absolute (RoPE) position of tree node ``x``: the root sits at ``L - 1``."""
    return L - 1 + tree_depth(parents, x, max_depth)


def compaction_plan(j: Any, path_row: Any, L: Any) -> tuple[Any, Any]:
    """Where the ``j``-th accepted node's KV moves: ``(src, dst)``, with ``path_row = r[j]``.

    The tree's KV sits at slots ``L - 1 + row``; the accepted path (rows ``r[0] = 0 <
    r[1] < ...``) is copied to ``L - 1 + j``. Copying in ascending ``j`` is safe because
    ``dst <= src`` and no later source is overwritten.
    """
    return L - 1 + path_row, L - 1 + j


# ---------------------------------------------------------------- wrong conventions


def wrong_visible_top_left(row: Any, key: Any, L: Any, gamma: Any) -> Any:
    """PyTorch SDPA ``is_causal`` on non-square inputs, FlashAttention < 2.1: ``key <= row``."""
    return key <= row


def visible_bottom_right(row: Any, key: Any, L: Any, gamma: Any) -> Any:
    """FlashAttention >= 2.1: ``key <= row + Sk - Sq`` with ``Sk = L + gamma``, ``Sq = gamma + 1``."""
    return key <= row + (L + gamma) - (gamma + 1)


def position_anchored(key_position: Any, query_position: Any) -> Any:
    """HF masking_utils, llama.cpp, gpt-fast: visible iff the key's stored position is not later."""
    return key_position <= query_position


def wrong_crop_plus_one(L: Any, accepted: Any) -> Any:
    """Crop to ``L + accepted + 1``: keeps the rejected draft's KV."""
    return L + accepted + 1


def wrong_crop_full(L: Any, gamma: Any) -> Any:
    """No crop: keep the ``L + gamma`` entries the verify pass wrote."""
    return L + gamma


def python_slice_length(n: Any, stop: Any) -> Any:
    """``len(range(n)[:stop])`` with Python's slicing semantics (negative ``stop`` counts from the end)."""
    return where(stop >= 0, minimum(stop, n), maximum(n + stop, 0))


def wrong_crop_negative_count(L: Any, gamma: Any, accepted: Any) -> Any:
    """``keys[:-k]`` with ``k`` the entries to remove: with ``k == 0`` it keeps nothing."""
    return python_slice_length(L + gamma, -(gamma - accepted))


def wrong_draft_sync_no_catch_up(L: Any, gamma: Any, accepted: Any) -> tuple[Any, Any]:
    """Crop the draft like the target and skip the catch-up after full acceptance."""
    return minimum(L + accepted, L - 1 + gamma), accepted * 0


def wrong_truncation_budget_first(block_len: Any, eos_index: Any, budget: Any) -> Any:
    """Length checked before stop tokens (SGLang #31599): a block crossing the budget is cut
    at the budget even when an EOS came earlier, leaking post-EOS tokens."""
    return where(block_len >= budget, budget, minimum(block_len, eos_index + 1))


def wrong_pages_floor(length: Any, page_size: Any) -> Any:
    """Pages kept after a crop computed with floor division: the partial last page is freed."""
    return floordiv(length, page_size)


def wrong_position_reset(row: Any, L: Any) -> Any:
    """Positions restarted at zero after a crop."""
    return row


def wrong_tree_visible_siblings(parents: Any, x: Any, y: Any, max_depth: int) -> Any:
    """A tree mask that also lets siblings see each other."""
    siblings = and_(x > 0, y > 0, parents[x] == parents[y])
    return or_(tree_visible(parents, x, y, max_depth), siblings)


def wrong_tree_position_causal(parents: Any, x: Any, y: Any, max_depth: int) -> Any:
    """Position-causal mask used as a tree mask: ``depth(y) <= depth(x)``."""
    return tree_depth(parents, y, max_depth) <= tree_depth(parents, x, max_depth)
