"""The reference engine: speculative decoding in plain torch, built on proved index functions.

It runs a draft and a target :class:`~verispec.engines.torchlm.TorchLM` with their own KV
caches (contiguous, or paged with ``page_size``), verifies with the float execution of a
registered chain verifier (``token-level`` when sampling, ``greedy`` at temperature 0), and
takes every mask, position, crop, draft-sync and truncation from :mod:`verispec.smt.index`.

``mutations`` plant known bugs for the negative controls (see :data:`MUTATIONS`); the
unmutated engine must pass every check and each mutant must be caught by one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from verispec.core.random import SeededRandom
from verispec.core.transforms import SamplingConfig, apply_float
from verispec.engines.protocol import Completion, Request, RoundStat
from verispec.engines.torchlm import TorchLM
from verispec.errors import UsageError
from verispec.smt import index as ix
from verispec.verifiers import registry
from verispec.verifiers.trees import DraftTree

__all__ = ["MUTATIONS", "ReferenceEngine"]

#: Planted bugs: name -> what it does (and the public bug it reproduces).
MUTATIONS: dict[str, str] = {
    "crop-plus-one": "target cache cropped to L + accepted + 1: the rejected draft's KV stays visible",
    "top-left-mask": "verify pass with a top-left causal mask (SDPA is_causal on non-square inputs)",
    "positions-reset": "verify-pass positions restart at zero (RoPE off by the prefix length)",
    "draft-no-catch-up": "draft cache not caught up after full acceptance (d_gamma never fed)",
    "resample-target": "fresh target sample after a rejection instead of the residual",
    "softmax-residual": "softmax of clamp(p - q, 0) as the residual (transformers PR #28508)",
    "bonus-wrong-row": "bonus token drawn from the last draft position's target row",
    "missing-bonus": "no bonus token after full acceptance",
    "eos-budget-first": "length checked before stop ids: tokens after an EOS leak (SGLang #31599)",
    "no-eos-crop": "generation continues past an EOS accepted mid-block (transformers #47912)",
    "vocab-overflow": "a correction id outside the vocabulary when the residual's last bin wins (vLLM GHSA)",
    "unseeded": "ignores the request seed (not reproducible)",
    "draft-temperature-ignored": "drafts at T=1 inside the declared support, q declared at the request's T",
    "target-default-params": "target probabilities scored with default settings (T=1, no truncation)",
    "greedy-draft-softmax-q": "drafts by argmax while q is declared as the softmax",
    "raw-q-processed-draft": "drafts sampled after a default top-k of 2, q declared from raw logits",
    "draft-probs-none": "q taken as a point mass at the sampled draft (draft_probs=None)",
    "min-p-verify-ignored": "min_p applied to the bonus row only, not to the verified rows",
    "always-accept": "the acceptance uniform fixed at 0: every draft accepted",
    "reused-uniform": "one uniform reused for the acceptance test and the residual draw",
    "unnormalised-draft": "q from draft logits without their normaliser (exp(l - max) / V)",
    "bonus-untruncated": "top-k, top-p and min-p not applied to the bonus row",
    "crop-no-op": "the target cache is never trimmed: rejected drafts stay in it",
    "penalty-ignored": "the frequency penalty applied without speculation only, not on the speculative path",
    # batches with ragged acceptance
    "ragged-shared-offset": "every row's cache advanced by the first row's accepted count (mlx-vlm #1155)",
    "batch-order-by-length": "verify rows matched to requests in length order, not batch order (vLLM #14645)",
    # tree mode
    "tree-sibling-visible": "tree mask lets siblings attend to each other",
    "tree-depth-mask": "a position-causal mask used as the tree mask (depth(y) <= depth(x))",
    "tree-positions-by-row": "tree nodes at sequential positions L - 1 + node instead of L - 1 + depth",
    "tree-no-compaction": "target cache cropped to the path length without moving the accepted KV",
}
TREE_MUTATIONS = frozenset(m for m in MUTATIONS if m.startswith("tree-"))


#: The top-k a candidate generator applies by default in ``raw-q-processed-draft``.
RAW_Q_TOP_K = 2


def _always_accept(p_rows: Any, q_rows: Any, drafts: Sequence[int], rand: SeededRandom) -> list[int]:
    """Every draft accepted (a uniform fixed at 0), then a bonus token from the last row."""
    return [*drafts, rand.categorical(p_rows[len(drafts)])]


def _along(model: Any, prompt: Sequence[int], tokens: Sequence[int]) -> Any:
    """Logits predicting each of ``tokens`` after ``prompt`` and the tokens before it (one pass)."""
    import torch

    ids = torch.tensor([[*prompt, *tokens]], device=model.device)
    with torch.no_grad():
        logits = model(ids).logits[0].float().cpu()
    return logits[len(prompt) - 1 : len(prompt) - 1 + len(tokens)]


def _probs(logits: Any, config: Any) -> list[float]:
    import torch

    row = torch.softmax(logits.double(), dim=-1).cpu().numpy()
    return [float(v) for v in apply_float(row, config)]


@dataclass
class _Row:
    """One request's state in a batch of chain rounds."""

    request: Request
    rand: SeededRandom
    config: Any
    draft_config: Any
    verify: Callable[..., Any]
    committed: list[int]
    out: list[int] = field(default_factory=list)
    rounds: list[RoundStat] = field(default_factory=list)
    done: Completion | None = None

    @classmethod
    def start(cls, request: Request, engine: ReferenceEngine) -> _Row:
        config = request.sampling.config()
        ignored = "draft-temperature-ignored" in engine.mutations
        row = cls(
            request,
            SeededRandom(engine._seed(request)),
            config,
            config.without_temperature() if ignored else config,
            engine._verify_fn(config.is_greedy),
            list(request.prompt),
        )
        if request.max_new_tokens <= 0:
            row.done = Completion([], "length", [])
        return row


class ReferenceEngine:
    """Speculative decoding with ``gamma`` drafts per round (see the module docstring)."""

    def __init__(
        self,
        target: Any,
        draft: Any,
        *,
        gamma: int = 3,
        page_size: int | None = None,
        mutations: Sequence[str] = (),
        name: str = "reference",
        tree: Sequence[int] | None = None,
        max_batch: int = 8,
    ) -> None:
        if not isinstance(max_batch, int) or max_batch < 1:
            raise UsageError(f"max_batch={max_batch!r} must be an integer >= 1")
        for m in mutations:
            if m not in MUTATIONS:
                raise UsageError(f"mutation={m!r} is not one of {', '.join(MUTATIONS)}")
            if (m in TREE_MUTATIONS) != (tree is not None):
                raise UsageError(
                    f"mutation={m!r} applies to the {'tree' if m in TREE_MUTATIONS else 'chain'} engine only"
                )
        if tree is not None and (not tree or any(not isinstance(k, int) or k < 1 for k in tree)):
            raise UsageError(f"tree={tree!r} must list children per depth, each >= 1")
        if gamma < 1:
            raise UsageError(f"gamma={gamma!r} must be >= 1")
        import torch

        self.torch = torch
        self.hf_target, self.hf_draft = target, draft
        self.lm_target, self.lm_draft = TorchLM(target), TorchLM(draft)
        self.tree = tuple(tree) if tree is not None else None
        self.gamma = len(self.tree) if self.tree else gamma  # the longest path a round can accept
        self.page_size = page_size
        self.max_batch = max_batch
        self.mutations = frozenset(mutations)
        self.name = name + (f"[{','.join(sorted(self.mutations))}]" if self.mutations else "")
        self.vocab_size = int(target.config.vocab_size)
        # the "unseeded" mutant still claims "seeded": that claim is what the check tests
        self.capabilities = frozenset(
            {
                "scripted-drafts",
                "round-stats",
                "non-speculative",
                "draft-model",
                "seeded",
                "batch",
                "penalties",
            }
            if self.tree is None
            # per-round accounting and scripts are chain-shaped; a tree engine offers neither
            else {"non-speculative", "seeded"}
        )

    # ----------------------------------------------------------------- baselines
    def _plain_logits(self, model: Any, prefixes: list[tuple[int, ...]]) -> Any:
        torch = self.torch
        out = []
        with torch.no_grad():
            for prefix in prefixes:
                ids = torch.tensor([list(prefix)], device=model.device)
                out.append(model(ids).logits[0, -1].float().cpu())
        return torch.stack(out)

    def target_logits(self, prefixes: list[tuple[int, ...]]) -> Any:
        return self._plain_logits(self.hf_target, prefixes)

    def draft_logits(self, prefixes: list[tuple[int, ...]]) -> Any:
        return self._plain_logits(self.hf_draft, prefixes)

    def target_logits_along(self, prompt: Sequence[int], tokens: Sequence[int]) -> Any:
        return _along(self.hf_target, prompt, tokens)

    def draft_logits_along(self, prompt: Sequence[int], tokens: Sequence[int]) -> Any:
        return _along(self.hf_draft, prompt, tokens)

    # ------------------------------------------------------------------ decoding
    def generate(self, requests: list[Request]) -> list[Completion]:
        """Non-speculative and tree requests run one by one; speculative chain requests run
        together in batches of up to ``max_batch`` rows."""
        for i, r in enumerate(requests):
            if len(r.prompt) < 1:
                raise UsageError(f"requests[{i}].prompt=() is empty")
            bad = [t for t in r.prompt if not 0 <= t < self.vocab_size]
            if bad:
                raise UsageError(
                    f"requests[{i}].prompt holds id {bad[0]} outside the vocabulary 0..{self.vocab_size - 1}"
                )
        results: list[Completion | None] = [None] * len(requests)
        chain = [i for i, r in enumerate(requests) if r.speculative and self.tree is None]
        for i, r in enumerate(requests):
            if i not in chain:
                results[i] = self._one(r)
        for start in range(0, len(chain), self.max_batch):
            part = chain[start : start + self.max_batch]
            for i, completion in zip(part, self._chain([requests[i] for i in part]), strict=True):
                results[i] = completion
        return [c for c in results if c is not None]

    def _verify_fn(self, greedy: bool) -> Callable[..., Any]:
        if greedy:
            return registry.get("greedy").verify
        if "always-accept" in self.mutations:
            return _always_accept
        for m in (
            "resample-target",
            "softmax-residual",
            "bonus-wrong-row",
            "missing-bonus",
            "reused-uniform",
        ):
            if m in self.mutations:
                return registry.get(m).verify
        return registry.get("token-level").verify

    def _seed(self, request: Request) -> int:
        return int(time.time_ns() % 2**31) if "unseeded" in self.mutations else request.seed

    def _one(self, request: Request) -> Completion:
        """A non-speculative or tree request, alone."""
        if self.tree is not None and request.speculative and request.sampling.frequency_penalty:
            raise UsageError("the tree engine does not apply frequency_penalty (no 'penalties' capability)")
        torch = self.torch
        rand = SeededRandom(self._seed(request))
        config = request.sampling.config()
        capacity = len(request.prompt) + request.max_new_tokens + 2 * self.gamma + 4
        t_cache = self.lm_target.new_cache(capacity, self.page_size)
        d_cache = self.lm_draft.new_cache(capacity, self.page_size)
        prompt = list(request.prompt)

        def tensor(tokens: list[int]) -> Any:
            return torch.tensor(tokens, device=self.lm_target.device)

        with torch.no_grad():
            if len(prompt) > 1:
                self.lm_target.causal_forward(tensor(prompt[:-1]), t_cache)
                self.lm_draft.causal_forward(tensor(prompt[:-1]), d_cache)
            if not request.speculative:
                return self._plain(request, prompt, t_cache, rand, config, tensor)
            return self._tree_decode(request, prompt, t_cache, rand, config, tensor)

    def _chain(self, requests: list[Request]) -> list[Completion]:
        """Speculative chain rounds for a batch of requests: every draft step and every
        verify pass is one batched forward over the rows still running, whose lengths are
        ragged (each row accepts its own number of drafts). Each row keeps its own seeded
        random stream, so a row's tokens do not depend on its batch."""
        torch = self.torch
        rows = [_Row.start(r, self) for r in requests]
        capacity = max(len(r.prompt) + r.max_new_tokens for r in requests) + 2 * self.gamma + 4
        if "crop-no-op" in self.mutations:
            capacity *= self.gamma + 1  # every round leaves its whole block in the cache
        t_cache = self.lm_target.new_batch_cache(len(rows), capacity, self.page_size)
        d_cache = self.lm_draft.new_batch_cache(len(rows), capacity, self.page_size)
        visible = ix.wrong_visible_top_left if "top-left-mask" in self.mutations else ix.visible
        position = ix.wrong_position_reset if "positions-reset" in self.mutations else ix.query_position
        sync = ix.wrong_draft_sync_no_catch_up if "draft-no-catch-up" in self.mutations else ix.draft_sync
        with torch.no_grad():
            prefill = [list(r.request.prompt[:-1]) for r in rows]
            self.lm_target.batch_causal_forward(prefill, t_cache)
            self.lm_draft.batch_causal_forward(prefill, d_cache)
            while True:
                live = [b for b, r in enumerate(rows) if r.done is None]
                if not live:
                    break
                starts = {b: len(rows[b].committed) for b in live}
                drafts: dict[int, list[int]] = {b: [] for b in live}
                q_rows: dict[int, list[list[float]]] = {b: [] for b in live}
                for i in range(self.gamma):
                    feed = [
                        [] if b not in drafts else [rows[b].committed[-1] if i == 0 else drafts[b][-1]]
                        for b in range(len(rows))
                    ]
                    laws = self.lm_draft.batch_causal_forward(feed, d_cache)
                    for b in live:
                        row = rows[b]
                        if row.request.script:
                            q = self._scripted(row.request, row.committed, drafts[b], i, row.config)
                        else:
                            q = None
                        token, declared = self._propose(row, laws[b][-1], q, drafts[b])
                        drafts[b].append(token)
                        q_rows[b].append(declared)
                verify_feed = [
                    [rows[b].committed[-1], *drafts[b]] if b in drafts else [] for b in range(len(rows))
                ]
                logits = self.lm_target.batch_causal_forward(
                    verify_feed, t_cache, visible=visible, position=position
                )
                if "batch-order-by-length" in self.mutations:
                    # verify rows handed back in the order of the rows' lengths, not the batch order
                    order = sorted(live, key=lambda b: starts[b])
                    logits = list(logits)
                    taken = {b: logits[b] for b in live}
                    for b, source in zip(live, order, strict=True):
                        logits[b] = taken[source]
                kept: dict[int, int] = {}
                for b in live:
                    kept[b] = self._settle(rows[b], starts[b], drafts[b], q_rows[b], logits[b])
                catch_up_feed: list[list[int]] = [[] for _ in rows]
                first_kept = kept[live[0]]
                for b in live:
                    L = starts[b]
                    if "ragged-shared-offset" in self.mutations:
                        # every row advanced by the first live row's block (mlx-vlm PR #1155)
                        crop = min(ix.next_offset(L - 1, first_kept), t_cache.lengths[b])
                    elif "crop-no-op" in self.mutations:
                        crop = t_cache.lengths[b]  # a cache that cannot be trimmed keeps the rejected drafts
                    elif "crop-plus-one" in self.mutations:
                        crop = min(ix.wrong_crop_plus_one(L, kept[b]), t_cache.lengths[b])
                    else:
                        crop = ix.target_crop_length(L, kept[b])
                    t_cache.crop(b, crop)
                    d_crop, catch_up = sync(L, self.gamma, kept[b])
                    d_cache.crop(b, d_crop)
                    if catch_up and rows[b].done is None:
                        catch_up_feed[b] = drafts[b][self.gamma - catch_up :]
                self.lm_draft.batch_causal_forward(catch_up_feed, d_cache)
        return [r.done for r in rows if r.done is not None]

    def _penalised(self, row: _Row, logits: Any, pending: Sequence[int]) -> Any:
        """The request's frequency penalty over its generated tokens and ``pending`` drafts (the
        ``penalty-ignored`` mutant skips it on the speculative path)."""
        if "penalty-ignored" in self.mutations:
            return logits
        return row.request.sampling.penalise(logits, [*row.out, *pending])

    def _propose(
        self, row: _Row, logits: Any, scripted: list[float] | None, drafts_so_far: Sequence[int]
    ) -> tuple[int, list[float]]:
        """One draft token and the law declared to the verifier for it."""
        if scripted is not None:
            return row.rand.categorical(scripted), scripted
        m = self.mutations
        logits = self._penalised(row, logits, drafts_so_far)
        declared = _probs(logits, row.config)
        if "greedy-draft-softmax-q" in m:
            token = max(range(len(declared)), key=lambda t: (declared[t], -t))
        elif "raw-q-processed-draft" in m:
            # drafts from a top-k-processed law (a default top_k in the generator), q from raw logits
            k = min(row.config.top_k or self.vocab_size, RAW_Q_TOP_K)
            token = row.rand.categorical(_probs(logits, replace(row.draft_config, top_k=k)))
        elif "draft-temperature-ignored" in m:
            # drafts at T=1, kept inside the declared support (so no guard trips on them)
            law = _probs(logits, row.draft_config)
            token = row.rand.categorical([a if d > 0 else 0.0 for a, d in zip(law, declared, strict=True)])
        else:
            token = row.rand.categorical(_probs(logits, row.draft_config))
        if "draft-probs-none" in m:
            declared = [1.0 if t == token else 0.0 for t in range(len(declared))]
        if "unnormalised-draft" in m and not row.config.is_greedy:
            # exp(l / T - max) over the vocabulary size instead of over its sum: q unnormalised
            # (each entry at most its normalised value, so the residual never vanishes)
            import torch

            scaled = logits.double() / float(row.config.temperature)
            raw = (torch.exp(scaled - scaled.max()) / len(declared)).tolist()
            declared = [r if d > 0 else 0.0 for r, d in zip(raw, declared, strict=True)]
        return token, declared

    def _settle(self, row: _Row, L: int, drafts: list[int], q_rows: list[list[float]], logits: Any) -> int:
        """Verify one row's block, commit it (truncated at a stop id and at the budget) and
        record the round; returns how many drafts the caches keep."""
        request = row.request
        configs = [row.config] * (self.gamma + 1)
        if "target-default-params" in self.mutations:
            configs = [SamplingConfig()] * (self.gamma + 1)
        if "min-p-verify-ignored" in self.mutations:
            configs[: self.gamma] = [replace(row.config, min_p=None)] * self.gamma
        if "bonus-untruncated" in self.mutations:
            configs[self.gamma] = replace(row.config, top_k=None, top_p=None, min_p=None)
        p_rows = [
            _probs(self._penalised(row, logits[r], drafts[:r]), configs[r]) for r in range(self.gamma + 1)
        ]
        block = [int(t) for t in row.verify(p_rows, q_rows, drafts, row.rand)]
        kept = len(block) - 1
        accepted = self.gamma if ("missing-bonus" in self.mutations and block == drafts) else kept
        if "vocab-overflow" in self.mutations and kept < self.gamma:
            residual = [max(a - b, 0.0) for a, b in zip(p_rows[kept], q_rows[kept], strict=True)]
            if block[-1] == max(t for t, v in enumerate(residual) if v > 0):
                # the masked tail of the last tile wins the tie-break; the id is returned to the
                # caller, and the request ends there (it cannot be fed back)
                row.done = Completion([*row.out, *block[:-1], self.vocab_size], "length", row.rounds)
                return kept
        eos = next((i for i, t in enumerate(block) if t in request.stop_ids), len(block))
        budget = request.max_new_tokens - len(row.out)
        if "eos-budget-first" in self.mutations:
            count = ix.wrong_truncation_budget_first(len(block), eos, budget)
        elif "no-eos-crop" in self.mutations:
            count = min(len(block), budget)
        else:
            count = ix.committed_count(len(block), eos, budget)
        block = block[:count]
        row.rounds.append(RoundStat(L, accepted, len(block), tuple(drafts)))
        row.committed += block
        row.out += block
        stopped = any(t in request.stop_ids for t in block)
        if stopped and "no-eos-crop" not in self.mutations:
            row.done = Completion(row.out, "stop", row.rounds)
        elif len(row.out) >= request.max_new_tokens:
            row.done = Completion(row.out, "length", row.rounds)
        return kept

    def _plain(
        self, request: Request, prompt: list[int], cache: Any, rand: SeededRandom, config: Any, tensor: Any
    ) -> Completion:
        committed = list(prompt)
        out: list[int] = []
        while len(out) < request.max_new_tokens:
            logits = self.lm_target.causal_forward(tensor([committed[-1]]), cache)[-1]
            p = _probs(request.sampling.penalise(logits, out), config)
            y = rand.categorical(p) if not config.is_greedy else max(range(len(p)), key=lambda t: (p[t], -t))
            committed.append(y)
            out.append(y)
            if y in request.stop_ids:
                return Completion(out, "stop")
        return Completion(out, "length")

    def _tree_decode(
        self, request: Request, prompt: list[int], cache: Any, rand: SeededRandom, config: Any, tensor: Any
    ) -> Completion:
        """Tree rounds: i.i.d. children per node from the draft model (``self.tree`` children
        per depth), one target pass with the tree mask, ``mss`` (``greedy-tree`` at
        temperature 0), then compaction of the accepted path's KV and a crop."""
        assert self.tree is not None
        entry = registry.get("greedy-tree" if config.is_greedy else "mss")
        assert isinstance(entry, registry.TreeVerifier)
        verify = entry.verify
        visible = ix.tree_visible
        if "tree-sibling-visible" in self.mutations:
            visible = ix.wrong_tree_visible_siblings
        if "tree-depth-mask" in self.mutations:
            visible = ix.wrong_tree_position_causal
        position = ix.tree_position
        if "tree-positions-by-row" in self.mutations:
            position = lambda parents, x, L, max_depth: ix.query_position(x, L)  # noqa: E731
        committed = list(prompt)
        out: list[int] = []
        rounds: list[RoundStat] = []
        while len(out) < request.max_new_tokens:
            L = len(committed)
            tokens, parents = [committed[-1]], [-1]
            frontier = [0]
            q_rows: list[list[float]] = []
            for width in self.tree:
                paths = [self._path(tokens, parents, node) for node in frontier]
                laws = self.draft_logits([tuple(committed + path) for path in paths])
                nxt = []
                for node, logits in zip(frontier, laws, strict=True):
                    q = _probs(logits, config)
                    q_rows.append(q)
                    for _ in range(width):
                        tokens.append(rand.categorical(q))
                        parents.append(node)
                        nxt.append(len(tokens) - 1)
                frontier = nxt
            # the leaves' draft law is never drawn from; it is recorded for the tree's contract
            leaves = [tuple(committed + self._path(tokens, parents, n)) for n in frontier]
            leaf_laws = self.draft_logits(leaves)
            q_rows += [_probs(logits, config) for logits in leaf_laws]
            logits = self.lm_target.tree_forward(
                tensor(tokens), parents, cache, visible=visible, position=position
            )
            p_rows = [_probs(logits[i], config) for i in range(len(tokens))]
            tree = DraftTree(tuple(tokens), tuple(parents), tuple(p_rows), tuple(q_rows), "iid")
            block = [int(t) for t in verify(tree, rand)]
            path = [0]
            for t in block[:-1]:  # the accepted nodes (the first child with the token: duplicates share KV)
                path.append(next(c for c in tree.children[path[-1]] if tokens[c] == t))
            if "tree-no-compaction" not in self.mutations:
                for j, row in enumerate(path):
                    src, dst = ix.compaction_plan(j, row, L)
                    if src != dst:
                        cache.move(src, dst)
            cache.crop(ix.target_crop_length(L, len(path) - 1))
            eos = next((i for i, t in enumerate(block) if t in request.stop_ids), len(block))
            block = block[: ix.committed_count(len(block), eos, request.max_new_tokens - len(out))]
            rounds.append(RoundStat(L, len(path) - 1, len(block), tuple(tokens[1:])))
            committed += block
            out += block
            if any(t in request.stop_ids for t in block):
                return Completion(out, "stop", rounds)
        return Completion(out, "length", rounds)

    @staticmethod
    def _path(tokens: list[int], parents: list[int], node: int) -> list[int]:
        """The draft tokens on the way from the root to ``node`` (root excluded)."""
        path = []
        while node > 0:
            path.append(tokens[node])
            node = parents[node]
        return path[::-1]

    def _scripted(
        self, request: Request, committed: list[int], drafts: list[int], i: int, config: Any
    ) -> list[float] | None:
        """The draft law a script imposes at draft ``i``: the target's own law before the
        forced position (always accepted), a token the target cannot emit at it (always
        rejected)."""
        script = request.script or {}
        position = (
            self.gamma if script.get("kind") == "full-acceptance" else int(script.get("position", self.gamma))
        )
        logits = self.target_logits([tuple(committed + drafts)])[0]
        generated = [*committed[len(request.prompt) :], *drafts]
        p = _probs(request.sampling.penalise(logits, generated), config)
        if i < position:
            return p
        if i == position:
            impossible = [t for t in range(len(p)) if p[t] == 0]
            if not impossible:
                raise UsageError(
                    "a forced rejection needs a token the target cannot emit: use top-k or top-p sampling"
                )
            row = [0.0] * len(p)
            row[impossible[0]] = 1.0
            return row
        return None


def make_reference(
    *,
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    page_size: int | None = None,
    mutations: Sequence[str] = (),
    device: str = "cpu",
    tree: Sequence[int] | None = None,
) -> ReferenceEngine:
    """The reference engine on a tiny seeded model pair (``tree``: children per depth)."""
    from verispec.engines.tiny import tiny_pair

    pair = tiny_pair(size, seed=seed, device=device)
    name = "reference-tree" if tree else "reference-paged" if page_size else "reference"
    return ReferenceEngine(
        pair.target, pair.draft, gamma=gamma, page_size=page_size, mutations=mutations, name=name, tree=tree
    )
