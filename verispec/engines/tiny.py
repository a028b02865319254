"""Tiny Llama-style target and draft pairs from seeded random weights (no downloads).

A random-weight transformer has nearly uniform next-token laws and nearly uniform
attention, which makes every check weak; ``sharpness`` scales the output head so the laws
are peaked like a trained model's, and ``attention_sharpness`` scales the query and key
projections so attention (and so the mask, the positions and the cache) matters.
The draft is a perturbed copy of the target (``draft_noise`` relative weight noise), so its
acceptance rate is realistic and controllable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verispec.errors import UsageError, require

__all__ = ["SIZES", "TinyPair", "tiny_pair"]

#: name -> (vocab, hidden, intermediate, layers, heads, kv_heads)
SIZES: dict[str, tuple[int, int, int, int, int, int]] = {
    "ci": (24, 32, 64, 2, 4, 2),
    # the ci vocabulary with 32-wide heads: vLLM's CPU attention takes head sizes 32 .. 512
    "ci-wide": (24, 64, 128, 2, 2, 1),
    "small": (256, 128, 256, 4, 4, 2),
    "1b": (32000, 2048, 5632, 22, 32, 4),
}


@dataclass
class TinyPair:
    target: Any  # transformers.LlamaForCausalLM
    draft: Any
    size: str
    seed: int
    sharpness: float
    draft_noise: float

    @property
    def vocab_size(self) -> int:
        return int(self.target.config.vocab_size)

    def describe(self) -> str:
        params = sum(p.numel() for p in self.target.parameters())
        return (
            f"tiny Llama '{self.size}' ({params:,} parameters, V={self.vocab_size}), seed {self.seed}, "
            f"sharpness {self.sharpness:g}, draft noise {self.draft_noise:g}"
        )


def tiny_pair(
    size: str = "ci",
    *,
    seed: int = 0,
    sharpness: float = 25.0,
    attention_sharpness: float = 12.0,
    draft_noise: float = 0.15,
    dtype: Any = None,
    device: str = "cpu",
) -> TinyPair:
    """A seeded target and a perturbed-copy draft with the same tokenizer (vocabulary)."""
    torch: Any = require("torch", "torch")
    transformers: Any = require("transformers", "transformers")
    if size not in SIZES:
        raise UsageError(f"size={size!r} is not one of {', '.join(SIZES)}")
    vocab, hidden, inter, layers, heads, kv = SIZES[size]
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=4096,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
    )
    dtype = dtype or torch.float32
    torch.manual_seed(seed)
    target = transformers.LlamaForCausalLM(config).to(dtype=dtype).eval()
    with torch.no_grad():
        target.lm_head.weight.mul_(sharpness)
        for layer in target.model.layers:  # peaked attention: positions and masks matter
            layer.self_attn.q_proj.weight.mul_(attention_sharpness)
            layer.self_attn.k_proj.weight.mul_(attention_sharpness)
    draft = transformers.LlamaForCausalLM(config).to(dtype=dtype).eval()
    draft.load_state_dict(target.state_dict())
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for param in draft.parameters():
            noise = torch.randn(param.shape, generator=generator, dtype=torch.float32).to(dtype)
            param.add_(draft_noise * param.abs().mean() * noise)
    for model in (target, draft):  # no implicit stop token: requests name their own stop ids
        model.generation_config.eos_token_id = None
        model.generation_config.pad_token_id = 2
    return TinyPair(target.to(device), draft.to(device), size, seed, sharpness, draft_noise)
