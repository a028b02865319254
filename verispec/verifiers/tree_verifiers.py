"""Tree verifiers and tree controls, each a short function mirroring its paper or bug.

Signature (the black-box tree interface of DESIGN.md, with a ``Random``)::

    verify_tree(tree, rand) -> list[int]   # the accepted path (root excluded) + one token

Whether a tree verifier is exact depends on how the siblings were drawn; the registry
records the candidate law each is meant for, and ``verispec prove`` checks each verifier
against every law so the report says exactly where it is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

from verispec.core.ops import argmax, exp, log, normalize, one_like, positive_part, total, zero_like
from verispec.core.random import Random
from verispec.errors import NonConformance
from verispec.verifiers import chain
from verispec.verifiers.chain import acceptance_ratio, likelihood_ratio
from verispec.verifiers.registry import TREE_GREEDY_SETTINGS, tree_verifier
from verispec.verifiers.trees import DraftTree

__all__ = [
    "best_of_rows",
    "greedy_tree",
    "k_seq",
    "k_seq_rho_one",
    "mss",
    "mss_first_residual_only",
    "mss_merged_duplicates",
    "optimal_rho",
    "point_mass_tree",
    "rrs_without_replacement",
    "sample_and_match_tree",
    "traversal",
    "tree_match_acceptance",
    "typical_acceptance",
]

Row = Sequence[Any]


def _proposal(tree: DraftTree, child: int) -> Row:
    """The law ``child`` was drawn from, as the tree declares it (its drafter's row for ``multi``)."""
    if tree.sampling == "multi" and tree.sibling_probs is not None:
        return tree.sibling_probs[child]
    return tree.draft_probs[tree.parents[child]]


def _distinct_children(tree: DraftTree, node: int) -> list[int]:
    """Children in draw order, keeping the first of each token (later duplicates skipped)."""
    seen: set[int] = set()
    out = []
    for child in tree.children[node]:
        if tree.tokens[child] not in seen:
            seen.add(tree.tokens[child])
            out.append(child)
    return out


def tree_match_acceptance(tree: DraftTree) -> Any:
    """``E[accepted | tree] = sum over retained nodes v of p(path(v))`` (point-mass RRS,
    sample-and-match and greedy trees; duplicate siblings count once)."""
    total_mass: Any = Fraction(0)
    stack: list[tuple[int, Any]] = [(0, Fraction(1))]
    while stack:
        node, mass = stack.pop()
        for child in _distinct_children(tree, node):
            here = mass * tree.target_probs[node][tree.tokens[child]]
            if here:
                total_mass = total_mass + here
                stack.append((child, here))
    return total_mass


@tree_verifier(
    name="mss",
    kind="exact",
    laws=("iid", "multi"),
    summary="SpecInfer multi-step speculative sampling: recursive rejection with replacement",
    source="Miao et al., SpecInfer, ASPLOS 2024, Algorithm 2 (VerifyStochastic)",
)
def mss(tree: DraftTree, rand: Random) -> list[int]:
    """SpecInfer multi-step speculative sampling (Miao et al., ASPLOS 2024, Algorithm 2).

    Recursive rejection sampling *with* replacement: try the children in index order with
    ``min(1, P(x)/q_s(x))``; after each rejection ``P <- norm([P - q_s]_+)``; descend on
    acceptance; when every child is rejected (or at a leaf) emit a sample of ``P``. Exact for
    i.i.d. children and for one drafter per sibling.
    """
    node, block = 0, []
    while True:
        target = list(tree.target_probs[node])
        for child in tree.children[node]:
            x, q = tree.tokens[child], _proposal(tree, child)
            if rand.bernoulli(acceptance_ratio(target, q, x)):
                block.append(x)
                node = child
                break
            target = normalize(positive_part(target, q))
        else:
            block.append(rand.categorical(target))
            return block


@tree_verifier(
    name="rrs-without-replacement",
    kind="exact",
    laws=("wor",),
    summary="recursive rejection without replacement: q_j conditions on the earlier siblings",
    source="Jeon et al., Recursive Speculative Decoding, arXiv 2402.14160; Sequoia SpecTree",
)
def rrs_without_replacement(tree: DraftTree, rand: Random) -> list[int]:
    """Recursive rejection sampling *without* replacement (Jeon et al. 2024; Sequoia; EAGLE-1).

    The ``j``-th distinct child is tested against ``q_j``, the draft law with the earlier
    siblings removed and renormalised; ``P <- norm([P - q_j]_+)`` after each rejection.
    Exact for children drawn without replacement in draw order, and for i.i.d. children
    when duplicates are skipped (no test, no residual update), as here.
    """
    node, block = 0, []
    while True:
        target = list(tree.target_probs[node])
        remaining = list(tree.draft_probs[node])
        for child in _distinct_children(tree, node):
            x = tree.tokens[child]
            if not remaining[x] > 0:
                raise NonConformance(
                    f"tree node {child} (token {x}) has probability 0 under the without-replacement "
                    "law the verifier assumes: the siblings were not drawn from draft_probs "
                    "without replacement"
                )
            q_j = normalize(remaining)
            if rand.bernoulli(acceptance_ratio(target, q_j, x)):
                block.append(x)
                node = child
                break
            target = normalize(positive_part(target, q_j))
            remaining[x] = zero_like(remaining[x])
        else:
            block.append(rand.categorical(target))
            return block


@tree_verifier(
    name="point-mass-tree",
    kind="exact",
    laws=("det", "adaptive-det"),
    summary="EAGLE verification of deterministic candidates: accept x with P(x), zero it on rejection",
    source="Li et al., EAGLE/EAGLE-2/EAGLE-3, evaluate_posterior",
    acceptance=tree_match_acceptance,
)
def point_mass_tree(tree: DraftTree, rand: Random) -> list[int]:
    """EAGLE-style verification of deterministic candidates (recursive rejection, q = δ).

    Try each distinct child ``x`` with probability ``P(x)``; after a rejection zero ``x`` and
    renormalise. Exact for any candidate generator independent of the verifier's coins.
    """
    node, block = 0, []
    while True:
        target = list(tree.target_probs[node])
        for child in _distinct_children(tree, node):
            x = tree.tokens[child]
            if rand.bernoulli(target[x]):
                block.append(x)
                node = child
                break
            target[x] = zero_like(target[x])
            target = normalize(target)
        else:
            block.append(rand.categorical(target))
            return block


@tree_verifier(
    name="sample-and-match-tree",
    kind="exact",
    laws=("det", "iid"),
    summary="one target sample per node; descend while it matches a child",
    source="SpecInfer naive sampling; FlexFlow traverse_verify_tree",
    acceptance=tree_match_acceptance,
)
def sample_and_match_tree(tree: DraftTree, rand: Random) -> list[int]:
    """Sample-and-match on a tree: one target sample per node; descend while it matches a child.

    The first child with the sampled token is followed; a sample matching no child is the
    correction (at a leaf, the bonus). Ancestral sampling from ``p``: exact for any tree.
    """
    node, block = 0, []
    while True:
        y = rand.categorical(tree.target_probs[node])
        block.append(y)
        match = next((c for c in tree.children[node] if tree.tokens[c] == y), None)
        if match is None:
            return block
        node = match


def _cap(value: Any) -> Any:
    one = one_like(value)
    return one if value >= one else value


@tree_verifier(
    name="traversal",
    kind="exact",
    laws=("wor",),
    summary="traversal verification: leaf-to-root, p_alpha weights, residualised parents",
    source="Weng et al., Traversal Verification for Speculative Tree Decoding, NeurIPS 2025",
)
def traversal(tree: DraftTree, rand: Random) -> list[int]:
    """Traversal verification (Weng et al., NeurIPS 2025), leaf to root.

    ``p_α(root) = 1`` and ``p_α(v) = min(p_α(u) M_b(x|u) / M_s(x|u), 1)`` top-down. Repeatedly
    take the first leaf ``v`` in post-order (first remaining child at every level): accept
    the path to ``v`` with probability ``p_α(v)`` and emit a sample of ``v``'s current
    ``M_b``; otherwise delete ``v`` and update its parent ``u``::

        S = sum [p_α(u) M_b(.|u) - M_s(.|u)]_+
        M_b(.|u) <- [p_α(u) M_b(.|u) - M_s(.|u)]_+ / S
        M_s(.|u) <- M_s(.|u) without token(v), renormalised
        p_α(u)   <- S / (S + 1 - p_α(u))

    then recompute ``p_α`` below ``u``. Exact for children drawn without replacement in draw
    order (and i.i.d. children with duplicates skipped); on a chain it is block verification.
    Reconstructed from the paper and checked by exact enumeration.
    """
    n = len(tree.tokens)
    kids = [_distinct_children(tree, u) for u in range(n)]
    mb = [list(r) for r in tree.target_probs]
    ms = [list(r) for r in tree.draft_probs]
    one = one_like(mb[0][0])
    alpha: list[Any] = [one] * n

    def recompute(u: int) -> None:
        stack = [u]
        while stack:
            w = stack.pop()
            for c in kids[w]:
                alpha[c] = (
                    zero_like(one)
                    if alpha[w] == 0
                    else _cap(alpha[w] * likelihood_ratio(mb[w], ms[w], tree.tokens[c]))
                )
                stack.append(c)

    recompute(0)
    while True:
        v = 0
        while kids[v]:
            v = kids[v][0]
        if rand.bernoulli(alpha[v]):
            return [*tree.path(v), rand.categorical(mb[v])]
        u = tree.parents[v]
        kids[u].pop(0)
        residual = positive_part([alpha[u] * b for b in mb[u]], ms[u])
        s = total(residual)
        mb[u] = normalize(residual) if s > 0 else residual  # unused when s == 0: alpha(u) becomes 0
        ms[u][tree.tokens[v]] = zero_like(one)
        ms[u] = normalize(ms[u]) if total(ms[u]) > 0 else ms[u]
        denominator = s + (one - alpha[u])
        alpha[u] = s / denominator if denominator > 0 else one
        recompute(u)


# ------------------------------------------------------------------------------- K-SEQ


def _beta(p: Row, q: Row, rho: Any) -> Any:
    acc = zero_like(rho)
    for px, qx in zip(p, q, strict=True):
        scaled = px / rho
        acc = acc + (qx if qx < scaled else scaled)
    return acc


def _kseq_valid(p: Row, q: Row, k: int, rho: Any) -> bool:
    beta = _beta(p, q, rho)
    return bool(1 - (1 - beta) ** k <= rho * beta)


#: Resolution of the search for the smallest valid rho (a dyadic rational, exact).
RHO_BITS = 16


@lru_cache(maxsize=65536)
def _optimal_rho_cached(p: tuple[Any, ...], q: tuple[Any, ...], k: int) -> Any:
    one = one_like(p[0])
    if _kseq_valid(p, q, k, one):
        return one
    lo, hi = one, one * k  # rho = k is always valid (Bernoulli's inequality)
    step = Fraction(1, 2**RHO_BITS) if isinstance(one, Fraction) else 2.0**-RHO_BITS
    while hi - lo > step:
        mid = (lo + hi) / 2
        if _kseq_valid(p, q, k, mid):
            hi = mid
        else:
            lo = mid
    return hi


def optimal_rho(p: Row, q: Row, k: int) -> Any:
    """The smallest valid ``rho`` of K-SEQ to within ``2**-RHO_BITS`` (never an invalid one).

    Validity is ``1 - (1 - beta(rho))^k <= rho beta(rho)`` with ``beta(rho) = sum min(q, p/rho)``;
    it is monotone in ``rho`` and always holds at ``rho = k``.
    """
    return _optimal_rho_cached(tuple(p), tuple(q), k)


def _kseq_residual(p: Row, q: Row, k: int, rho: Any) -> list[Any]:
    beta = _beta(p, q, rho)
    if beta == 0:
        return list(p)
    miss = (1 - beta) ** k
    accept = 1 - miss
    return [
        (px - (qx if qx < px / rho else px / rho) * accept / beta) / miss for px, qx in zip(p, q, strict=True)
    ]


def _k_seq(tree: DraftTree, rand: Random, rho_of: Any, clamp: bool) -> list[int]:
    node, block = 0, []
    while True:
        p, q = tree.target_probs[node], tree.draft_probs[node]
        kids = tree.children[node]
        if not kids:
            block.append(rand.categorical(p))
            return block
        rho = rho_of(p, q, len(kids))
        for child in kids:
            x = tree.tokens[child]
            if rand.bernoulli(_cap(likelihood_ratio(p, q, x) / rho)):
                block.append(x)
                node = child
                break
        else:
            residual = _kseq_residual(p, q, len(kids), rho)
            if clamp:
                residual = [v if v > 0 else zero_like(v) for v in residual]
            block.append(rand.categorical(residual))
            return block


@tree_verifier(
    name="k-seq",
    kind="exact",
    laws=("iid",),
    summary="SpecTr K-SEQ at each node with the smallest valid rho",
    source="Sun et al., SpecTr, NeurIPS 2023",
)
def k_seq(tree: DraftTree, rand: Random) -> list[int]:
    """SpecTr K-SEQ (Sun et al., NeurIPS 2023) at every node, with the smallest valid ``rho``.

    Accept the ``i``-th of ``k`` i.i.d. candidates with ``min(1, p(x) / (rho q(x)))``; if none
    passes, emit from ``p_res(x) = [p(x) - min(q(x), p(x)/rho) (1 - (1-beta)^k) / beta] / (1-beta)^k``.
    Exact for i.i.d. candidates whenever ``rho`` is valid.
    """
    return _k_seq(tree, rand, optimal_rho, clamp=False)


@tree_verifier(
    name="greedy-tree",
    kind="exact",
    laws=("det", "iid"),
    summary="follow the child equal to the target argmax (temperature 0)",
    source="greedy contract; Medusa/EAGLE greedy tree verification",
    acceptance=tree_match_acceptance,
    settings=TREE_GREEDY_SETTINGS,
)
def greedy_tree(tree: DraftTree, rand: Random) -> list[int]:
    """Greedy tree verification: follow the child equal to the target argmax; emit the argmax."""
    node, block = 0, []
    while True:
        best = argmax(tree.target_probs[node])
        block.append(best)
        match = next((c for c in tree.children[node] if tree.tokens[c] == best), None)
        if match is None:
            return block
        node = match


# ---------------------------------------------------------------------------- controls

tree_verifier(
    name="mss-without-replacement",
    kind="control",
    laws=("wor",),
    summary="MSS applied to children drawn without replacement (unchanged q)",
    source="Jeon et al., arXiv 2402.14160 (q must condition on the earlier siblings); Sequoia samples "
    "with replacement=False",
)(mss)
tree_verifier(
    name="mss-deterministic-softmax-q",
    kind="control",
    laws=("det",),
    summary="top-k children verified by MSS with the softmax q",
    source="Infini-AI-Lab/Sequoia tests/specinfer_run.py; the misreading in SafeAILab/EAGLE #329",
)(mss)


@tree_verifier(
    name="mss-merged-duplicates",
    kind="control",
    laws=("iid",),
    summary="MSS on a trie that merged duplicate siblings (residual updated once)",
    source="a trie merges repeated draws; p=(0,1/3,2/3), q=(2/3,0,1/3) gives (0, 2/9, 7/9) "
    "(proofs/thm_multidraft_reference_values.py)",
)
def mss_merged_duplicates(tree: DraftTree, rand: Random) -> list[int]:
    """Wrong: MSS on a trie that merged duplicate siblings, so a repeated draw updates the
    residual once instead of once per draw."""
    node, block = 0, []
    while True:
        target = list(tree.target_probs[node])
        for child in _distinct_children(tree, node):
            x, q = tree.tokens[child], _proposal(tree, child)
            if rand.bernoulli(acceptance_ratio(target, q, x)):
                block.append(x)
                node = child
                break
            target = normalize(positive_part(target, q))
        else:
            block.append(rand.categorical(target))
            return block


@tree_verifier(
    name="mss-first-residual-only",
    kind="control",
    laws=("iid",),
    summary="MSS whose residual is updated after the first rejected sibling only",
    source="a planted later-sibling bug (a residual update guarded to the first sibling, as code written "
    "for two-way trees has it), which the three-token tree battery saw only on its skewed instances",
)
def mss_first_residual_only(tree: DraftTree, rand: Random) -> list[int]:
    """Wrong: MSS that updates ``P <- norm([P - q]_+)`` after the first rejected sibling only, so
    the third and later siblings, and the correction after them, use a stale residual."""
    node, block = 0, []
    while True:
        target = list(tree.target_probs[node])
        for j, child in enumerate(tree.children[node]):
            x, q = tree.tokens[child], _proposal(tree, child)
            if rand.bernoulli(acceptance_ratio(target, q, x)):
                block.append(x)
                node = child
                break
            if j == 0:
                target = normalize(positive_part(target, q))
        else:
            block.append(rand.categorical(target))
            return block


#: Medusa's typical-acceptance defaults: posterior_threshold and posterior_alpha.
TYPICAL_EPSILON = Fraction(9, 100)
TYPICAL_DELTA = Fraction(3, 10)


@tree_verifier(
    name="typical-acceptance",
    kind="control",
    laws=("det",),
    summary="Medusa typical acceptance: a deterministic entropy threshold",
    source="FasterDecoding/Medusa get_typical_posterior_mask (Cai et al., ICML 2024)",
)
def typical_acceptance(tree: DraftTree, rand: Random) -> list[int]:
    """Wrong (lossy by design): Medusa's typical acceptance.

    Follow the first child ``x`` with ``p(x) > min(epsilon, delta exp(-H(p)))`` (Cai et al. 2024,
    defaults 0.09 and 0.3); where no child passes, emit a sample of ``p``.
    """
    node, block = 0, []
    while True:
        p = tree.target_probs[node]
        entropy = -total([px * log(px) if px > 0 else zero_like(px) for px in p])
        bound = TYPICAL_DELTA * exp(-entropy)
        threshold = bound if bound < TYPICAL_EPSILON else TYPICAL_EPSILON
        match = next((c for c in tree.children[node] if p[tree.tokens[c]] > threshold), None)
        if match is None:
            block.append(rand.categorical(p))
            return block
        block.append(tree.tokens[match])
        node = match


@tree_verifier(
    name="best-of-rows",
    kind="control",
    laws=("iid",),
    summary="independently verified rows, the longest kept",
    source="FasterDecoding/Medusa nucleus and typical non-fast paths (evaluate_posterior)",
)
def best_of_rows(tree: DraftTree, rand: Random) -> list[int]:
    """Wrong: verify every root-to-leaf row independently (own coins, token-level) and keep
    the longest accepted block (the first on ties), as Medusa's non-fast paths do."""
    best: list[int] = []
    for leaf in range(len(tree.tokens)):
        if tree.children[leaf]:
            continue
        nodes = []
        node = leaf
        while node > 0:
            nodes.append(node)
            node = tree.parents[node]
        nodes.reverse()
        path_nodes = [0, *nodes]
        target_rows = [tree.target_probs[v] for v in path_nodes]
        draft_rows = [_proposal(tree, v) for v in nodes]
        block = chain.token_level(target_rows, draft_rows, [tree.tokens[v] for v in nodes], rand)
        if len(block) > len(best):
            best = block
    return best


@tree_verifier(
    name="k-seq-rho-one",
    kind="control",
    laws=("iid",),
    summary="K-SEQ with rho = 1 and k >= 2 (negative residual, clamped)",
    source="Sun et al., SpecTr, NeurIPS 2023: validity needs 1-(1-beta)^k <= rho beta",
)
def k_seq_rho_one(tree: DraftTree, rand: Random) -> list[int]:
    """Wrong: K-SEQ with ``rho = 1`` and ``k >= 2``; the residual goes negative and, clamped at
    zero and renormalised as a kernel would, biases the output."""
    return _k_seq(tree, rand, lambda p, q, k: one_like(p[0]), clamp=True)
