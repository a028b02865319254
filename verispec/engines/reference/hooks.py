"""The reference engine's seams: each step of a round, its correct version, and how planted
bugs replace them.

:class:`Hooks` holds one callable per step of a round; its defaults are the correct algorithm
(the index functions z3 proves, the registered exact verifier). A planted bug
(:mod:`verispec.engines.reference.bugs`) replaces exactly one seam (and, where the engine it
comes from needs one, others that are no bug alone); the round never names one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from verispec.core.random import SeededRandom
from verispec.core.transforms import SamplingConfig, apply_float
from verispec.engines.bugs import PlantedBug
from verispec.engines.protocol import Request, Sampling
from verispec.errors import UsageError
from verispec.smt import index as ix
from verispec.verifiers import registry

__all__ = ["Hooks", "planted_hooks", "probs", "verify_correctly", "with_hooks"]


def probs(logits: Any, config: Any) -> list[float]:
    """The law of one row of ``logits`` under the sampling settings ``config`` (float64)."""
    import torch

    row = torch.softmax(logits.double(), dim=-1).cpu().numpy()
    return [float(v) for v in apply_float(row, config)]


# ------------------------------------------------------------------- the seams, correct


def _propose(logits: Any, config: SamplingConfig, rand: SeededRandom) -> tuple[int, list[float]]:
    declared = probs(logits, config)
    return rand.categorical(declared), declared


def verify_correctly(
    p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: SeededRandom, greedy: bool
) -> tuple[list[int], int]:
    """The registered ``greedy`` verifier at temperature 0, ``token-level`` otherwise."""
    entry = registry.get_chain("greedy" if greedy else "token-level")
    block = [int(t) for t in entry.verify(p_rows, q_rows, drafts, rand)]
    return block, len(block) - 1


def _truncate(block_len: int, eos: int, budget: int) -> tuple[int, bool]:
    count = ix.committed_count(block_len, eos, budget)
    return count, eos < count


def _crop(starts: Mapping[int, int], kept: Mapping[int, int], lengths: Sequence[int]) -> dict[int, int]:
    return {b: ix.target_crop_length(L, kept[b]) for b, L in starts.items()}


def _compact(cache: Any, path: Sequence[int], L: int) -> None:
    for j, row in enumerate(path):
        src, dst = ix.compaction_plan(j, row, L)
        if src != dst:
            cache.move(src, dst)


@dataclass(frozen=True)
class Hooks:
    """The reference engine's seams. Each field is one step of a round; the defaults are the
    correct algorithm (the index functions z3 proves, the registered exact verifier).

    * ``seed(request)``: the seed of the request's random stream;
    * ``propose(logits, config, rand) -> (draft, q)``: one draft token from the draft's
      (penalised) logits, and the law declared to the verifier for it;
    * ``penalise(sampling, logits, generated, prompt)``: the request's penalties on the speculative path;
    * ``visible``, ``position``: the verify pass's mask and query positions;
    * ``route(live, starts, outputs)``: which verify output row belongs to which request
      (batch bookkeeping);
    * ``target_configs(config, gamma)``: the sampling settings of the ``gamma + 1`` verified
      rows (the last is the bonus row);
    * ``verify(p_rows, q_rows, drafts, rand, greedy) -> (block, accepted)``: verification
      (``greedy`` at temperature 0);
    * ``truncate(block_len, first_stop, budget) -> (committed, stopped)``: stop ids and budget;
    * ``crop(starts, kept, lengths) -> {row: entries}``: the target caches after the round;
    * ``sync(L, gamma, accepted) -> (draft crop, catch-up)``: the draft cache after the round;
    * ``tree_visible``, ``tree_position``, ``compact(cache, path, L)``: the tree mode's mask,
      positions and accepted-path KV compaction.
    """

    seed: Callable[[Request], int] = lambda request: request.seed
    propose: Callable[[Any, SamplingConfig, SeededRandom], tuple[int, list[float]]] = _propose
    penalise: Callable[[Sampling, Any, Sequence[int], Sequence[int]], Any] = Sampling.penalise
    visible: Callable[..., Any] = ix.visible
    position: Callable[..., Any] = ix.query_position
    route: Callable[[list[int], dict[int, int], list[Any]], list[Any]] = lambda live, starts, outputs: outputs
    target_configs: Callable[[SamplingConfig, int], list[SamplingConfig]] = lambda config, gamma: (
        [config] * (gamma + 1)
    )
    verify: Callable[..., tuple[list[int], int]] = verify_correctly
    truncate: Callable[[int, int, int], tuple[int, bool]] = _truncate
    crop: Callable[[Mapping[int, int], Mapping[int, int], Sequence[int]], dict[int, int]] = _crop
    sync: Callable[[Any, Any, Any], tuple[Any, Any]] = ix.draft_sync
    tree_visible: Callable[..., Any] = ix.tree_visible
    tree_position: Callable[..., Any] = ix.tree_position
    compact: Callable[[Any, Sequence[int], int], None] = _compact

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


def with_hooks(**replaced: Any) -> Hooks:
    """The correct hooks with ``replaced`` swapped in; an unknown hook name is a usage error."""
    unknown = sorted(set(replaced) - set(Hooks.names()))
    if unknown:
        raise UsageError(f"hooks {unknown} are not among the reference engine's seams {Hooks.names()}")
    return replace(Hooks(), **replaced)


def planted_hooks(bugs: Sequence[PlantedBug]) -> Hooks:
    """The correct hooks with every seam of ``bugs`` replaced; two bugs on one seam cannot be
    combined (a usage error naming them)."""
    seams: dict[str, Any] = {}
    for bug in bugs:
        for seam, replacement in bug.seams.items():
            if seam in seams:
                names = [b.name for b in bugs]
                raise UsageError(f"mutations {names} replace the same hook {seam!r}; plant one of them")
            seams[seam] = replacement
    return with_hooks(**seams)
