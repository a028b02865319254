"""Exact expected accepted length of every exact verifier on reference instances.

For each verifier and instance, ``E[K]`` is computed twice: from the enumerated block law
(``E[len(block)] - 1``) and by the tail-sum identity from the verifier's closed-form
acceptance profile. They must agree; the table shows how the verifiers compare (block
verification is never below token-level, point-mass drafts trade acceptance for zero draft
entropy, and so on).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.core.models import FixedModel, RandomRationalModel
from verispec.core.transforms import SamplingConfig
from verispec.exact.criterion import check_round
from verispec.verifiers import registry
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.trees import TreeInstance

__all__ = [
    "LengthRow",
    "length_table",
    "reference_instances",
    "reference_tree_instances",
    "tree_length_table",
]


def reference_instances() -> list[tuple[str, ChainInstance]]:
    """Named instances on which the expected lengths are tabulated."""
    article = (FixedModel(["1/2", "3/10", "1/5"]), FixedModel(["1/5", "1/5", "3/5"]))
    toy = (FixedModel(["1/3", "2/3"]), FixedModel(["2/3", "1/3"]))
    random_pair = (RandomRationalModel(4, seed=2026), RandomRationalModel(4, seed=2027))
    return [
        ("audit article p, q (context-free), gamma=3", ChainInstance(*article, 3)),
        ("block toy example, gamma=2", ChainInstance(*toy, 2)),
        ("random rational V=4 (seeds 2026, 2027), gamma=3", ChainInstance(*random_pair, 3)),
        (
            "random rational V=4, gamma=3, T=1/2 top_k=3",
            ChainInstance(*random_pair, 3, SamplingConfig(temperature=Fraction(1, 2), top_k=3)),
        ),
    ]


@dataclass(frozen=True)
class LengthRow:
    verifier: str
    instance: str
    expected_accepted: Fraction
    tail_sum: Fraction | None
    exact: bool

    @property
    def agrees(self) -> bool:
        return self.tail_sum is None or self.tail_sum == self.expected_accepted

    def to_json(self) -> dict[str, Any]:
        return {
            "verifier": self.verifier,
            "instance": self.instance,
            "expected_accepted": str(self.expected_accepted),
            "expected_accepted_float": float(self.expected_accepted),
            "tail_sum": None if self.tail_sum is None else str(self.tail_sum),
            "agrees": self.agrees,
            "round_exact": self.exact,
        }


def reference_tree_instances() -> list[tuple[str, TreeInstance]]:
    """Named tree instances (each verifier is run under the first law it is meant for)."""
    pair = (RandomRationalModel(3, seed=2026), RandomRationalModel(3, seed=2027))
    return [
        ("random rational V=3, tree [2, 1]", TreeInstance(*pair, (2, 1), "iid")),
        ("random rational V=3, tree [3, 1]", TreeInstance(*pair, (3, 1), "iid")),
    ]


def tree_length_table() -> list[LengthRow]:
    """``E[K]`` of every exact tree verifier, under its first law, on the reference trees."""
    rows = []
    for label, base in reference_tree_instances():
        for entry in registry.verifiers("exact", family="tree"):
            assert isinstance(entry, registry.TreeVerifier)
            law = entry.laws[0]
            config = entry.settings[0]
            inst = TreeInstance(base.target, base.draft, base.shape, law, config)
            check = check_round(entry, inst)
            rows.append(
                LengthRow(
                    entry.name,
                    f"{label}, law {law}" + (f", {config.describe()}" if not config.is_identity else ""),
                    check.expected_tokens - 1,
                    check.predicted_accepted,
                    check.exact,
                )
            )
    return rows


def length_table() -> list[LengthRow]:
    """``E[K]`` of every exact verifier on every reference instance (greedy under T=0)."""
    rows = []
    for label, instance in reference_instances():
        for entry in registry.verifiers("exact", family="chain"):
            inst = instance
            if entry.settings and all(s.is_greedy for s in entry.settings):
                inst = ChainInstance(
                    instance.target, instance.draft, instance.gamma, SamplingConfig(temperature=Fraction(0))
                )
                label_here = f"{label} (T=0)"
            else:
                label_here = label
            check = check_round(entry, inst)
            rows.append(
                LengthRow(
                    entry.name, label_here, check.expected_tokens - 1, check.predicted_accepted, check.exact
                )
            )
    return rows + tree_length_table()
