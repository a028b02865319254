"""Hypothesis strategies for speculative-decoding instances.

Use them in your own property tests, or let :func:`verispec.exact.search.find_counterexample`
use them to search and shrink::

    from hypothesis import given
    from verispec import strategies as vst

    @given(vst.chain_instances(max_vocab=3, max_gamma=2))
    def test_my_verifier(instance): ...

Shrinking goes toward small vocabularies, one draft, uniform rows (an all-zero weight
vector means uniform), context-free models and plain sampling settings, so a shrunk
counterexample is as small as the bug allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from hypothesis import strategies as st

from verispec.core.models import TableModel
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.trees import LAWS, TreeInstance

__all__ = [
    "DraftChain",
    "chain_instances",
    "conditional_models",
    "distributions",
    "draft_chains",
    "rows_from_weights",
    "tree_instances",
]

#: Largest integer weight of one token in a generated row: denominators stay small enough
#: to read, and 0..6 already gives ties, zeros and skew.
MAX_WEIGHT = 6


def rows_from_weights(weights: Sequence[int]) -> tuple[Fraction, ...]:
    """Normalise integer weights; all zeros means the uniform row."""
    total = sum(weights)
    if total == 0:
        return tuple(Fraction(1, len(weights)) for _ in weights)
    return tuple(Fraction(w, total) for w in weights)


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{name}={value!r} must be a positive integer")


def distributions(
    vocab_size: int, *, max_weight: int = MAX_WEIGHT
) -> st.SearchStrategy[tuple[Fraction, ...]]:
    """Exact distributions over ``vocab_size`` tokens, with zeros and ties."""
    _check_sizes(vocab_size=vocab_size, max_weight=max_weight)
    return st.lists(st.integers(0, max_weight), min_size=vocab_size, max_size=vocab_size).map(
        rows_from_weights
    )


@st.composite
def _table_model(draw: Any, vocab_size: int, depth: int, max_weight: int, max_overrides: int) -> TableModel:
    default = draw(distributions(vocab_size, max_weight=max_weight))
    prefix = st.lists(st.integers(0, vocab_size - 1), max_size=depth).map(tuple)
    overrides = draw(
        st.dictionaries(prefix, distributions(vocab_size, max_weight=max_weight), max_size=max_overrides)
    )
    return TableModel(overrides, default)


def conditional_models(
    vocab_size: int, depth: int, *, max_weight: int = MAX_WEIGHT, max_overrides: int = 4
) -> st.SearchStrategy[TableModel]:
    """Models with a default row and up to ``max_overrides`` prefix-specific rows.

    Prefixes have at most ``depth`` tokens. Shrinking removes overrides first, so a shrunk
    model is context-free unless the counterexample needs the context.
    """
    _check_sizes(vocab_size=vocab_size, max_weight=max_weight)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise UsageError(f"depth={depth!r} must be a non-negative integer")
    return _table_model(vocab_size, depth, max_weight, max_overrides)


_DEFAULT_SETTINGS = (SamplingConfig(),)


@st.composite
def _chain_instance(
    draw: Any,
    min_vocab: int,
    max_vocab: int,
    min_gamma: int,
    max_gamma: int,
    settings: tuple[SamplingConfig, ...],
    max_weight: int,
) -> ChainInstance:
    vocab = draw(st.integers(min_vocab, max_vocab))
    gamma = draw(st.integers(min_gamma, max_gamma))
    config = draw(st.sampled_from(settings))
    target = draw(conditional_models(vocab, gamma, max_weight=max_weight))
    draft = draw(conditional_models(vocab, max(gamma - 1, 0), max_weight=max_weight))
    return ChainInstance(target, draft, gamma, config)


def chain_instances(
    *,
    min_vocab: int = 2,
    max_vocab: int = 4,
    min_gamma: int = 1,
    max_gamma: int = 3,
    settings: Sequence[SamplingConfig] = _DEFAULT_SETTINGS,
    max_weight: int = MAX_WEIGHT,
) -> st.SearchStrategy[ChainInstance]:
    """Chain instances: target and draft models, ``gamma`` and a sampling config.

    ``settings`` lists the configs to draw from; the first is what shrinking goes toward.
    """
    _check_sizes(min_vocab=min_vocab, max_vocab=max_vocab, max_weight=max_weight)
    if min_vocab > max_vocab:
        raise UsageError(f"min_vocab={min_vocab} must be <= max_vocab={max_vocab}")
    if min_gamma < 0 or min_gamma > max_gamma:
        raise UsageError(f"min_gamma={min_gamma} must be in 0..max_gamma={max_gamma}")
    if not settings:
        raise UsageError("settings=() is empty; give at least one SamplingConfig")
    return _chain_instance(min_vocab, max_vocab, min_gamma, max_gamma, tuple(settings), max_weight)


@dataclass(frozen=True)
class DraftChain:
    """The inputs of one chain verification: what a black-box verifier is handed.

    ``target_probs`` has ``gamma + 1`` rows, ``draft_probs`` ``gamma`` rows, and every draft
    token has positive probability under its draft row.
    """

    instance: ChainInstance
    target_probs: tuple[tuple[Fraction, ...], ...]
    draft_probs: tuple[tuple[Fraction, ...], ...]
    draft_tokens: tuple[int, ...]


@st.composite
def _draft_chain(draw: Any, instances: st.SearchStrategy[ChainInstance]) -> DraftChain:
    instance = draw(instances)
    tokens: list[int] = []
    draft_rows = []
    for _ in range(instance.gamma):
        q = instance.draft_probs(tuple(tokens))
        tokens.append(draw(st.sampled_from([t for t, v in enumerate(q) if v > 0])))
        draft_rows.append(q)
    target_rows = tuple(instance.target_probs(tuple(tokens[:i])) for i in range(instance.gamma + 1))
    return DraftChain(instance, target_rows, tuple(draft_rows), tuple(tokens))


def draft_chains(**kwargs: Any) -> st.SearchStrategy[DraftChain]:
    """Drafted chains: an instance from :func:`chain_instances` (same keywords) and drafts
    drawn from its support, with the exact target and draft rows along them.
    """
    return _draft_chain(chain_instances(**kwargs))


#: Tree shapes (children per depth) searched by default: one to three siblings, depth <= 2.
TREE_SHAPES: tuple[tuple[int, ...], ...] = ((2,), (1, 2), (2, 1), (3,), (2, 2))


@st.composite
def _tree_instance(
    draw: Any,
    law: str,
    min_vocab: int,
    max_vocab: int,
    shapes: tuple[tuple[int, ...], ...],
    settings: tuple[SamplingConfig, ...],
    max_weight: int,
) -> TreeInstance:
    vocab = draw(st.integers(min_vocab, max_vocab))
    shape = draw(st.sampled_from(shapes))
    config = draw(st.sampled_from(settings))
    target = draw(conditional_models(vocab, len(shape), max_weight=max_weight))
    draft = draw(conditional_models(vocab, len(shape) - 1, max_weight=max_weight))
    extra = ()
    if law == "multi":
        extra = tuple(
            draw(conditional_models(vocab, len(shape) - 1, max_weight=max_weight))
            for _ in range(max(shape) - 1)
        )
    return TreeInstance(target, draft, shape, law, config, drafts=extra)


def tree_instances(
    law: str,
    *,
    min_vocab: int = 2,
    max_vocab: int = 3,
    shapes: Sequence[tuple[int, ...]] = TREE_SHAPES,
    settings: Sequence[SamplingConfig] = _DEFAULT_SETTINGS,
    max_weight: int = MAX_WEIGHT,
) -> st.SearchStrategy[TreeInstance]:
    """Tree instances for one candidate law (a key of ``verispec.verifiers.trees.LAWS``).

    Shrinking goes toward the first shape, two tokens, uniform context-free rows and the
    first sampling config.
    """
    _check_sizes(min_vocab=min_vocab, max_vocab=max_vocab, max_weight=max_weight)
    if law not in LAWS:
        raise UsageError(f"law={law!r} is not one of {', '.join(LAWS)}")
    if min_vocab > max_vocab:
        raise UsageError(f"min_vocab={min_vocab} must be <= max_vocab={max_vocab}")
    if not shapes or not settings:
        raise UsageError("shapes and settings must be non-empty")
    return _tree_instance(
        law, min_vocab, max_vocab, tuple(tuple(s) for s in shapes), tuple(settings), max_weight
    )
