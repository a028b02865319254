"""The optimal one-node acceptance for k drafts, and how far each tree verifier is from it.

With drafts ``D = (X_1..X_k)`` of law ``Q`` and the target ``p``, a lossless verifier is a
coupling of ``Q`` and ``p`` (output ``Y ~ p``); the best acceptance is the linear program

    maximize  sum_{d, y in d} pi(d, y)
    subject to sum_y pi(d, y) = Q(d),  sum_d pi(d, y) = p(y),  pi >= 0

(SpecTr's optimal transport with membership cost). :func:`optimal_acceptance_lp` solves it
with scipy; :func:`optimal_acceptance` evaluates the max-flow / min-cut closed form
``alpha* = min over token sets T of p(T) + Pr_Q(D not inside T)`` exactly (Fractions), and
the tests check that the two agree.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.core.models import FixedModel
from verispec.errors import UsageError
from verispec.exact.criterion import round_law
from verispec.verifiers import registry
from verispec.verifiers.trees import TreeInstance

__all__ = [
    "OptimumRow",
    "draft_law",
    "one_node_acceptance",
    "optimal_acceptance",
    "optimal_acceptance_lp",
    "optimum_table",
]

DraftLaw = dict[tuple[int, ...], Fraction]


def draft_law(q: Sequence[Fraction], k: int, law: str) -> DraftLaw:
    """The exact law of the ``k`` drafts: ``"iid"``, ``"wor"`` (sequential, in draw order) or
    ``"det"`` (the top-``k`` tokens, with probability one)."""
    if law == "det":
        top = sorted((t for t in range(len(q)) if q[t] > 0), key=lambda t: (-q[t], t))[:k]
        return {tuple(top): Fraction(1)}
    if law == "iid":
        out: DraftLaw = {}
        for d in itertools.product(range(len(q)), repeat=k):
            w = Fraction(1)
            for x in d:
                w *= q[x]
            if w:
                out[d] = w
        return out
    if law == "wor":
        out = {}
        for d in itertools.permutations(range(len(q)), k):
            w, left = Fraction(1), Fraction(1)
            for x in d:
                if left == 0:
                    w = Fraction(0)
                    break
                w *= q[x] / left
                left -= q[x]
            if w:
                out[d] = w
        return out
    raise UsageError(f"law={law!r} must be 'iid', 'wor' or 'det' for the one-node optimum")


def optimal_acceptance(p: Sequence[Fraction], drafts: DraftLaw) -> Fraction:
    """``alpha* = min_T [p(T) + Pr(D not inside T)]``, exactly (enumerates all token sets)."""
    vocab = len(p)
    best: Fraction | None = None
    for mask in range(1 << vocab):
        inside = {t for t in range(vocab) if mask >> t & 1}
        value = sum((p[t] for t in inside), Fraction(0)) + sum(
            (w for d, w in drafts.items() if not set(d) <= inside), Fraction(0)
        )
        best = value if best is None or value < best else best
    assert best is not None
    return best


def optimal_acceptance_lp(p: Sequence[Fraction], drafts: DraftLaw) -> float:
    """The same optimum by linear programming (scipy ``linprog``, HiGHS), in floats."""
    import numpy as np  # deferred: heavy
    from scipy.optimize import linprog  # deferred: heavy

    tuples = list(drafts)
    vocab = len(p)
    n = len(tuples) * vocab
    cost = np.zeros(n)
    rows, rhs = [], []
    for i, d in enumerate(tuples):
        for y in range(vocab):
            if y in d:
                cost[i * vocab + y] = -1.0
        row = np.zeros(n)
        row[i * vocab : (i + 1) * vocab] = 1.0
        rows.append(row)
        rhs.append(float(drafts[d]))
    for y in range(vocab):
        row = np.zeros(n)
        row[y::vocab] = 1.0
        rows.append(row)
        rhs.append(float(p[y]))
    result = linprog(cost, A_eq=np.array(rows), b_eq=np.array(rhs), bounds=(0, None), method="highs")
    if not result.success:
        raise RuntimeError(f"linprog failed: {result.message}")
    return float(-result.fun)


def one_node_acceptance(
    name: str, target: Sequence[Fraction], draft: Sequence[Fraction], k: int, law: str
) -> Fraction:
    """``Pr(the first token is a draft)`` for tree verifier ``name`` on one node with ``k`` children."""
    instance = TreeInstance(FixedModel(target), FixedModel(draft), (k,), law)
    law_of_blocks = round_law(registry.get(name), instance)
    return sum((w for block, w in law_of_blocks.items() if len(block) == 2), Fraction(0))


@dataclass(frozen=True)
class OptimumRow:
    """One verifier's one-node acceptance against the optimum for its candidate law."""

    label: str
    law: str
    k: int
    verifier: str
    acceptance: Fraction
    optimum: Fraction
    optimum_lp: float

    @property
    def gap(self) -> Fraction:
        return self.optimum - self.acceptance

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.label,
            "law": self.law,
            "k": self.k,
            "verifier": self.verifier,
            "acceptance": str(self.acceptance),
            "acceptance_float": float(self.acceptance),
            "optimum": str(self.optimum),
            "optimum_float": float(self.optimum),
            "optimum_lp": self.optimum_lp,
            "gap": float(self.gap),
        }


#: (label, target, draft): the catalog's worked example and two skewed pairs.
REFERENCE_PAIRS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("p=(1/6,1/3,1/2), q=(1/2,1/3,1/6)", ("1/6", "1/3", "1/2"), ("1/2", "1/3", "1/6")),
    ("p=(1/2,3/10,1/5), q=(1/5,1/5,3/5)", ("1/2", "3/10", "1/5"), ("1/5", "1/5", "3/5")),
    (
        "p=(2/5,1/4,3/20,1/5), q=(1/10,1/2,1/5,1/5)",
        ("2/5", "1/4", "3/20", "1/5"),
        ("1/10", "1/2", "1/5", "1/5"),
    ),
)


def optimum_table(ks: Sequence[int] = (2, 3)) -> list[OptimumRow]:
    """Each exact tree verifier's one-node acceptance on its laws (iid, wor, det) against alpha*."""
    rows = []
    for label, p_text, q_text in REFERENCE_PAIRS:
        p = tuple(Fraction(v) for v in p_text)
        q = tuple(Fraction(v) for v in q_text)
        for k in ks:
            for law in ("iid", "wor", "det"):
                if law == "wor" and k > sum(1 for v in q if v > 0):
                    continue
                drafts = draft_law(q, k, law)
                best, best_lp = optimal_acceptance(p, drafts), optimal_acceptance_lp(p, drafts)
                for entry in registry.verifiers("exact", family="tree"):
                    assert isinstance(entry, registry.TreeVerifier)
                    if law not in entry.laws or entry.name == "greedy-tree":
                        continue
                    acc = one_node_acceptance(entry.name, p, q, k, law)
                    rows.append(OptimumRow(label, law, k, entry.name, acc, best, best_lp))
    return rows
