"""One registry of verifiers: the exact ones and the known-wrong controls.

Each verifier is declared where it is written, by a decorator with keyword fields::

    @chain_verifier(
        name="token-level",
        kind="exact",
        summary="accept with min(1, p/q), correct from the normalised residual [p-q]+, bonus from p",
        source="Leviathan et al., ICML 2023, Algorithm 1",
        acceptance=token_level_acceptance,
    )
    def token_level(target_probs, draft_probs, draft_tokens, rand): ...

A registered chain verifier is a verify function plus the drafter it is used with, the
sampling settings its claim is about, and the acceptance profile of the algorithm it
implements (for the tail-sum identity). A registered tree verifier (``@tree_verifier``) is a
verify function plus the candidate laws it is used with. A control (``kind="control"``) names
its public source and is a planted bug of the negative controls (:mod:`verispec.controls.mutants`).
One function may be registered several times (a control that is the exact rule with a wrong
drafter). Names are unique across both families; the listing order is chain before tree,
exact before control, then declaration order.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, TypeVar

from verispec.core.random import Random
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError, unknown_name
from verispec.verifiers.instance import DRAFTERS, ChainInstance, Drafter, Verify, run_round
from verispec.verifiers.trees import LAWS, DraftTree, TreeInstance, TreeVerify, draft_tree, run_tree_round

__all__ = [
    "GREEDY_SETTINGS",
    "STOCHASTIC_SETTINGS",
    "TREE_GREEDY_SETTINGS",
    "ChainVerifier",
    "TreeVerifier",
    "Verifier",
    "chain_verifier",
    "get",
    "get_chain",
    "names",
    "tree_verifier",
    "verifiers",
]

Kind = Literal["exact", "control"]
#: ``acceptance(target_rows, draft_rows, drafts, i)``: the probability, given the drafts,
#: that at least ``i`` of them are accepted. Summed over ``i`` and averaged over the drafts it
#: gives ``E[accepted]`` by the tail-sum identity.
Acceptance = Callable[[Sequence[Sequence[Any]], Sequence[Sequence[Any]], Sequence[int], int], Any]

#: The modules that declare verifiers.
MODULES = ("verispec.verifiers.chain", "verispec.verifiers.controls", "verispec.verifiers.tree_verifiers")


#: Settings every stochastic verifier is checked under: plain sampling, a sharper
#: temperature, and each truncation, with and without temperature.
STOCHASTIC_SETTINGS: tuple[SamplingConfig, ...] = (
    SamplingConfig(),
    SamplingConfig(temperature=Fraction(1, 2)),
    SamplingConfig(top_k=2),
    SamplingConfig(top_p=Fraction(7, 10)),
    SamplingConfig(min_p=Fraction(1, 3)),
    SamplingConfig(temperature=Fraction(1, 2), top_k=3, top_p=Fraction(9, 10)),
)
GREEDY_SETTINGS: tuple[SamplingConfig, ...] = (
    SamplingConfig(temperature=Fraction(0)),
    SamplingConfig(temperature=Fraction(0), top_k=2),
)
TREE_GREEDY_SETTINGS = (SamplingConfig(temperature=Fraction(0)),)


@dataclass(frozen=True)
class ChainVerifier:
    """A registered chain verifier (exact or control)."""

    name: str
    kind: Kind
    verify: Verify
    drafter: str
    summary: str
    source: str
    #: the acceptance profile of the algorithm it implements; ``None`` skips round accounting
    acceptance: Acceptance | None = None
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS
    family: str = field(default="chain")

    def __post_init__(self) -> None:
        if self.drafter not in DRAFTERS:
            raise UsageError(f"drafter={self.drafter!r} is not one of {sorted(DRAFTERS)}")

    @property
    def draft(self) -> Drafter:
        return DRAFTERS[self.drafter]

    def round(self, instance: ChainInstance, rand: Random) -> tuple[int, ...]:
        """One round of this verifier with its drafter on ``instance``."""
        return run_round(self.verify, self.draft, instance, rand)

    def accepted_given_drafts(self, instance: ChainInstance, rand: Random) -> tuple[Hashable, Any]:
        """Draw the drafts and return them with ``E[accepted | drafts]`` (tail-sum identity)."""
        assert self.acceptance is not None
        tokens, draft_rows = self.draft(instance, rand)
        target_rows = [instance.target_probs(tuple(tokens[:i])) for i in range(instance.gamma + 1)]
        tail = sum(
            (self.acceptance(target_rows, draft_rows, tokens, i) for i in range(1, instance.gamma + 1)),
            Fraction(0),
        )
        return tuple(tokens), tail

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "family": self.family,
            "drafter": self.drafter,
            "summary": self.summary,
            "source": self.source,
            "settings": [s.describe() for s in self.settings],
        }


@dataclass(frozen=True)
class TreeVerifier:
    """A registered tree verifier (exact or control) and the candidate laws it is used with.

    For an exact verifier ``laws`` are the laws it is meant for (where it must be proved);
    for a control, the law under which it is wrong. ``acceptance(tree)`` optionally gives
    ``E[accepted | tree]`` in closed form, enabling round accounting.
    """

    name: str
    kind: Kind
    verify: TreeVerify
    laws: tuple[str, ...]
    summary: str
    source: str
    tree_acceptance: Callable[[DraftTree], Any] | None = None
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS[:4]
    family: str = field(default="tree")

    def __post_init__(self) -> None:
        for law in self.laws:
            if law not in LAWS:
                raise UsageError(f"laws contains {law!r}, not one of {', '.join(LAWS)}")

    @property
    def acceptance(self) -> Any:
        return self.tree_acceptance

    def round(self, instance: TreeInstance, rand: Random) -> tuple[int, ...]:
        return run_tree_round(self.verify, instance, rand)

    def accepted_given_drafts(self, instance: TreeInstance, rand: Random) -> tuple[Hashable, Any]:
        assert self.tree_acceptance is not None
        tree = draft_tree(instance, rand)
        return (tree.tokens, tree.parents), self.tree_acceptance(tree)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "family": self.family,
            "laws": list(self.laws),
            "summary": self.summary,
            "source": self.source,
            "settings": [s.describe() for s in self.settings],
        }


Verifier = ChainVerifier | TreeVerifier
_REGISTRY: dict[str, Verifier] = {}
ChainFn = TypeVar("ChainFn", bound=Verify)
TreeFn = TypeVar("TreeFn", bound=TreeVerify)


def _add(entry: Verifier) -> None:
    if entry.name in _REGISTRY:
        raise UsageError(f"name={entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry


def chain_verifier(
    *,
    name: str,
    kind: Kind,
    summary: str,
    source: str,
    drafter: str = "sample",
    acceptance: Acceptance | None = None,
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS,
) -> Callable[[ChainFn], ChainFn]:
    """Register the decorated function as the chain verifier ``name`` (see the module docstring)."""

    def register(fn: ChainFn) -> ChainFn:
        _add(ChainVerifier(name, kind, fn, drafter, summary, source, acceptance, settings))
        return fn

    return register


def tree_verifier(
    *,
    name: str,
    kind: Kind,
    laws: tuple[str, ...],
    summary: str,
    source: str,
    acceptance: Callable[[DraftTree], Any] | None = None,
    settings: tuple[SamplingConfig, ...] = STOCHASTIC_SETTINGS[:4],
) -> Callable[[TreeFn], TreeFn]:
    """Register the decorated function as the tree verifier ``name``."""

    def register(fn: TreeFn) -> TreeFn:
        _add(TreeVerifier(name, kind, fn, laws, summary, source, acceptance, settings))
        return fn

    return register


def _load() -> None:
    for module in MODULES:
        importlib.import_module(module)


def _ordered() -> list[Verifier]:
    _load()
    index = {n: i for i, n in enumerate(_REGISTRY)}
    return sorted(
        _REGISTRY.values(),
        key=lambda e: (e.family != "chain", e.kind != "exact", index[e.name]),
    )


def get(name: str) -> Verifier:
    """The registered verifier called ``name``; unknown names suggest the closest ones."""
    _load()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_name("verifier", name, _REGISTRY) from None


def get_chain(name: str) -> ChainVerifier:
    """The registered chain verifier ``name``."""
    entry = get(name)
    if not isinstance(entry, ChainVerifier):
        raise UsageError(f"verifier={name!r} is a tree verifier, not a chain verifier")
    return entry


def names(kind: Kind | None = None, family: str | None = None) -> list[str]:
    """Registered names (chain before tree, exact before control, then declaration order),
    optionally one kind and one family."""
    return [
        e.name
        for e in _ordered()
        if (kind is None or e.kind == kind) and (family is None or e.family == family)
    ]


def verifiers(kind: Kind | None = None, family: str | None = None) -> list[Verifier]:
    return [get(n) for n in names(kind, family)]
