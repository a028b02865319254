"""The reference engine's rounds: chain batches and tree rounds, each step through its hooks.

It runs a draft and a target :class:`~verispec.engines.torchlm.TorchLM` with their own KV
caches (contiguous, or paged with ``page_size``), verifies with the float execution of a
registered chain verifier (``token-level`` when sampling, ``greedy`` at temperature 0), and
takes every mask, position, crop, draft-sync and truncation from :mod:`verispec.smt.index`.

A round reads like the algorithm: propose ``gamma`` drafts, one verify pass, verify, commit
the block (truncated at a stop id and at the budget), crop the target cache, sync the draft
cache. Each step is a seam of :class:`~verispec.engines.reference.hooks.Hooks`, and a planted
bug (:mod:`verispec.engines.reference.hooks`) replaces exactly one of them; the round never
names one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verispec.core.random import SeededRandom
from verispec.engines import registry as engines
from verispec.engines.model_pairs import load_pair
from verispec.engines.protocol import Completion, Request, RoundStat
from verispec.engines.reference.hooks import Hooks, planted_hooks, probs
from verispec.engines.registry import builtin_engine
from verispec.engines.torchlm import TorchLM, along
from verispec.errors import UsageError
from verispec.smt import index as ix
from verispec.verifiers import registry
from verispec.verifiers.trees import DraftTree

__all__ = ["CHAIN_CAPABILITIES", "TREE_CAPABILITIES", "ReferenceEngine", "make_reference"]


@dataclass
class _Row:
    """One request's state in a batch of chain rounds."""

    request: Request
    rand: SeededRandom
    config: Any
    committed: list[int]
    out: list[int] = field(default_factory=list)
    rounds: list[RoundStat] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each of ``out`` was committed
    done: Completion | None = None


class ReferenceEngine:
    """Speculative decoding with ``gamma`` drafts per round (see the module docstring)."""

    def __init__(
        self,
        target: Any,
        draft: Any,
        *,
        gamma: int = 3,
        page_size: int | None = None,
        hooks: Hooks | None = None,
        name: str = "reference",
        tree: Sequence[int] | None = None,
        max_batch: int = 8,
    ) -> None:
        if not isinstance(max_batch, int) or max_batch < 1:
            raise UsageError(f"max_batch={max_batch!r} must be an integer >= 1")
        if tree is not None and (not tree or any(not isinstance(k, int) or k < 1 for k in tree)):
            raise UsageError(f"tree={tree!r} must list children per depth, each >= 1")
        if gamma < 1:
            raise UsageError(f"gamma={gamma!r} must be >= 1")
        import torch  # deferred: heavy

        self.torch = torch
        self.hf_target, self.hf_draft = target, draft
        self.lm_target, self.lm_draft = TorchLM(target), TorchLM(draft)
        self.tree = tuple(tree) if tree is not None else None
        self.gamma = len(self.tree) if self.tree else gamma  # the longest path a round can accept
        self.page_size = page_size
        self.max_batch = max_batch
        self.hooks = hooks or Hooks()
        self.name = name
        self._start_time = time.perf_counter()
        #: real text prompts (token ids) of a trained model; none for seeded ones
        self.prompts: list[tuple[int, ...]] = []
        self.prompt_kinds: list[str] = []  # one per prompt ("rewrite", "open")
        self.vocab_size = int(target.config.vocab_size)
        self.device = str(self.lm_target.device)
        #: what the engine promises (:data:`CHAIN_CAPABILITIES` or :data:`TREE_CAPABILITIES`),
        #: set by the registry that builds it; a planted bug that ignores seeds still claims
        #: "seeded": that claim is what the check tests
        self.capabilities: frozenset[str] = frozenset()

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
        return along(self.hf_target, prompt, tokens)

    def draft_logits_along(self, prompt: Sequence[int], tokens: Sequence[int]) -> Any:
        return along(self.hf_draft, prompt, tokens)

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
        self._start_time = time.perf_counter()  # token times count from here (``token-times``)
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

    def _one(self, request: Request) -> Completion:
        """A non-speculative or tree request, alone."""
        if self.tree is not None and request.speculative and request.sampling.penalised:
            raise UsageError("the tree engine does not apply penalties (no 'penalties' capability)")
        torch = self.torch
        rand = SeededRandom(self.hooks.seed(request))
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

    def _start(self, request: Request) -> _Row:
        config = request.sampling.config()
        row = _Row(request, SeededRandom(self.hooks.seed(request)), config, list(request.prompt))
        if request.max_new_tokens <= 0:
            row.done = Completion([], "length", [], token_times=[])
        return row

    def _now(self) -> float:
        """Seconds since the start of the current ``generate`` call."""
        return time.perf_counter() - self._start_time

    def _chain(self, requests: list[Request]) -> list[Completion]:
        """Speculative chain rounds for a batch of requests: every draft step and every
        verify pass is one batched forward over the rows still running, whose lengths are
        ragged (each row accepts its own number of drafts). Each row keeps its own seeded
        random stream, so a row's tokens do not depend on its batch."""
        torch = self.torch
        hooks = self.hooks
        rows = [self._start(r) for r in requests]
        longest = max(len(r.prompt) + r.max_new_tokens for r in requests) + 2 * self.gamma + 4
        # room for every block of every round: a crop that keeps them all cannot overflow
        capacity = longest * (self.gamma + 1)
        t_cache = self.lm_target.new_batch_cache(len(rows), capacity, self.page_size)
        d_cache = self.lm_draft.new_batch_cache(len(rows), capacity, self.page_size)
        with torch.no_grad():
            prefill = [list(r.request.prompt[:-1]) for r in rows]
            self.lm_target.batch_causal_forward(prefill, t_cache)
            self.lm_draft.batch_causal_forward(prefill, d_cache)
            while True:
                live = [b for b, r in enumerate(rows) if r.done is None]
                if not live:
                    break
                starts = {b: len(rows[b].committed) for b in live}
                drafts, q_rows = self._draft_block(rows, live, d_cache)
                verify_feed = [
                    [rows[b].committed[-1], *drafts[b]] if b in drafts else [] for b in range(len(rows))
                ]
                outputs = self.lm_target.batch_causal_forward(
                    verify_feed, t_cache, visible=hooks.visible, position=hooks.position
                )
                outputs = hooks.route(live, starts, list(outputs))
                kept = {b: self._settle(rows[b], starts[b], drafts[b], q_rows[b], outputs[b]) for b in live}
                for b, length in hooks.crop(starts, kept, t_cache.lengths).items():
                    t_cache.crop(b, length)
                catch_up_feed: list[list[int]] = [[] for _ in rows]
                for b in live:
                    d_crop, catch_up = hooks.sync(starts[b], self.gamma, kept[b])
                    d_cache.crop(b, d_crop)
                    if catch_up and rows[b].done is None:
                        catch_up_feed[b] = drafts[b][self.gamma - catch_up :]
                self.lm_draft.batch_causal_forward(catch_up_feed, d_cache)
        return [r.done for r in rows if r.done is not None]

    def _draft_block(
        self, rows: list[_Row], live: list[int], d_cache: Any
    ) -> tuple[dict[int, list[int]], dict[int, list[list[float]]]]:
        """``gamma`` draft steps for the live rows, one batched draft forward each: the
        drafts, and the law declared to the verifier for each."""
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
                scripted = self._scripted(row.request, row.committed, drafts[b], i, row.config)
                if scripted is not None:
                    token, declared = row.rand.categorical(scripted), scripted
                else:
                    logits = self._penalised(row, laws[b][-1], drafts[b])
                    token, declared = self.hooks.propose(logits, row.config, row.rand)
                drafts[b].append(token)
                q_rows[b].append(declared)
        return drafts, q_rows

    def _penalised(self, row: _Row, logits: Any, pending: Sequence[int]) -> Any:
        """The request's penalties over its generated tokens and ``pending`` drafts."""
        return self.hooks.penalise(row.request.sampling, logits, [*row.out, *pending], row.request.prompt)

    def _settle(self, row: _Row, L: int, drafts: list[int], q_rows: list[list[float]], logits: Any) -> int:
        """Verify one row's block, commit it (truncated at a stop id and at the budget) and
        record the round; returns how many drafts the caches keep."""
        request = row.request
        configs = self.hooks.target_configs(row.config, self.gamma)
        p_rows = [
            probs(self._penalised(row, logits[r], drafts[:r]), configs[r]) for r in range(self.gamma + 1)
        ]
        block, accepted = self.hooks.verify(p_rows, q_rows, drafts, row.rand, row.config.is_greedy)
        kept = len(block) - 1  # the last token is the new pending one: no KV yet
        eos = next((i for i, t in enumerate(block) if t in request.stop_ids), len(block))
        count, stopped = self.hooks.truncate(len(block), eos, request.max_new_tokens - len(row.out))
        block = block[:count]
        row.rounds.append(RoundStat(L, accepted, len(block), tuple(drafts)))
        row.committed += block
        row.out += block
        row.times += [self._now()] * len(block)
        if any(not 0 <= t < self.vocab_size for t in block):
            # an id outside the vocabulary cannot be fed back: it is returned and the request ends
            row.done = Completion(row.out, "length", row.rounds, token_times=row.times)
        elif stopped:
            row.done = Completion(row.out, "stop", row.rounds, token_times=row.times)
        elif len(row.out) >= request.max_new_tokens:
            row.done = Completion(row.out, "length", row.rounds, token_times=row.times)
        return kept

    def _plain(
        self, request: Request, prompt: list[int], cache: Any, rand: SeededRandom, config: Any, tensor: Any
    ) -> Completion:
        committed = list(prompt)
        out: list[int] = []
        times: list[float] = []
        while len(out) < request.max_new_tokens:
            logits = self.lm_target.causal_forward(tensor([committed[-1]]), cache)[-1]
            p = probs(request.sampling.penalise(logits, out, request.prompt), config)
            y = rand.categorical(p) if not config.is_greedy else max(range(len(p)), key=lambda t: (p[t], -t))
            committed.append(y)
            out.append(y)
            times.append(self._now())
            if y in request.stop_ids:
                return Completion(out, "stop", token_times=times)
        return Completion(out, "length", token_times=times)

    def _tree_decode(
        self, request: Request, prompt: list[int], cache: Any, rand: SeededRandom, config: Any, tensor: Any
    ) -> Completion:
        """Tree rounds: i.i.d. children per node from the draft model (``self.tree`` children
        per depth), one target pass with the tree mask, ``mss`` (``greedy-tree`` at
        temperature 0), then compaction of the accepted path's KV and a crop."""
        assert self.tree is not None
        hooks = self.hooks
        entry = registry.get("greedy-tree" if config.is_greedy else "mss")
        assert isinstance(entry, registry.TreeVerifier)
        verify = entry.verify
        committed = list(prompt)
        out: list[int] = []
        times: list[float] = []
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
                    q = probs(logits, config)
                    q_rows.append(q)
                    for _ in range(width):
                        tokens.append(rand.categorical(q))
                        parents.append(node)
                        nxt.append(len(tokens) - 1)
                frontier = nxt
            # the leaves' draft law is never drawn from; it is recorded for the tree's contract
            leaves = [tuple(committed + self._path(tokens, parents, n)) for n in frontier]
            leaf_laws = self.draft_logits(leaves)
            q_rows += [probs(logits, config) for logits in leaf_laws]
            logits = self.lm_target.tree_forward(
                tensor(tokens), parents, cache, visible=hooks.tree_visible, position=hooks.tree_position
            )
            p_rows = [probs(logits[i], config) for i in range(len(tokens))]
            tree = DraftTree(tuple(tokens), tuple(parents), tuple(p_rows), tuple(q_rows), "iid")
            block = [int(t) for t in verify(tree, rand)]
            path = [0]
            for t in block[:-1]:  # the accepted nodes (the first child with the token: duplicates share KV)
                path.append(next(c for c in tree.children[path[-1]] if tokens[c] == t))
            hooks.compact(cache, path, L)
            cache.crop(ix.target_crop_length(L, len(path) - 1))
            eos = next((i for i, t in enumerate(block) if t in request.stop_ids), len(block))
            block = block[: ix.committed_count(len(block), eos, request.max_new_tokens - len(out))]
            rounds.append(RoundStat(L, len(path) - 1, len(block), tuple(tokens[1:])))
            committed += block
            out += block
            times += [self._now()] * len(block)
            if any(t in request.stop_ids for t in block):
                return Completion(out, "stop", rounds, token_times=times)
        return Completion(out, "length", rounds, token_times=times)

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
        """The draft law a script imposes at draft ``i`` (``None`` without a script, or after
        the forced position): the target's own law before the forced position (always
        accepted), a token the target cannot emit at it (always rejected)."""
        script = request.script
        if not script:
            return None
        position = (
            self.gamma if script.get("kind") == "full-acceptance" else int(script.get("position", self.gamma))
        )
        logits = self.target_logits([tuple(committed + drafts)])[0]
        generated = [*committed[len(request.prompt) :], *drafts]
        p = probs(request.sampling.penalise(logits, generated, request.prompt), config)
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


#: What the chain engine declares; a tree engine offers no per-round accounting or scripts
#: (they are chain-shaped).
CHAIN_CAPABILITIES = (
    "target-logits",
    "scripted-drafts",
    "round-stats",
    "non-speculative",
    "draft-model",
    "seeded",
    "batch",
    "penalties",
    "token-times",
)
TREE_CAPABILITIES = ("target-logits", "non-speculative", "seeded", "token-times")


# stacked decorators register bottom-up: reference, reference-paged, reference-tree
@builtin_engine(
    "reference-tree",
    summary="the reference engine in tree mode: 2 x 2 i.i.d. children, MSS verification, KV compaction",
    extra="transformers",
    capabilities=TREE_CAPABILITIES,
    tree=(2, 2),
    page_size=4,
)
@builtin_engine(
    "reference-paged",
    summary="the reference engine with a paged KV cache (page size 4, scrambled block tables)",
    extra="transformers",
    capabilities=CHAIN_CAPABILITIES,
    mutants_of="reference",
    page_size=4,
)
@builtin_engine(
    "reference",
    summary="verispec's reference engine: chain rounds, contiguous KV cache, batches of 8 ragged rows",
    extra="transformers",
    capabilities=CHAIN_CAPABILITIES,
)
def make_reference(
    *,
    size: str = "ci",
    seed: int = 0,
    gamma: int = 3,
    page_size: int | None = None,
    mutations: Sequence[str] = (),
    device: str = "cpu",
    tree: Sequence[int] | None = None,
    target: str | None = None,
    draft: str | None = None,
) -> ReferenceEngine:
    """The reference engine on a tiny seeded model pair (``tree``: children per depth), with
    the planted bugs ``mutations`` (:mod:`verispec.engines.reference.hooks`) swapped into its
    hooks."""
    name = "reference-tree" if tree else "reference-paged" if page_size else "reference"
    hooks = planted_hooks(engines.planted("reference-tree" if tree else "reference", mutations))
    pair = load_pair(size, seed=seed, device=device, target=target, draft=draft)
    engine = ReferenceEngine(
        pair.target, pair.draft, gamma=gamma, page_size=page_size, hooks=hooks, name=name, tree=tree
    )
    engine.prompts = list(pair.prompts)
    engine.prompt_kinds = list(pair.prompt_kinds)
    if mutations:
        engine.name += f"[{','.join(sorted(mutations))}]"
    return engine
