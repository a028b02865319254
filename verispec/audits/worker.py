"""The audit worker: runs a black-box verifier on audit instances and reports samples.

It runs as ``python -m verispec.audits.worker`` in a worker process (:mod:`verispec.isolation`:
one request per instance; the parent kills it when an instance exceeds its time limit and
restarts it on the next instance), or in-process through :func:`sample_instance` for a
callable the user trusts.

For every call, verispec draws the drafts from the instance's draft law, hands the black
box float arrays and its own seeded ``numpy.random.Generator``, checks the returned block,
and completes it to ``L`` tokens with plain target sampling; the completed sequence is a
sample of "one round, then target sampling", whose exact law is the target's when the
verifier is exact.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from verispec.audits.instances import AuditInstance, from_spec
from verispec.core.random import SeededRandom
from verispec.sampling import FloatInstance
from verispec.verifiers.instance import sample_drafts
from verispec.verifiers.trees import draft_tree

__all__ = ["BlackBoxError", "sample_instance"]

#: Offset between the seed of verispec's own draws and the black box's generator.
BOX_SEED_OFFSET = 1_000_003


class BlackBoxError(Exception):
    """The black box broke its contract on one call."""


def _as_block(raw: Any, max_len: int, vocab: int) -> list[int]:
    import numpy as np

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


def _chain_call(
    verify: Callable[..., Any], view: Any, rand: SeededRandom, rng: Any, draft_is_target: bool = False
) -> list[int]:
    import numpy as np

    tokens, rows = sample_drafts(view, rand)
    gamma = view.gamma
    target = np.array([view.target_probs(tuple(tokens[:i])) for i in range(gamma + 1)], dtype=np.float64)
    draft = np.array(rows, dtype=np.float64).reshape(gamma, view.vocab_size)
    block = _as_block(
        verify(target, draft, np.array(tokens, dtype=np.int64), rng), gamma + 1, view.vocab_size
    )
    if block[:-1] != tokens[: len(block) - 1]:
        raise BlackBoxError(f"returned {block}, whose accepted part is not a prefix of the drafts {tokens}")
    if draft_is_target and gamma >= 1 and block == tokens:
        raise BlackBoxError(
            f"returned exactly the {gamma} drafts {block} with no bonus token while the draft law equals "
            "the target's: after full acceptance the round must commit a bonus token"
        )
    return block


def _tree_call(
    verify: Callable[..., Any], view: Any, rand: SeededRandom, rng: Any, draft_is_target: bool = False
) -> list[int]:
    import numpy as np

    tree = draft_tree(view, rand)
    box = SimpleNamespace(
        tokens=np.array(tree.tokens, dtype=np.int64),
        parents=np.array(tree.parents, dtype=np.int64),
        target_probs=np.array(tree.target_probs, dtype=np.float64),
        draft_probs=np.array(tree.draft_probs, dtype=np.float64),
        sampling=tree.sampling,
    )
    block = _as_block(verify(box, rng), view.gamma + 1, view.vocab_size)
    nodes = [0]
    for i, t in enumerate(block[:-1]):
        nodes = [c for n in nodes for c in tree.children[n] if tree.tokens[c] == t]
        if not nodes:
            raise BlackBoxError(f"returned {block}: {block[: i + 1]} is not a path of the drafted tree")
    return block


def sample_instance(verify: Callable[..., Any], item: AuditInstance, n: int, seed: int) -> dict[str, Any]:
    """Call ``verify`` ``n`` times on ``item``; return the counts of completed sequences.

    A contract violation or an exception stops this instance and is reported in
    ``"error"`` together with the counts gathered before it.
    """
    import numpy as np

    view: Any = FloatInstance(item.instance)
    rand = SeededRandom(seed)
    rng = np.random.default_rng(seed + BOX_SEED_OFFSET)
    call = _tree_call if item.kind == "tree" else _chain_call
    length = item.length
    counts: Counter[str] = Counter()
    blocks: Counter[int] = Counter()
    error = None
    for i in range(n):
        try:
            block = call(verify, view, rand, rng, item.draft_is_target)
        except BlackBoxError as exc:
            error = f"call {i + 1}: the verifier {exc}"
            break
        except Exception as exc:
            error = f"call {i + 1}: the verifier raised {type(exc).__name__}: {exc}"
            break
        seq = list(block)
        while len(seq) < length:
            seq.append(rand.categorical(view.target_probs(tuple(seq))))
        counts[" ".join(map(str, seq[:length]))] += 1
        blocks[len(block)] += 1
    return {"counts": dict(counts), "block_lengths": {str(k): v for k, v in blocks.items()}, "error": error}


def _handler(config: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    from verispec.isolation import load_function

    verify = load_function(config["function"])

    def handle(item: dict[str, Any]) -> dict[str, Any]:
        return sample_instance(verify, from_spec(item["spec"]), item["n"], item["seed"])

    return handle


if __name__ == "__main__":
    from verispec.isolation import serve

    sys.exit(serve(_handler))
