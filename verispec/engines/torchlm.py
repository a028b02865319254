"""A small Llama forward in plain torch with its own KV cache, for the reference engine.

It loads the weights of a ``transformers`` Llama model and computes the same logits (a test
compares them with a plain forward pass of that model), but every index it uses comes from
:mod:`verispec.smt.index`, the functions z3 proves: the verify-pass mask
(:func:`~verispec.smt.index.visible`), positions, crop lengths, paged slots and tree masks.
The cache is contiguous, or paged through a block table (``page_size``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from verispec.smt import index as ix

__all__ = ["BatchKV", "KVCache", "TorchLM", "along"]


def along(model: Any, prompt: Sequence[int], tokens: Sequence[int]) -> Any:
    """The logits of a ``transformers`` causal LM ``model`` predicting each of ``tokens`` after
    ``prompt`` and the tokens before it (one plain forward pass)."""
    import torch  # deferred: heavy

    ids = torch.tensor([[*prompt, *tokens]], device=model.device)
    with torch.no_grad():
        logits = model(ids).logits[0].float().cpu()
    return logits[len(prompt) - 1 : len(prompt) - 1 + len(tokens)]


class KVCache:
    """Per-layer keys and values for one sequence; ``length`` entries are valid.

    With ``page_size`` the storage is a pool of pages addressed through a block table and
    :func:`verispec.smt.index.slot`; a crop frees the pages :func:`~verispec.smt.index.pages_needed`
    no longer needs.
    """

    def __init__(self, model: TorchLM, capacity: int, page_size: int | None = None) -> None:
        torch = model.torch
        self.model = model
        self.page_size = page_size
        self.length = 0
        shape_pages = capacity if page_size is None else ix.pages_needed(capacity, page_size) * page_size
        kv_shape = (model.layers, model.kv_heads, shape_pages, model.head_dim)
        self.keys = torch.zeros(kv_shape, dtype=model.dtype, device=model.device)
        self.values = torch.zeros(kv_shape, dtype=model.dtype, device=model.device)
        if page_size is not None:
            pages = shape_pages // page_size
            # a scrambled (but injective) block table, so paging is really exercised
            perm = torch.randperm(pages, generator=torch.Generator().manual_seed(pages))
            self.block_table = perm.to(model.device)
            self.pages_in_use = 0

    def slots(self, positions: Any) -> Any:
        if self.page_size is None:
            return positions
        return ix.slot(positions, self.page_size, self.block_table)

    def move(self, src: int, dst: int) -> None:
        """Copy the entry at position ``src`` to position ``dst`` (tree KV compaction)."""
        torch = self.model.torch
        s = self.slots(torch.tensor([src], device=self.model.device))
        d = self.slots(torch.tensor([dst], device=self.model.device))
        self.keys[:, :, d] = self.keys[:, :, s]
        self.values[:, :, d] = self.values[:, :, s]

    def crop(self, length: int) -> None:
        """Keep the first ``length`` entries; later writes overwrite the rest. Cropping to more
        than the cache holds changes nothing (as transformers' ``DynamicCache.crop`` does)."""
        if length < 0:
            raise ValueError(f"crop to {length} entries")
        self.length = min(length, self.length)
        if self.page_size is not None:
            self.pages_in_use = ix.pages_needed(length, self.page_size)


class BatchKV:
    """Keys and values for a batch of sequences with ragged lengths (``lengths[b]`` valid
    entries in row ``b``), contiguous or paged with one block table per row."""

    def __init__(self, model: TorchLM, rows: int, capacity: int, page_size: int | None = None) -> None:
        torch = model.torch
        self.model = model
        self.page_size = page_size
        self.lengths = [0] * rows
        per_row = capacity if page_size is None else ix.pages_needed(capacity, page_size) * page_size
        self.capacity = per_row
        kv_shape = (model.layers, rows * per_row, model.kv_heads, model.head_dim)
        self.keys = torch.zeros(kv_shape, dtype=model.dtype, device=model.device)
        self.values = torch.zeros(kv_shape, dtype=model.dtype, device=model.device)
        if page_size is not None:
            pages = per_row // page_size
            # one scrambled block table over the whole pool: rows' pages interleave
            perm = torch.randperm(rows * pages, generator=torch.Generator().manual_seed(rows * pages))
            self.block_tables = [perm[b * pages : (b + 1) * pages].to(model.device) for b in range(rows)]

    def slots(self, row: int, positions: Any) -> Any:
        """Physical slots (in the pool) of ``positions`` of ``row``."""
        if self.page_size is None:
            return positions + row * self.capacity
        return ix.slot(positions, self.page_size, self.block_tables[row])

    def crop(self, row: int, length: int) -> None:
        if length < 0:
            raise ValueError(f"crop row {row} to {length} entries")
        self.lengths[row] = min(length, self.lengths[row])


class TorchLM:
    """A Llama-architecture causal LM evaluated with explicit masks, positions and cache."""

    def __init__(self, hf_model: Any) -> None:
        import torch  # deferred: heavy

        self.torch = torch
        cfg = hf_model.config
        self.layers = cfg.num_hidden_layers
        self.heads = cfg.num_attention_heads
        self.kv_heads = cfg.num_key_value_heads
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.eps = cfg.rms_norm_eps
        rope = getattr(cfg, "rope_parameters", None) or {}
        self.theta = float(rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0)))
        self.vocab_size = cfg.vocab_size
        state = {k: v.detach() for k, v in hf_model.state_dict().items()}
        self.w = state
        self.dtype = state["model.embed_tokens.weight"].dtype
        self.device = state["model.embed_tokens.weight"].device
        inv = 1.0 / (self.theta ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        self.inv_freq = inv.to(self.device)

    def new_cache(self, capacity: int, page_size: int | None = None) -> KVCache:
        return KVCache(self, capacity, page_size)

    def new_batch_cache(self, rows: int, capacity: int, page_size: int | None = None) -> BatchKV:
        return BatchKV(self, rows, capacity, page_size)

    def _rms(self, x: Any, weight: Any) -> Any:
        torch = self.torch
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)

    def _rope(self, x: Any, positions: Any) -> Any:
        torch = self.torch
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def forward(self, tokens: Any, positions: Any, cache: KVCache, mask: Any) -> Any:
        """Logits for ``tokens`` (new queries) written at ``cache.length ...``.

        ``mask[r, j]`` says whether query ``r`` may attend to cache entry ``j`` (entries
        ``0 .. cache.length + len(tokens) - 1``). The new keys are stored and ``cache.length``
        advances by ``len(tokens)``.
        """
        torch = self.torch
        w = self.w
        n = tokens.shape[0]
        start = cache.length
        total = start + n
        write_slots = cache.slots(torch.arange(start, total, device=self.device))
        read_slots = cache.slots(torch.arange(0, total, device=self.device))
        x = w["model.embed_tokens.weight"][tokens]
        groups = self.heads // self.kv_heads
        bias = torch.zeros(mask.shape, dtype=torch.float32, device=self.device)
        bias = bias.masked_fill(~mask, float("-inf"))
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = self._rms(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(n, self.heads, self.head_dim).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(n, self.kv_heads, self.head_dim).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(n, self.kv_heads, self.head_dim).transpose(0, 1)
            q, k = self._rope(q, positions), self._rope(k, positions)
            cache.keys[layer][:, write_slots] = k
            cache.values[layer][:, write_slots] = v
            keys = cache.keys[layer][:, read_slots].repeat_interleave(groups, dim=0)
            values = cache.values[layer][:, read_slots].repeat_interleave(groups, dim=0)
            scores = (q.float() @ keys.float().transpose(1, 2)) / math.sqrt(self.head_dim) + bias
            attn = torch.softmax(scores, dim=-1).to(values.dtype) @ values
            x = x + attn.transpose(0, 1).reshape(n, -1) @ w[p + "self_attn.o_proj.weight"].T
            h = self._rms(x, w[p + "post_attention_layernorm.weight"])
            gate = h @ w[p + "mlp.gate_proj.weight"].T
            up = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        cache.length = total
        x = self._rms(x, w["model.norm.weight"])
        return (x @ w["lm_head.weight"].T).float()

    def batch_causal_forward(
        self,
        tokens: list[list[int]],
        cache: BatchKV,
        *,
        visible: Any = ix.visible,
        position: Any = ix.query_position,
    ) -> list[Any]:
        """:meth:`causal_forward` for every row of a batch at once, rows of ragged lengths
        (an empty row is left alone). Row ``b``'s ``L`` is ``cache.lengths[b] + 1``; padded
        queries write nothing and their logits are dropped. Returns one logits tensor per row.
        """
        torch = self.torch
        w = self.w
        B = len(tokens)
        counts = [len(t) for t in tokens]
        n = max(counts, default=0)
        if n == 0:
            return [torch.zeros((0, self.vocab_size)) for _ in tokens]
        dev = self.device
        starts = list(cache.lengths)
        T = max(s + c for s, c in zip(starts, counts, strict=True))
        rows = torch.arange(n, device=dev)
        keys_at = torch.arange(T, device=dev)
        ids = torch.zeros((B, n), dtype=torch.long, device=dev)
        positions = torch.zeros((B, n), dtype=torch.long, device=dev)
        mask = torch.zeros((B, n, T), dtype=torch.bool, device=dev)
        read = torch.stack([cache.slots(b, keys_at) for b in range(B)])  # (B, T)
        write_b, write_r, write_s = [], [], []
        for b, row_tokens in enumerate(tokens):
            c = counts[b]
            mask[b, :, 0] = True  # padded queries look at one key (their output is dropped)
            if c == 0:
                continue
            L = starts[b] + 1
            ids[b, :c] = torch.tensor(row_tokens, device=dev)
            positions[b, :c] = position(rows[:c], L)
            mask[b, :c] = visible(rows[:c, None], keys_at[None, :], L, c - 1) & (keys_at < starts[b] + c)
            write_b += [b] * c
            write_r += list(range(c))
            write_s.append(cache.slots(b, torch.arange(starts[b], starts[b] + c, device=dev)))
        wb = torch.tensor(write_b, device=dev)
        wr = torch.tensor(write_r, device=dev)
        ws = torch.cat(write_s)
        bias = torch.zeros(mask.shape, dtype=torch.float32, device=dev).masked_fill(~mask, float("-inf"))
        bias = bias[:, None]  # (B, 1, n, T)
        groups = self.heads // self.kv_heads
        x = w["model.embed_tokens.weight"][ids]  # (B, n, hidden)
        flat_pos = positions.reshape(-1)
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = self._rms(x, w[p + "input_layernorm.weight"])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).view(B, n, self.heads, self.head_dim)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).view(B, n, self.kv_heads, self.head_dim)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).view(B, n, self.kv_heads, self.head_dim)
            q = self._rope(q.reshape(B * n, self.heads, self.head_dim).transpose(0, 1), flat_pos)
            k = self._rope(k.reshape(B * n, self.kv_heads, self.head_dim).transpose(0, 1), flat_pos)
            q = q.transpose(0, 1).reshape(B, n, self.heads, self.head_dim)
            k = k.transpose(0, 1).reshape(B, n, self.kv_heads, self.head_dim)
            cache.keys[layer][ws] = k[wb, wr]
            cache.values[layer][ws] = v[wb, wr]
            keys = cache.keys[layer][read].repeat_interleave(groups, dim=2)  # (B, T, heads, d)
            values = cache.values[layer][read].repeat_interleave(groups, dim=2)
            scores = torch.einsum("bnhd,bthd->bhnt", q.float(), keys.float()) / math.sqrt(self.head_dim)
            attn = torch.softmax(scores + bias, dim=-1).to(values.dtype)
            out = torch.einsum("bhnt,bthd->bnhd", attn, values).reshape(B, n, -1)
            x = x + out @ w[p + "self_attn.o_proj.weight"].T
            h = self._rms(x, w[p + "post_attention_layernorm.weight"])
            gate = h @ w[p + "mlp.gate_proj.weight"].T
            up = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        for b in range(B):
            cache.lengths[b] = starts[b] + counts[b]
        logits = (self._rms(x, w["model.norm.weight"]) @ w["lm_head.weight"].T).float()
        return [logits[b, : counts[b]] for b in range(B)]

    def causal_forward(
        self, tokens: Any, cache: KVCache, *, visible: Any = ix.visible, position: Any = ix.query_position
    ) -> Any:
        """Feed ``tokens`` after the cache as one verify pass, as an engine does: ``L`` is read
        off the cache (``cache.length + 1``), query ``r`` sits at ``position(r, L)`` and sees
        key ``j`` iff ``visible(r, j, L, len(tokens) - 1)``. A cache left one entry too long
        or too short therefore shifts everything silently, as it would in an engine.
        """
        torch = self.torch
        L = cache.length + 1
        gamma = tokens.shape[0] - 1
        rows = torch.arange(gamma + 1, device=self.device)
        keys = torch.arange(L + gamma, device=self.device)
        mask = visible(rows[:, None], keys[None, :], L, gamma)
        return self.forward(tokens, position(rows, L), cache, mask)

    def tree_forward(
        self,
        tokens: Any,
        parents: Any,
        cache: KVCache,
        *,
        visible: Any = ix.tree_visible,
        position: Any = ix.tree_position,
    ) -> Any:
        """Feed a token tree after the cache as one verify pass: node 0 is the pending token,
        ``parents[i] < i``. Node ``x`` sees every prefix entry and tree node ``y`` iff
        ``visible(parents, x, y, n - 1)``; it sits at ``position(parents, x, L, n - 1)``.
        The tree's KV lands at positions ``L - 1 + node``; compaction (:meth:`KVCache.move`
        with :func:`verispec.smt.index.compaction_plan`) brings the accepted path together.
        """
        torch = self.torch
        L = cache.length + 1
        n = tokens.shape[0]
        nodes = torch.arange(n, device=self.device)
        parent_t = torch.tensor(list(parents), device=self.device)
        prefix = torch.ones((n, L - 1), dtype=torch.bool, device=self.device)
        tree = visible(parent_t, nodes[:, None], nodes[None, :], n - 1)
        mask = torch.cat([prefix, tree], dim=1)
        return self.forward(tokens, position(parent_t, nodes, L, n - 1), cache, mask)
