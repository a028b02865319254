"""Llama checkpoints as float32 GGUF files, for engines that read GGUF (llama.cpp).

:func:`write_llama_gguf` writes a transformers ``LlamaForCausalLM`` (a seeded tiny pair, or
SmolLM2 dequantised to float32) with every tensor at float32 (``general.file_type`` 0), on
GGUF's public format through the ``gguf`` package's writer: no converter script, no
tokenizer files, nothing downloaded. Two facts of llama.cpp's Llama layout are applied here:

* the query and key projections are permuted from transformers' half-split rotary layout
  to llama.cpp's interleaved one (what llama.cpp's own ``convert_hf_to_gguf.py`` does,
  ``LlamaModel.permute``);
* a head tied to the embeddings is left out (llama.cpp then reads ``token_embd``).

The vocabulary is either copied from a GGUF file that holds one (SmolLM2's own, its
``tokenizer.*`` keys), or, for the seeded models that have no tokenizer, a SentencePiece-type
list of placeholder pieces ``<t0>``, ``<t1>``, ... with the models' special ids. Engines get
token ids, never text, so the pieces are never read.

:func:`gguf_pair` converts a model pair once into the cache folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verispec.engines.model_pairs import (
    SMOLLM2,
    checkpoint_dirs,
    converted_folder,
    gguf_source,
    load_checkpoint,
    write_once,
)
from verispec.errors import MissingDependency, UsageError, installed, require

__all__ = ["GGUF_INSTALL", "gguf_pair", "read_llama_gguf_config", "write_llama_gguf"]

GGUF_INSTALL = "pip install 'gguf>=0.10'"

#: transformers' per-layer tensor names -> GGUF's (``blk.N.`` prefix added)
_LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}
_GLOBAL_TENSORS = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}


def _gguf() -> Any:
    if not installed("gguf"):
        raise MissingDependency("gguf", "llama-cpp", GGUF_INSTALL)
    import gguf  # deferred: optional

    return gguf


def permute_rotary(weights: Any, heads: int) -> Any:
    """A query or key projection (``heads * head_dim`` rows) from the half-split rotary
    layout to the interleaved one: within each head, rows ``(0, d/2, 1, d/2 + 1, ...)``."""
    rows = weights.shape[0]
    return (
        weights.reshape(heads, 2, rows // heads // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def _rope_theta(config: Any) -> float:
    params = getattr(config, "rope_parameters", None) or {}
    theta = params.get("rope_theta") if isinstance(params, dict) else None
    theta = theta if theta is not None else getattr(config, "rope_theta", None)
    kind = params.get("rope_type", "default") if isinstance(params, dict) else "default"
    if kind not in ("default", None):
        raise UsageError(f"rope_type={kind!r}: only plain rotary positions are written to GGUF here")
    return float(theta if theta is not None else 10000.0)


def write_llama_gguf(model: Any, path: Path, *, vocabulary_from: Path | None = None, name: str = "") -> Path:
    """Write ``model`` (a transformers Llama) to ``path`` as a float32 GGUF file; the
    vocabulary is copied from the GGUF file ``vocabulary_from``, else placeholder pieces."""
    import numpy as np  # deferred: heavy

    gguf = _gguf()
    config = model.config
    if getattr(config, "model_type", None) != "llama":
        raise UsageError(f"model_type={getattr(config, 'model_type', None)!r}: only Llama models are written")
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        raise UsageError("a Llama with biases is not written to GGUF here")
    heads, kv_heads = int(config.num_attention_heads), int(config.num_key_value_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    vocab = int(config.vocab_size)

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name or f"verispec llama V={vocab}")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(int(config.max_position_embeddings))
    writer.add_embedding_length(int(config.hidden_size))
    writer.add_block_count(int(config.num_hidden_layers))
    writer.add_feed_forward_length(int(config.intermediate_size))
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(_rope_theta(config))
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    writer.add_vocab_size(vocab)
    if vocabulary_from is not None:
        _copy_vocabulary(gguf, writer, vocabulary_from, vocab)
    else:
        _placeholder_vocabulary(gguf, writer, config, vocab)

    tied = bool(getattr(config, "tie_word_embeddings", False))
    for key, tensor in model.state_dict().items():
        data = tensor.detach().to("cpu").float().numpy().astype(np.float32)
        if key.startswith("model.layers."):
            _, _, layer, rest = key.split(".", 3)
            if rest not in _LAYER_TENSORS:
                raise UsageError(f"tensor {key!r} has no GGUF name here")
            if rest == "self_attn.q_proj.weight":
                data = permute_rotary(data, heads)
            elif rest == "self_attn.k_proj.weight":
                data = permute_rotary(data, kv_heads)
            writer.add_tensor(f"blk.{layer}.{_LAYER_TENSORS[rest]}", np.ascontiguousarray(data))
        elif key == "lm_head.weight" and tied:
            continue
        elif key in _GLOBAL_TENSORS:
            writer.add_tensor(_GLOBAL_TENSORS[key], np.ascontiguousarray(data))
        elif not key.endswith("rotary_emb.inv_freq"):
            raise UsageError(f"tensor {key!r} has no GGUF name here")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _placeholder_vocabulary(gguf: Any, writer: Any, config: Any, vocab: int) -> None:
    special = {
        "bos": getattr(config, "bos_token_id", None),
        "eos": getattr(config, "eos_token_id", None),
        "pad": getattr(config, "pad_token_id", None),
    }
    control = {v for v in special.values() if isinstance(v, int)}
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"<t{i}>" for i in range(vocab)])
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(
        [int(gguf.TokenType.CONTROL if i in control else gguf.TokenType.NORMAL) for i in range(vocab)]
    )
    for kind, token in special.items():
        if isinstance(token, int):
            getattr(writer, f"add_{kind}_token_id")(token)
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)


def _copy_vocabulary(gguf: Any, writer: Any, source: Path, vocab: int) -> None:
    """Every ``tokenizer.*`` key of the GGUF file ``source`` (its tokens, merges, special ids
    and chat template), which must list ``vocab`` tokens."""
    reader = gguf.GGUFReader(str(source))
    for field in reader.fields.values():
        if not field.name.startswith("tokenizer."):
            continue
        value = field.contents()
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(field.name, value, kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(field.name, value, kind)
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    if tokens is None or len(tokens.data) != vocab:
        got = None if tokens is None else len(tokens.data)
        raise UsageError(f"the vocabulary of {source.name} lists {got} tokens, the model has {vocab}")


def read_llama_gguf_config(path: Path) -> dict[str, Any]:
    """The architecture keys of a GGUF file written here (for tests and the audit notes)."""
    gguf = _gguf()
    reader = gguf.GGUFReader(str(path))
    return {f.name: f.contents() for f in reader.fields.values() if f.name.startswith(("llama.", "general."))}


def gguf_pair(
    size: str = "ci", *, seed: int = 0, target: str | None = None, draft: str | None = None
) -> tuple[Path, Path]:
    """The pair's target and draft as float32 GGUF files, written once into the cache folder
    from the same checkpoints the transformers baseline loads."""
    require("torch", "torch")
    require("transformers", "transformers")
    _gguf()
    target_dir, draft_dir = checkpoint_dirs(size, seed=seed, target=target, draft=draft)
    folder = converted_folder("gguf", target_dir, draft_dir)
    vocabulary = gguf_source() if size == SMOLLM2 and target is None else None

    def write(out: Path) -> None:
        for role, source in (("target", target_dir), ("draft", draft_dir)):
            model = load_checkpoint(source)
            write_llama_gguf(model, out / f"{role}.gguf", vocabulary_from=vocabulary, name=f"{size} {role}")

    write_once(folder, write)
    return folder / "target.gguf", folder / "draft.gguf"
