"""Audit instances: exact models a black-box verifier is exercised on.

Each instance is small enough that the target's law of ``L`` tokens is exact and the
outcome space can be tested with a chi-square test; together they force every acceptance
pattern: random conditionals with zeros, a sharper temperature, greedy decoding (temperature
0: every row a point mass), top-k and top-p, disjoint
supports that force the first rejection at each chosen position, and a draft equal to the
target (full acceptance).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.core.models import FixedModel, RandomRationalModel, TableModel
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.trees import TreeInstance

__all__ = [
    "AuditInstance",
    "battery",
    "battery_options",
    "chain_audit_instances",
    "from_spec",
    "law_option",
    "self_drafting_instances",
    "to_spec",
    "tree_audit_instances",
]

#: The greedy instance's name (temperature 0) in both batteries.
GREEDY = "random, greedy (T=0)"


@dataclass(frozen=True)
class AuditInstance:
    name: str
    instance: Any  # ChainInstance | TreeInstance
    #: the draft law equals the target's: every lossless chain verifier then commits a bonus
    #: token whenever it keeps all drafts, so a block made of exactly the drafts is a missing bonus
    draft_is_target: bool = False

    @property
    def kind(self) -> str:
        return "tree" if isinstance(self.instance, TreeInstance) else "chain"

    @property
    def length(self) -> int:
        """Tokens per tested sequence: the longest block (``gamma + 1`` or depth + 1)."""
        return int(self.instance.gamma) + 1


def _prefixes(vocab: int, depth: int) -> list[tuple[int, ...]]:
    return [p for n in range(depth + 1) for p in itertools.product(range(vocab), repeat=n)]


def _row(values: list[int]) -> tuple[Fraction, ...]:
    total = sum(values)
    return tuple(Fraction(v, total) for v in values)


def _forced_rejection(vocab: int, gamma: int, position: int, seed: int) -> tuple[TableModel, TableModel]:
    """p = q before ``position`` (always accepted); disjoint supports at ``position`` (always
    rejected); random rows after."""
    target_rand = RandomRationalModel(vocab, seed=seed)
    draft_rand = RandomRationalModel(vocab, seed=seed + 1)
    half = vocab // 2
    target_rows, draft_rows = {}, {}
    for prefix in _prefixes(vocab, gamma):
        depth = len(prefix)
        if depth < position:
            target_rows[prefix] = draft_rows[prefix] = target_rand.probs(prefix)
        elif depth == position:
            target_rows[prefix] = _row([1 if t < half else 0 for t in range(vocab)])
            draft_rows[prefix] = _row([0 if t < half else 1 for t in range(vocab)])
        else:
            target_rows[prefix] = target_rand.probs(prefix)
            draft_rows[prefix] = draft_rand.probs(prefix)
    return TableModel(target_rows), TableModel(draft_rows)


def _require_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{name}={value!r} must be a non-negative integer")


def chain_audit_instances(
    seed: int = 0, *, vocab: int = 4, gamma: int = 3, pairs: int = 0
) -> list[AuditInstance]:
    """The chain audit battery for ``gamma`` drafts over ``vocab`` tokens, and ``pairs`` more
    random model pairs, the i-th over ``vocab + 1 + i`` tokens."""
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 2 or gamma < 1:
        raise UsageError(f"vocab={vocab!r} must be an integer >= 2 and gamma={gamma} >= 1")
    _require_count("pairs", pairs)
    t, d = RandomRationalModel(vocab, seed=seed * 10 + 1), RandomRationalModel(vocab, seed=seed * 10 + 2)
    out = [
        AuditInstance("random conditionals with zeros, T=1", ChainInstance(t, d, gamma)),
        AuditInstance(
            "random, T=1/2", ChainInstance(t, d, gamma, SamplingConfig(temperature=Fraction(1, 2)))
        ),
        AuditInstance("random, top_k=2", ChainInstance(t, d, gamma, SamplingConfig(top_k=2))),
        AuditInstance(
            "random, top_p=7/10", ChainInstance(t, d, gamma, SamplingConfig(top_p=Fraction(7, 10)))
        ),
        # greedy: every row a point mass at its argmax (lowest id on a tie), drafts included
        AuditInstance(GREEDY, ChainInstance(t, d, gamma, SamplingConfig(temperature=Fraction(0)))),
    ]
    for position in range(gamma):
        target, draft = _forced_rejection(vocab, gamma, position, seed * 10 + 3 + position)
        out.append(
            AuditInstance(
                f"first rejection forced at draft {position + 1}", ChainInstance(target, draft, gamma)
            )
        )
    out.append(AuditInstance("draft equals target (full acceptance)", ChainInstance(t, t, gamma), True))
    for i in range(pairs):
        size = vocab + 1 + i
        base = seed * 10 + 1000 * (i + 1)
        pt, pd = RandomRationalModel(size, seed=base + 1), RandomRationalModel(size, seed=base + 2)
        out.append(AuditInstance(f"random, model pair {i + 2}, V={size}, T=1", ChainInstance(pt, pd, gamma)))
    return out


def _ambiguous(model: Any, config: SamplingConfig, vocab: int, depth: int) -> bool:
    """Whether some row of ``model`` (up to ``depth`` tokens of prefix) has a law under
    ``config`` that depends on a convention: a tie at the argmax (greedy), at the k-th place
    (top-k), or across the top-p cut, or a cumulative mass exactly at ``top_p`` (where ``<`` and
    ``<=`` part, and where float sums land either side)."""
    for prefix in _prefixes(vocab, depth):
        values = sorted(model.probs(prefix), reverse=True)
        if config.is_greedy and values[0] == values[1]:
            return True
        k = config.top_k
        if k is not None and k < vocab and values[k - 1] == values[k] > 0:
            return True
        if config.top_p is not None:
            before = Fraction(0)
            for j, v in enumerate(values):
                if before == config.top_p:
                    return True
                if j + 1 < vocab and v == values[j + 1] > 0 and before < config.top_p <= before + v:
                    return True
                before += v
    return False


def _distinct_rows(vocab: int, depth: int, seed: int) -> TableModel:
    """Rows of distinct weights from 1 to 99, one of them zeroed in every other row (zeros
    still occur, but never two in a row), so no two possible tokens of a row tie."""
    rng = random.Random(seed)
    rows = {}
    for prefix in _prefixes(vocab, depth):
        weights = rng.sample(range(1, 100), vocab)
        if rng.random() < 0.5:
            weights[rng.randrange(vocab)] = 0
        rows[prefix] = _row(weights)
    return TableModel(rows)


def self_drafting_instances(
    seed: int = 0, *, vocab: int = 4, gamma: int = 3, pairs: int = 0
) -> list[AuditInstance]:
    """The chain battery for a black box that drafts for itself (``--drafts self``), which
    applies the sampling settings with its own code: its greedy, top-k and top-p instances use
    a model pair on which no convention matters (no tie at the argmax, at the k-th place or
    across the nucleus, no mass exactly at ``top_p``), the first such pair in a fixed seed
    sequence, so a correct box with another tie rule is not rejected for it."""
    configs = [
        SamplingConfig(temperature=Fraction(0)),
        SamplingConfig(top_k=2),
        SamplingConfig(top_p=Fraction(7, 10)),
    ]
    base = chain_audit_instances(seed, vocab=vocab, gamma=gamma, pairs=pairs)
    for attempt in range(200):
        t = _distinct_rows(vocab, gamma, seed * 10_000 + 2 * attempt)
        d = _distinct_rows(vocab, gamma, seed * 10_000 + 2 * attempt + 1)
        if not any(_ambiguous(m, c, vocab, gamma) for m in (t, d) for c in configs):
            break
    else:  # pragma: no cover - distinct weights leave only exact top-p sums, which are rare
        raise RuntimeError(f"no tie-free model pair for seed {seed}")
    out = []
    for item in base:
        inst = item.instance
        config = inst.config
        if config.is_greedy or config.top_k is not None or config.top_p is not None:
            item = AuditInstance(f"{item.name}, tie-free", ChainInstance(t, d, gamma, config))
        out.append(item)
    return out


#: Extra random model pairs of the tree battery (each at its own, larger vocabulary).
TREE_PAIRS = 2
#: The chance that a token is impossible in a row of the extra pairs' models.
SPARSE_ZEROS = 0.1


def tree_audit_instances(
    seed: int = 0,
    *,
    law: str = "iid",
    vocab: int = 3,
    shapes: tuple[tuple[int, ...], ...] = ((2,), (2, 1), (3,)),
    pairs: int = TREE_PAIRS,
) -> list[AuditInstance]:
    """The tree audit battery for one candidate law: random model pairs over ``vocab``
    tokens in several shapes, temperature 1/2, greedy, a draft whose mass sits where the target
    has none, paths of unequal depth; then ``pairs`` more random model pairs, the i-th over
    ``vocab + 1 + i`` tokens with three siblings, and one model pair whose residual keeps the
    draft's support after every rejection. With three tokens a rejected sibling often leaves a
    residual of one token the draft cannot propose, after which how later siblings are tried,
    or how the residual is updated, cannot change the law: the larger vocabularies and the
    last instance leave those bugs something to change."""
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 3:
        raise UsageError(f"vocab={vocab!r} must be an integer >= 3 for a tree battery")
    _require_count("pairs", pairs)
    t, d = RandomRationalModel(vocab, seed=seed * 10 + 1), RandomRationalModel(vocab, seed=seed * 10 + 2)
    extra = (
        tuple(RandomRationalModel(vocab, seed=seed * 10 + 7 + j) for j in range(2)) if law == "multi" else ()
    )
    out = []
    for shape in shapes:
        out.append(
            AuditInstance(
                f"random, tree {list(shape)}, law {law}", TreeInstance(t, d, shape, law, drafts=extra)
            )
        )
    shape = shapes[0]
    out.append(
        AuditInstance(
            f"random, T=1/2, tree {list(shape)}, law {law}",
            TreeInstance(t, d, shape, law, SamplingConfig(temperature=Fraction(1, 2)), drafts=extra),
        )
    )
    out.append(
        AuditInstance(
            f"{GREEDY}, tree {list(shape)}, law {law}",
            TreeInstance(t, d, shape, law, SamplingConfig(temperature=Fraction(0)), drafts=extra),
        )
    )
    # the draft puts most of its mass where the target has none: every sibling is tested
    # against a residual, at every node
    skew_t = FixedModel([Fraction(0), *(Fraction(1, vocab - 1) for _ in range(vocab - 1))])
    skew_d = FixedModel(
        [Fraction(2, 3), Fraction(0), *(Fraction(1, 3 * (vocab - 2)) for _ in range(vocab - 2))]
    )
    skew_extra = (skew_d, skew_d) if law == "multi" else ()
    for shape in shapes[:2]:
        out.append(
            AuditInstance(
                f"draft mass on target-impossible tokens, tree {list(shape)}, law {law}",
                TreeInstance(skew_t, skew_d, shape, law, drafts=skew_extra),
            )
        )
    # paths of unequal depth: three children, only the first of which has children of its own,
    # so a verifier that pads its paths to one length (or assumes they share one) is exercised
    uneven_extra = (
        tuple(RandomRationalModel(vocab, seed=seed * 10 + 7 + j) for j in range(3)) if law == "multi" else ()
    )
    out.append(
        AuditInstance(
            f"random, tree [3, 2] with only the first child expanded (paths of depth 1 and 2), law {law}",
            TreeInstance(t, d, (3, 2), law, drafts=uneven_extra, expand=(1,)),
        )
    )
    for i in range(pairs):
        size = vocab + 1 + i
        base = seed * 10 + 1000 * (i + 1)
        # few zeros: a root row with one possible token would leave the siblings nothing to decide
        pt, pd, *more_models = (
            RandomRationalModel(size, seed=base + j, zero_prob=SPARSE_ZEROS)
            for j in range(4 if law == "multi" else 2)
        )
        more = tuple(more_models)
        out.append(
            AuditInstance(
                f"random, model pair {i + 2}, V={size}, tree [3], law {law}",
                TreeInstance(pt, pd, (3,), law, drafts=more),
            )
        )
    out.append(_residual_keeps_draft_support(vocab + 3, law))
    return out


def _residual_keeps_draft_support(size: int, law: str) -> AuditInstance:
    """The target falling and the draft rising over ``size`` tokens (every token possible to
    both), four siblings: each rejection leaves a residual of several tokens the draft still
    proposes, so every later sibling is tried against a residual it can change."""
    half = size * (size + 1) // 2
    target = FixedModel([Fraction(size - i, half) for i in range(size)])
    draft = FixedModel([Fraction(i + 1, half) for i in range(size)])
    uniform = FixedModel([Fraction(1, size)] * size)
    extra = (draft, uniform, draft) if law == "multi" else ()
    return AuditInstance(
        f"residual keeps the draft's support (target falling, draft rising, V={size}), tree [4], law {law}",
        TreeInstance(target, draft, (4,), law, drafts=extra),
    )


def battery(
    kind: str, seed: int, law: str, drafts: str = "given", vocab: int | None = None, pairs: int | None = None
) -> list[AuditInstance]:
    """The audit battery of ``kind`` (``"chain"`` or ``"tree"``, of candidate law ``law``; for
    a chain black box that drafts for itself, the tie-free one), over ``vocab`` tokens with
    ``pairs`` more random model pairs (``None``: the battery's defaults)."""
    if kind not in ("chain", "tree"):
        raise UsageError(f"kind={kind!r} must be 'chain' or 'tree'")
    options: dict[str, Any] = {n: v for n, v in (("vocab", vocab), ("pairs", pairs)) if v is not None}
    if kind == "tree":
        return tree_audit_instances(seed, law=law, **options)
    if drafts == "self":
        return self_drafting_instances(seed, **options)
    return chain_audit_instances(seed, **options)


def battery_options(vocab: int | None, pairs: int | None) -> str:
    """The battery's options on a reproduce command line."""
    return (f" --vocab {vocab}" if vocab is not None else "") + (
        f" --instances {pairs}" if pairs is not None else ""
    )


def law_option(kind: str, law: str) -> str:
    """The tree battery's candidate law on a reproduce command line."""
    return f" --law {law}" if kind == "tree" else ""


def _table(model: Any, vocab: int, depth: int) -> dict[str, list[str]]:
    return {" ".join(map(str, p)): [str(v) for v in model.probs(p)] for p in _prefixes(vocab, depth)}


def to_spec(item: AuditInstance) -> dict[str, Any]:
    """A JSON description of an instance, from which the worker rebuilds it (no pickling)."""
    inst = item.instance
    vocab, depth = inst.vocab_size, int(inst.gamma)
    spec: dict[str, Any] = {
        "name": item.name,
        "kind": item.kind,
        "config": inst.config.to_json(),
        "target": _table(inst.target, vocab, depth),
        "draft": _table(inst.draft, vocab, depth),
    }
    if isinstance(inst, TreeInstance):
        spec.update(
            shape=list(inst.shape),
            law=inst.law,
            drafts=[_table(m, vocab, depth) for m in inst.drafts],
            expand=list(inst.expand),
        )
    else:
        spec.update(gamma=inst.gamma, draft_is_target=item.draft_is_target)
    return spec


def _model(table: dict[str, list[str]]) -> TableModel:
    return TableModel({tuple(int(t) for t in k.split()): v for k, v in table.items()})


def from_spec(spec: dict[str, Any]) -> AuditInstance:
    """Rebuild an :class:`AuditInstance` from :func:`to_spec`'s description."""
    config = SamplingConfig(
        temperature=Fraction(spec["config"]["temperature"]),
        top_k=spec["config"]["top_k"],
        top_p=None if spec["config"]["top_p"] is None else Fraction(spec["config"]["top_p"]),
        min_p=None if spec["config"]["min_p"] is None else Fraction(spec["config"]["min_p"]),
    )
    target, draft = _model(spec["target"]), _model(spec["draft"])
    if spec["kind"] == "tree":
        inst: Any = TreeInstance(
            target,
            draft,
            tuple(spec["shape"]),
            spec["law"],
            config,
            drafts=tuple(_model(t) for t in spec["drafts"]),
            expand=tuple(spec.get("expand", ())),
        )
    else:
        inst = ChainInstance(target, draft, int(spec["gamma"]), config)
    return AuditInstance(spec["name"], inst, bool(spec.get("draft_is_target", False)))
