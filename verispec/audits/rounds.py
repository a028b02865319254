"""An audit instance's rounds: the drafts, the black box's inputs, the checks on its block,
and the completion of the block to ``L`` tokens.

For every call, verispec draws the drafts from the instance's draft law, hands the black
box float arrays and its own seeded ``numpy.random.Generator``, checks the returned block,
and completes it to ``L`` tokens with plain target sampling; the completed sequence is a
sample of "one round, then target sampling", whose exact law is the target's when the
verifier is exact. :class:`InstanceSampler` draws an instance's rounds in resumable chunks;
the audit worker (:mod:`verispec.audits.worker`) runs it in a worker process, and
:func:`sample_instance` here for a callable the user trusts.
"""

from __future__ import annotations

import bisect
import inspect
import traceback
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from verispec.audits.instances import AuditInstance
from verispec.core.random import SeededRandom
from verispec.verifiers.float_execution import FloatInstance
from verispec.verifiers.trees import draft_tree

__all__ = [
    "BlackBoxError",
    "ChainRounds",
    "InstanceSampler",
    "SelfDraftRounds",
    "TreeRounds",
    "sample_instance",
]

#: Offset between the seed of verispec's own draws and the black box's generator.
BOX_SEED_OFFSET = 1_000_003


class BlackBoxError(Exception):
    """The black box broke its contract on one call."""


def _as_block(raw: Any, max_len: int, vocab: int) -> list[int]:
    import numpy as np  # deferred: heavy

    if isinstance(raw, str | bytes) or not hasattr(raw, "__len__"):
        raise BlackBoxError(f"returned {type(raw).__name__} ({raw!r}); a sequence of token ids is required")
    block = list(np.asarray(raw).tolist()) if isinstance(raw, np.ndarray) else list(raw)
    if not 1 <= len(block) <= max_len:
        raise BlackBoxError(f"returned {len(block)} tokens {block}; a round commits 1 to {max_len}")
    out = []
    for t in block:
        if isinstance(t, bool) or not isinstance(t, int | np.integer):
            raise BlackBoxError(f"returned {t!r} ({type(t).__name__}) in {block}; token ids must be integers")
        if not 0 <= int(t) < vocab:
            raise BlackBoxError(f"returned token {int(t)} in {block}, outside the vocabulary 0..{vocab - 1}")
        out.append(int(t))
    return out


class _Cumulative:
    """Inverse-CDF draws from one float row, exactly as :meth:`SeededRandom.categorical`
    draws them (same uniform, same cell), with the running sums computed once."""

    __slots__ = ("cum", "last", "total")

    def __init__(self, row: tuple[float, ...]) -> None:
        acc, cum, last = 0.0, [], 0
        for i, x in enumerate(row):
            if x > 0:
                last, acc = i, acc + x
            cum.append(acc)
        self.cum, self.total, self.last = cum, acc, last

    def draw(self, generator: Any) -> int:
        i = bisect.bisect_right(self.cum, generator.random() * self.total)
        return i if i < len(self.cum) else self.last  # the rounding gap at the top


class ChainRounds:
    """The rounds of one chain instance: the drafts, drawn from the declared draft law with
    verispec's generator; the black box's float inputs (cached per draft tuple, handed out as
    fresh copies, so a verifier that writes into them changes nothing); the checks on its
    block; and the completion to ``length`` tokens by plain target sampling."""

    def __init__(self, view: Any, rand: SeededRandom) -> None:
        self.view, self.generator = view, rand.generator
        self.gamma, self.vocab = int(view.gamma), int(view.vocab_size)
        self._target: dict[tuple[int, ...], _Cumulative] = {}
        self._draft: dict[tuple[int, ...], _Cumulative] = {}
        self._inputs: dict[tuple[int, ...], tuple[Any, Any, Any]] = {}

    def _row(
        self, cache: dict[tuple[int, ...], _Cumulative], name: str, prefix: tuple[int, ...]
    ) -> _Cumulative:
        row = cache.get(prefix)
        if row is None:
            row = cache[prefix] = _Cumulative(getattr(self.view, name)(prefix))
        return row

    def drafts(self) -> tuple[int, ...]:
        tokens: tuple[int, ...] = ()
        for _ in range(self.gamma):
            tokens += (self._row(self._draft, "draft_probs", tokens).draw(self.generator),)
        return tokens

    def inputs(self, tokens: tuple[int, ...]) -> tuple[Any, Any, Any]:
        """``(target_probs, draft_probs, draft_tokens)`` for the drafts ``tokens``."""
        import numpy as np  # deferred: heavy

        cached = self._inputs.get(tokens)
        if cached is None:
            view = self.view
            target = np.array(
                [view.target_probs(tokens[:i]) for i in range(self.gamma + 1)], dtype=np.float64
            )
            draft = np.array(
                [view.draft_probs(tokens[:i]) for i in range(self.gamma)], dtype=np.float64
            ).reshape(self.gamma, self.vocab)
            cached = self._inputs[tokens] = (target, draft, np.array(tokens, dtype=np.int64))
        return cached[0].copy(), cached[1].copy(), cached[2].copy()

    def check(self, raw: Any, tokens: tuple[int, ...], draft_is_target: bool = False) -> list[int]:
        """The black box's block, or :class:`BlackBoxError` naming how it broke the contract."""
        block = _as_block(raw, self.gamma + 1, self.vocab)
        if tuple(block[:-1]) != tokens[: len(block) - 1]:
            raise BlackBoxError(
                f"returned {block}, whose accepted part is not a prefix of the drafts {list(tokens)}"
            )
        if draft_is_target and self.gamma >= 1 and tuple(block) == tokens:
            raise BlackBoxError(
                f"returned exactly the {self.gamma} drafts {block} with no bonus token while the draft law "
                "equals the target's: after full acceptance the round must commit a bonus token"
            )
        return block

    def complete(self, block: list[int], length: int) -> tuple[int, ...]:
        seq = tuple(block)
        while len(seq) < length:
            seq += (self._row(self._target, "target_probs", seq).draw(self.generator),)
        return seq[:length]


class SelfDraftRounds:
    """The rounds of one chain instance for a black box that drafts for itself
    (``speculate(model, rng) -> block``): it gets the models' raw next-token log-probabilities
    as functions of the prefix drafted so far (``target_logits``, ``draft_logits``; -inf where a
    token is impossible), the request's ``sampling`` settings to apply to both itself, ``gamma``
    and ``vocab_size``; it drafts, verifies and returns the block. Its drafts are its own, so
    only the block's shape can be checked; the law does the rest."""

    def __init__(self, view: Any, raw: Any, rand: SeededRandom) -> None:
        import numpy as np  # deferred: heavy

        self.rounds = ChainRounds(view, rand)
        config = view.config
        self.model = SimpleNamespace(
            gamma=int(view.gamma),
            vocab_size=int(view.vocab_size),
            sampling={
                "temperature": float(config.temperature),
                "top_k": config.top_k,
                "top_p": None if config.top_p is None else float(config.top_p),
                "min_p": None if config.min_p is None else float(config.min_p),
            },
            target_logits=self._logits(raw.target, np),
            draft_logits=self._logits(raw.draft, np),
        )

    @staticmethod
    def _logits(model: Any, np: Any) -> Callable[[Any], Any]:
        cache: dict[tuple[int, ...], Any] = {}

        def logits(prefix: Any = ()) -> Any:
            key = tuple(int(t) for t in prefix)
            row = cache.get(key)
            if row is None:
                with np.errstate(divide="ignore"):
                    row = cache[key] = np.log(np.array([float(v) for v in model.probs(key)]))
            return row.copy()

        return logits

    def check(self, raw: Any) -> list[int]:
        return _as_block(raw, self.model.gamma + 1, self.model.vocab_size)


class TreeRounds:
    """The rounds of one tree instance: the tree, drafted with verispec's generator by the
    instance's candidate law; the black box's view of it (float arrays); and the check that
    its block is a root-to-node path of the tree and one more token."""

    def __init__(self, view: Any, rand: SeededRandom) -> None:
        self.view, self.rand = view, rand

    def draft(self) -> Any:
        return draft_tree(self.view, self.rand)

    @staticmethod
    def inputs(tree: Any) -> Any:
        import numpy as np  # deferred: heavy

        return SimpleNamespace(
            tokens=np.array(tree.tokens, dtype=np.int64),
            parents=np.array(tree.parents, dtype=np.int64),
            target_probs=np.array(tree.target_probs, dtype=np.float64),
            draft_probs=np.array(tree.draft_probs, dtype=np.float64),
            sampling=tree.sampling,
            # the law each node was drawn from, under the "multi" law (one draft model per sibling)
            sibling_probs=None
            if tree.sibling_probs is None
            else np.array(tree.sibling_probs, dtype=np.float64),
        )

    def check(self, raw: Any, tree: Any) -> list[int]:
        block = _as_block(raw, self.view.gamma + 1, self.view.vocab_size)
        nodes = [0]
        for i, t in enumerate(block[:-1]):
            nodes = [c for n in nodes for c in tree.children[n] if tree.tokens[c] == t]
            if not nodes:
                raise BlackBoxError(f"returned {block}: {block[: i + 1]} is not a path of the drafted tree")
        return block


class InstanceSampler:
    """One instance's rounds, resumable: :meth:`run` calls the black box ``n`` more times and
    returns what those calls gave, continuing the same random streams, so an instance sampled
    in chunks draws exactly what one run of the whole size draws (and a chunk lost to a time
    limit loses only itself)."""

    def __init__(
        self, verify: Callable[..., Any], item: AuditInstance, seed: int, drafts: str = "given"
    ) -> None:
        import numpy as np  # deferred: heavy

        self.verify, self.item = verify, item
        self.view: Any = FloatInstance(item.instance)
        self.rand = SeededRandom(seed)
        self.rng = np.random.default_rng(seed + BOX_SEED_OFFSET)
        self.rounds = None if item.kind == "tree" else ChainRounds(self.view, self.rand)
        self.trees = TreeRounds(self.view, self.rand)
        self.own = SelfDraftRounds(self.view, item.instance, self.rand) if drafts == "self" else None
        self.calls = 0
        self.error: str | None = None

    def run(self, n: int) -> dict[str, Any]:
        """Up to ``n`` more calls (fewer after a contract violation or an exception, which
        ends the instance and is reported in ``"error"`` with the counts gathered before it)."""
        counts: Counter[tuple[int, ...]] = Counter()
        blocks: Counter[int] = Counter()
        length, verify, rng = self.item.length, self.verify, self.rng
        for _ in range(n if self.error is None else 0):
            self.calls += 1
            try:
                if self.own is not None:
                    block = self.own.check(verify(self.own.model, rng))
                    counts[self.own.rounds.complete(block, length)] += 1
                elif self.rounds is None:
                    trees, view = self.trees, self.view
                    tree = trees.draft()
                    block = trees.check(verify(trees.inputs(tree), rng), tree)
                    seq = list(block)
                    while len(seq) < length:
                        seq.append(self.rand.categorical(view.target_probs(tuple(seq))))
                    counts[tuple(seq[:length])] += 1
                else:
                    tokens = self.rounds.drafts()
                    raw = verify(*self.rounds.inputs(tokens), rng)
                    block = self.rounds.check(raw, tokens, self.item.draft_is_target)
                    counts[self.rounds.complete(block, length)] += 1
            except BlackBoxError as exc:
                self.error = f"call {self.calls}: the verifier ({_defined_at(verify)}) {exc}"
                break
            except Exception as exc:
                message = str(exc) or "(no message)"
                self.error = (
                    f"call {self.calls}: the verifier raised {type(exc).__name__}: {message} "
                    f"at {_raised_at(exc)}"
                )
                break
            blocks[len(block)] += 1
        return {
            "counts": {" ".join(map(str, k)): v for k, v in counts.items()},
            "block_lengths": {str(k): v for k, v in blocks.items()},
            "error": self.error,
        }


def _defined_at(function: Callable[..., Any]) -> str:
    """Where a black box is defined (``file:line``), for a contract error that has no frame."""
    try:
        target = inspect.unwrap(function)
        return f"defined at {inspect.getsourcefile(target)}:{inspect.getsourcelines(target)[1]}"
    except (TypeError, OSError):
        return f"{getattr(function, '__qualname__', type(function).__name__)}"


def _raised_at(exc: BaseException) -> str:
    """The innermost frame of an exception (``file:line in function``)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else "an unknown place"


def sample_instance(
    verify: Callable[..., Any], item: AuditInstance, n: int, seed: int, drafts: str = "given"
) -> dict[str, Any]:
    """Call ``verify`` ``n`` times on ``item``; return the counts of completed sequences.
    ``drafts="self"``: ``verify`` drafts for itself (:class:`SelfDraftRounds`).

    A contract violation or an exception stops this instance and is reported in
    ``"error"`` together with the counts gathered before it.
    """
    return InstanceSampler(verify, item, seed, drafts).run(n)
