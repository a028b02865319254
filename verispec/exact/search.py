"""Counterexample search and shrinking, and the deterministic random sweep.

* :func:`random_instances` yields seeded random instances (random rational models with
  zeros, prefix-dependent or not) for exhaustive checks of exact verifiers.
* :func:`find_counterexample` searches with the strategies of :mod:`verispec.strategies`
  and shrinks to the smallest failing instance hypothesis can find (derandomized, so the
  result is reproducible).
* :class:`Counterexample` holds the shrunk instance, its exact round law, the target law
  and their total-variation distance, printable and serialisable.
"""

from __future__ import annotations

import itertools
import random as _random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.core.certified import UndecidedComparison
from verispec.core.models import RandomRationalModel
from verispec.core.transforms import SamplingConfig
from verispec.errors import NonConformance, UsageError
from verispec.exact.criterion import Instance, RoundCheck, check_round
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.registry import TreeVerifier, Verifier
from verispec.verifiers.trees import TreeInstance

__all__ = ["Counterexample", "find_counterexample", "random_instances", "random_tree_instances"]


def random_instances(
    settings: Sequence[SamplingConfig],
    count: int,
    *,
    seed: int,
    vocab_sizes: Sequence[int] = (2, 3, 4),
    gammas: Sequence[int] = (1, 2, 3),
    zero_prob: float = 0.3,
) -> Iterator[ChainInstance]:
    """``count`` seeded random chain instances, cycling through ``settings``.

    One in four instances has context-free models; the rest depend on the prefix. The draft
    and target of an instance have independent seeds.
    """
    if count < 0:
        raise UsageError(f"count={count} must be >= 0")
    rng = _random.Random(f"verispec-sweep:{seed}")
    for k in range(count):
        vocab = rng.choice(list(vocab_sizes))
        gamma = rng.choice(list(gammas))
        context_free = rng.random() < 0.25
        models = [
            RandomRationalModel(
                vocab, seed=rng.getrandbits(48), zero_prob=zero_prob, context_free=context_free
            )
            for _ in range(2)
        ]
        yield ChainInstance(models[0], models[1], gamma, settings[k % len(settings)])


def random_tree_instances(
    law: str,
    settings: Sequence[SamplingConfig],
    count: int,
    *,
    seed: int,
    vocab_sizes: Sequence[int] = (2, 3),
    shapes: Sequence[tuple[int, ...]] = ((2,), (3,), (1, 2), (2, 1), (1, 1, 1), (2, 2)),
    zero_prob: float = 0.3,
) -> Iterator[TreeInstance]:
    """``count`` seeded random tree instances of one candidate law, cycling ``settings``.

    ``(2, 2)`` trees are drawn only with ``V = 2`` under the enumerating laws (i.i.d. and
    multi drafts make ``V**6`` trees), to keep a sweep within its time budget.
    """
    if count < 0:
        raise UsageError(f"count={count} must be >= 0")
    rng = _random.Random(f"verispec-tree-sweep:{law}:{seed}")
    for k in range(count):
        vocab = rng.choice(list(vocab_sizes))
        shape = rng.choice(list(shapes))
        if shape == (2, 2) and law in ("iid", "multi", "adaptive-iid"):
            vocab = min(vocab_sizes)
        context_free = rng.random() < 0.25

        n_models = 2 + (max(shape) - 1 if law == "multi" else 0)
        models = [
            RandomRationalModel(
                vocab, seed=rng.getrandbits(48), zero_prob=zero_prob, context_free=context_free
            )
            for _ in range(n_models)
        ]
        target, draft, extra = models[0], models[1], tuple(models[2:])
        yield TreeInstance(target, draft, shape, law, settings[k % len(settings)], drafts=extra)


def _rows_of(instance: Instance, which: str, depth: int, limit: int = 64) -> dict[str, list[str]]:
    """The rows of a model on every prefix of length <= depth (at most ``limit`` of them)."""
    raw = instance.target if which == "target" else instance.draft
    rows: dict[str, list[str]] = {}
    for prefix in itertools.islice(
        itertools.chain.from_iterable(
            itertools.product(range(instance.vocab_size), repeat=n) for n in range(depth + 1)
        ),
        limit,
    ):
        row = raw.probs(instance.context + prefix)
        rows[" ".join(map(str, prefix)) or "()"] = [str(v) for v in row]
    return rows


def _fmt(value: Any) -> str:
    return str(value) if isinstance(value, int | Fraction) else f"{float(value):.12g}"


def _fmt_row(values: Sequence[Any]) -> str:
    return "(" + ", ".join(_fmt(v) for v in values) + ")"


@dataclass(frozen=True)
class Counterexample:
    """An exact refutation of round exactness (or of round accounting) on one instance."""

    verifier: str
    kind: str  # "law" or "accounting"
    check: RoundCheck

    @property
    def instance(self) -> Any:
        return self.check.instance

    @property
    def tv_distance(self) -> Any:
        return self.check.tv_distance

    def first_token_laws(self) -> tuple[list[Any], list[Any]]:
        """The law of the first committed token under the round, and the target's."""
        vocab = self.instance.vocab_size
        out: list[Any] = [Fraction(0)] * vocab
        for block, w in self.check.law.items():
            out[block[0]] = out[block[0]] + w
        return out, list(self.instance.target_probs(()))

    def model_rows(self) -> dict[str, dict[str, list[str]]]:
        gamma = self.instance.gamma
        return {
            "target": _rows_of(self.instance, "target", gamma),
            "draft": _rows_of(self.instance, "draft", max(gamma - 1, 0)),
        }

    def to_json(self) -> dict[str, Any]:
        inst = self.instance
        out, target = self.first_token_laws()
        tree = {"shape": list(inst.shape), "law": inst.law} if isinstance(inst, TreeInstance) else {}
        return {
            "verifier": self.verifier,
            "kind": self.kind,
            "vocab_size": inst.vocab_size,
            "gamma": inst.gamma,
            **tree,
            "sampling": inst.config.to_json(),
            "context": list(inst.context),
            "models": self.model_rows(),
            "round_law": {" ".join(map(str, b)): _fmt(w) for b, w in sorted(self.check.law.items())},
            "first_token": {"output": [_fmt(v) for v in out], "target": [_fmt(v) for v in target]},
            "discrepancies": [
                {"sequence": list(d.sequence), "output": _fmt(d.output), "target": _fmt(d.target)}
                for d in self.check.discrepancies
            ],
            "tv_distance": _fmt(self.tv_distance),
            "tv_distance_float": float(self.tv_distance),
            "expected_tokens": _fmt(self.check.expected_tokens),
            "predicted_tokens": None
            if self.check.predicted_accepted is None
            else _fmt(1 + self.check.predicted_accepted),
        }

    def format(self) -> str:
        """A human-readable account: instance, exact laws, TV distance."""
        inst = self.instance
        where = (
            f"tree shape={list(inst.shape)} (children per depth) law={inst.law}"
            if isinstance(inst, TreeInstance)
            else f"gamma={inst.gamma}"
        )
        lines = [
            f"counterexample for {self.verifier!r} ({self.kind}):",
            f"  V={inst.vocab_size} {where} sampling: {inst.config.describe()}"
            + (f" context={list(inst.context)}" if inst.context else ""),
        ]
        rows = self.model_rows()
        for which in ("target", "draft"):
            lines.append(f"  {which} model (raw rows by prefix):")
            distinct = {tuple(r) for r in rows[which].values()}
            if len(distinct) == 1:
                lines.append(f"    every prefix: ({', '.join(distinct.pop())})")
            else:
                for prefix, row in rows[which].items():
                    lines.append(f"    after {prefix}: ({', '.join(row)})")
        law = ", ".join(f"{list(b)}: {_fmt(w)}" for b, w in sorted(self.check.law.items()))
        lines.append(f"  exact round law (block: probability): {law}")
        out, target = self.first_token_laws()
        lines.append(f"  first token: output {_fmt_row(out)} vs target {_fmt_row(target)}")
        if self.kind == "law":
            lines.append(f"  sequences of length {inst.gamma + 1} (round, then target sampling) that differ:")
            for d in self.check.discrepancies:
                lines.append(f"    {list(d.sequence)}: output {_fmt(d.output)} vs target {_fmt(d.target)}")
            tv = self.tv_distance
            tv_text = _fmt(tv) if isinstance(tv, Fraction) else str(tv)
            lines.append(f"  total-variation distance: {tv_text} ({float(tv):.6g})")
        else:
            lines.append(
                "  the law is the target's, but the round contract is broken: "
                f"E[tokens per round] = {_fmt(self.check.expected_tokens)}, while the tail-sum "
                f"identity predicts 1 + E[accepted] = {_fmt(1 + self.check.predicted_accepted)}"
            )
        return "\n".join(lines)


def _failure(entry: Verifier, instance: Instance) -> RoundCheck | None:
    try:
        check = check_round(entry, instance)
    except (NonConformance, UndecidedComparison):
        return None
    return None if check.exact or not check.decided else check


def counterexample_from(entry: Verifier, check: RoundCheck) -> Counterexample:
    kind = "law" if not check.law_exact else "accounting"
    return Counterexample(entry.name, kind, check)


def find_counterexample(
    entry: Verifier,
    *,
    max_examples: int = 2000,
    max_vocab: int | None = None,
    max_gamma: int = 3,
    law: str | None = None,
) -> Counterexample | None:
    """Search for an instance on which ``entry`` is not round-exact, and shrink it.

    Chain verifiers are searched over :func:`verispec.strategies.chain_instances` (V up to
    ``max_vocab``, default 4); tree verifiers over :func:`verispec.strategies.tree_instances`
    for ``law`` (default: the first law the verifier is registered with; V up to 3).
    Returns ``None`` if ``max_examples`` random instances all pass. The search is
    derandomized: the same verifier and budget give the same counterexample.
    """
    from hypothesis import HealthCheck, find, settings  # deferred: heavy
    from hypothesis.errors import NoSuchExample  # deferred: heavy

    from verispec.strategies import chain_instances, tree_instances  # deferred: heavy (hypothesis)

    if max_examples < 1:
        return None
    if isinstance(entry, TreeVerifier):
        strategy: Any = tree_instances(
            law or entry.laws[0], max_vocab=max_vocab or 3, settings=entry.settings
        )
    else:
        strategy = chain_instances(max_vocab=max_vocab or 4, max_gamma=max_gamma, settings=entry.settings)
    config = settings(
        max_examples=max_examples,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    try:
        instance = find(strategy, lambda inst: _failure(entry, inst) is not None, settings=config)
    except NoSuchExample:
        return None
    check = _failure(entry, instance)
    assert check is not None  # find() only returns instances that satisfy the condition
    return counterexample_from(entry, check)
