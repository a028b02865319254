"""Draft trees: the black-box tree interface, tree instances, and drafting policies.

A :class:`DraftTree` matches the black-box tree interface of DESIGN.md: ``tokens`` (node 0
is the root, the pending token), ``parents`` (``parents[0] == -1``, ``parents[i] < i``),
``target_probs`` (the target law after the path to node ``i``), ``draft_probs`` (the law
node ``i``'s children were drawn from) and ``sampling``:

* ``"iid"``: the children of a node are i.i.d. draws from its draft law, in draw order,
  duplicates kept;
* ``"without_replacement"``: sequential draws without replacement, in draw order;
* ``"deterministic"``: the children are a function of the draft law (top-k, n-gram);
* ``"multi"``: the ``j``-th child of every node comes from its own drafter ``j``;
  ``sibling_probs[i]`` is the law node ``i`` itself was drawn from.

A :class:`TreeInstance` fixes the models, the shape (children per depth), the drafting
policy (the *candidate law*) and the sampling settings; a drafting policy turns it into a
random :class:`DraftTree` using the same ``Random`` the verifier uses, so the exact
executor enumerates the drafted trees too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from verispec.core.models import ConditionalModel, ProcessedModel
from verispec.core.ops import point_mass
from verispec.core.random import Random
from verispec.core.transforms import SamplingConfig
from verispec.errors import NonConformance, UsageError

__all__ = [
    "LAWS",
    "SAMPLING_CLASSES",
    "DraftTree",
    "TreeInstance",
    "TreeVerify",
    "run_tree_round",
]

Prefix = tuple[int, ...]
Row = Sequence[Any]
SAMPLING_CLASSES = ("iid", "without_replacement", "deterministic", "multi")


@dataclass(frozen=True, eq=False)
class DraftTree:
    """A drafted token tree with its target and draft laws (see the module docstring)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]
    target_probs: tuple[Row, ...]
    draft_probs: tuple[Row, ...]
    sampling: str
    sibling_probs: tuple[Row, ...] | None = None
    children: tuple[tuple[int, ...], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if n == 0:
            raise UsageError("tree has no nodes; node 0 must be the root (the pending token)")
        if self.sampling not in SAMPLING_CLASSES:
            raise UsageError(f"tree.sampling={self.sampling!r} is not one of {', '.join(SAMPLING_CLASSES)}")
        for fname in ("parents", "target_probs", "draft_probs"):
            got = len(getattr(self, fname))
            if got != n:
                raise UsageError(f"tree.{fname} has {got} entries but tree.tokens has {n} nodes")
        if self.parents[0] != -1:
            raise UsageError(f"tree.parents[0]={self.parents[0]} must be -1: node 0 is the root")
        vocab = len(self.target_probs[0])
        children: list[list[int]] = [[] for _ in range(n)]
        for i in range(1, n):
            parent = self.parents[i]
            if not isinstance(parent, int) or not 0 <= parent < i:
                raise UsageError(
                    f"tree node {i}: parents[{i}]={parent} must be a node index smaller than {i} "
                    "(this also rules out cycles)"
                )
            token = self.tokens[i]
            if not isinstance(token, int) or not 0 <= token < vocab:
                raise UsageError(
                    f"tree node {i}: tokens[{i}]={token!r} is outside the vocabulary 0..{vocab - 1}"
                )
            children[parent].append(i)
        for i in range(n):
            for fname in ("target_probs", "draft_probs"):
                row = getattr(self, fname)[i]
                if len(row) != vocab:
                    raise UsageError(
                        f"tree node {i}: {fname}[{i}] has {len(row)} entries, expected V={vocab}"
                    )
        if self.sampling == "multi" and (self.sibling_probs is None or len(self.sibling_probs) != n):
            raise UsageError("tree.sibling_probs must give one row per node when sampling='multi'")
        if self.sampling == "without_replacement":
            for kids in children:
                seen: dict[int, int] = {}
                for kid in kids:
                    if self.tokens[kid] in seen:
                        raise UsageError(
                            f"tree node {kid} duplicates its sibling node {seen[self.tokens[kid]]} "
                            f"(token {self.tokens[kid]}) under sampling='without_replacement'"
                        )
                    seen[self.tokens[kid]] = kid
        object.__setattr__(self, "children", tuple(tuple(k) for k in children))

    @property
    def vocab_size(self) -> int:
        return len(self.target_probs[0])

    def path(self, node: int) -> tuple[int, ...]:
        """The tokens from the root (excluded) to ``node`` (included)."""
        out: list[int] = []
        while node > 0:
            out.append(self.tokens[node])
            node = self.parents[node]
        return tuple(reversed(out))

    def depth(self, node: int) -> int:
        return len(self.path(node))

    @property
    def max_depth(self) -> int:
        return max(self.depth(i) for i in range(len(self.tokens)))


TreeVerify = Callable[[DraftTree, Random], Sequence[int]]


@dataclass(frozen=True, eq=False)
class TreeInstance:
    """Everything a tree round depends on.

    ``shape[d]`` is the number of children each node at depth ``d`` gets (fewer under
    ``without_replacement`` when the support runs out). ``law`` is the drafting policy, a
    key of :data:`LAWS`. ``drafts`` are extra draft models for the ``multi`` law (the
    ``j``-th sibling comes from ``(draft, *drafts)[j]``). ``expand[d - 1]``, where given,
    is how many nodes at depth ``d`` (the first, in drafting order) get children: the others
    end their paths early, so paths of several depths share one tree.
    """

    target: ConditionalModel
    draft: ConditionalModel
    shape: tuple[int, ...]
    law: str
    config: SamplingConfig = field(default_factory=SamplingConfig)
    context: Prefix = ()
    drafts: tuple[ConditionalModel, ...] = ()
    threshold: Fraction = Fraction(1, 4)
    expand: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.law not in LAWS:
            raise UsageError(f"law={self.law!r} is not one of {', '.join(LAWS)}")
        shape = tuple(self.shape)
        if not shape or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in shape):
            raise UsageError(f"shape={self.shape!r} must be a non-empty sequence of positive widths")
        object.__setattr__(self, "shape", shape)
        expand = tuple(self.expand)
        if len(expand) >= len(shape) or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in expand
        ):
            raise UsageError(
                f"expand={self.expand!r} must give a positive count for some of depths 1..{len(shape) - 1}"
            )
        object.__setattr__(self, "expand", expand)
        vocab = self.target.vocab_size
        for name, model in [("draft", self.draft), *((f"drafts[{j}]", m) for j, m in enumerate(self.drafts))]:
            if model.vocab_size != vocab:
                raise UsageError(
                    f"vocabulary mismatch: the target has vocab_size={vocab} but {name} has "
                    f"vocab_size={model.vocab_size}"
                )
        if self.law == "multi" and 1 + len(self.drafts) < max(shape):
            raise UsageError(
                f"law='multi' needs one drafter per sibling: shape {shape} has up to {max(shape)} "
                f"siblings but {1 + len(self.drafts)} draft model(s) were given"
            )
        context = tuple(self.context)
        for i, t in enumerate(context):
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
                raise UsageError(f"context[{i}]={t!r} is not a token id in 0..{vocab - 1}")
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "_p", ProcessedModel(self.target, self.config))
        object.__setattr__(
            self, "_qs", tuple(ProcessedModel(m, self.config) for m in (self.draft, *self.drafts))
        )

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    @property
    def gamma(self) -> int:
        """The depth of the tree: the most drafts a round can accept."""
        return len(self.shape)

    def target_probs(self, prefix: Prefix) -> Row:
        return self._p.probs(self.context + prefix)  # type: ignore[attr-defined,no-any-return]

    def draft_probs(self, prefix: Prefix, drafter: int = 0) -> Row:
        return self._qs[drafter].probs(self.context + prefix)  # type: ignore[attr-defined,no-any-return]

    def with_context(self, context: Prefix) -> TreeInstance:
        """The same instance after another context; the row caches are shared."""
        other = TreeInstance(
            self.target,
            self.draft,
            self.shape,
            self.law,
            self.config,
            context,
            self.drafts,
            self.threshold,
            self.expand,
        )
        object.__setattr__(other, "_p", self._p)  # type: ignore[attr-defined]
        object.__setattr__(other, "_qs", self._qs)  # type: ignore[attr-defined]
        return other

    def describe(self) -> str:
        expand = f" expand={list(self.expand)}" if self.expand else ""
        return (
            f"V={self.vocab_size} shape={list(self.shape)}{expand} law={self.law} {self.config.describe()}"
            + (f" context={list(self.context)}" if self.context else "")
        )


# ----------------------------------------------------------------------------- drafting

ChildPolicy = Callable[[TreeInstance, Prefix, int, Random], list[tuple[int, Row | None]]]


def _iid(instance: TreeInstance, prefix: Prefix, width: int, rand: Random) -> list[tuple[int, Row | None]]:
    q = instance.draft_probs(prefix)
    return [(rand.categorical(q), None) for _ in range(width)]


def _without_replacement(
    instance: TreeInstance, prefix: Prefix, width: int, rand: Random
) -> list[tuple[int, Row | None]]:
    """Sequential sampling without replacement, in draw order (stops when the support runs out)."""
    remaining = list(instance.draft_probs(prefix))
    out: list[tuple[int, Row | None]] = []
    for _ in range(width):
        if not any(v > 0 for v in remaining):
            break
        x = rand.categorical(remaining)
        out.append((x, None))
        remaining[x] = remaining[x] * 0
    return out


def _top_k(q: Row, k: int) -> list[int]:
    order = sorted((t for t in range(len(q)) if q[t] > 0), key=lambda t: (-q[t], t))
    return order[:k]


def _deterministic(
    instance: TreeInstance, prefix: Prefix, width: int, rand: Random
) -> list[tuple[int, Row | None]]:
    """The ``width`` most probable draft tokens, most probable first (lowest id on ties)."""
    return [(x, None) for x in _top_k(instance.draft_probs(prefix), width)]


def _multi(instance: TreeInstance, prefix: Prefix, width: int, rand: Random) -> list[tuple[int, Row | None]]:
    """Sibling ``j`` drawn from drafter ``j``, independently."""
    out: list[tuple[int, Row | None]] = []
    for j in range(width):
        q = instance.draft_probs(prefix, j)
        out.append((rand.categorical(q), q))
    return out


def _path_probability(instance: TreeInstance, prefix: Prefix) -> Any:
    prob: Any = Fraction(1)
    for i, x in enumerate(prefix):
        prob = prob * instance.draft_probs(prefix[:i])[x]
    return prob


def _adaptive_deterministic(
    instance: TreeInstance, prefix: Prefix, width: int, rand: Random
) -> list[tuple[int, Row | None]]:
    """EAGLE-2-like dynamic tree: top-``width`` children whose draft path probability
    reaches ``instance.threshold``. The shape depends on draft information only."""
    base = _path_probability(instance, prefix)
    q = instance.draft_probs(prefix)
    return [(x, None) for x in _top_k(q, width) if base * q[x] >= instance.threshold]


def _adaptive_iid(
    instance: TreeInstance, prefix: Prefix, width: int, rand: Random
) -> list[tuple[int, Row | None]]:
    """I.i.d. children, as many as ``width`` when the draft is unsure (max q < 1/2), else one."""
    q = instance.draft_probs(prefix)
    return _iid(instance, prefix, width if max(q) < Fraction(1, 2) else 1, rand)


#: Candidate laws: the drafting policy and the sampling class it declares.
LAWS: dict[str, tuple[ChildPolicy, str]] = {
    "iid": (_iid, "iid"),
    "wor": (_without_replacement, "without_replacement"),
    "det": (_deterministic, "deterministic"),
    "multi": (_multi, "multi"),
    "adaptive-det": (_adaptive_deterministic, "deterministic"),
    "adaptive-iid": (_adaptive_iid, "iid"),
}


def draft_tree(instance: TreeInstance, rand: Random) -> DraftTree:
    """Draft a tree breadth-first (so ``parents[i] < i``) with the instance's policy."""
    policy, sampling = LAWS[instance.law]
    tokens: list[int] = [instance.context[-1] if instance.context else -1]
    parents: list[int] = [-1]
    paths: list[Prefix] = [()]
    sibling: list[Row] = [point_mass(0, instance.vocab_size)]
    frontier = [0]
    for depth, width in enumerate(instance.shape):
        if 1 <= depth <= len(instance.expand):
            frontier = frontier[: instance.expand[depth - 1]]
        next_frontier = []
        for node in frontier:
            for x, row in policy(instance, paths[node], width, rand):
                tokens.append(x)
                parents.append(node)
                paths.append((*paths[node], x))
                sibling.append(row if row is not None else instance.draft_probs(paths[node]))
                next_frontier.append(len(tokens) - 1)
        frontier = next_frontier
    return DraftTree(
        tokens=tuple(tokens),
        parents=tuple(parents),
        target_probs=tuple(instance.target_probs(p) for p in paths),
        draft_probs=tuple(instance.draft_probs(p) for p in paths),
        sampling=sampling,
        sibling_probs=tuple(sibling) if sampling == "multi" else None,
    )


def run_tree_round(verify: TreeVerify, instance: TreeInstance, rand: Random) -> tuple[int, ...]:
    """One tree round: draft a tree, verify it, check the block's shape.

    The block must be a root-to-node path of the tree followed by exactly one more token;
    anything else is a :class:`~verispec.errors.NonConformance`.
    """
    tree = draft_tree(instance, rand)
    block = tuple(verify(tree, rand))
    vocab = instance.vocab_size
    if not block:
        raise NonConformance("the tree verifier returned an empty block; a round commits at least one token")
    for t in block:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
            raise NonConformance(
                f"the tree verifier returned token {t!r}, outside the vocabulary 0..{vocab - 1}"
            )
    nodes = [0]  # duplicate siblings make several nodes share a token path
    for i, t in enumerate(block[:-1]):
        nodes = [c for n in nodes for c in tree.children[n] if tree.tokens[c] == t]
        if not nodes:
            raise NonConformance(
                f"the tree verifier accepted {list(block[: i + 1])}, which is not a path of the drafted tree"
            )
    return block
