"""Llama checkpoints as float32 OpenVINO models for OpenVINO GenAI, written on its public format.

OpenVINO GenAI's ``LLMPipeline`` reads a folder holding ``openvino_model.xml`` (a stateful
model: inputs ``input_ids``, ``attention_mask``, ``position_ids`` and ``beam_idx``, output
``logits``, the KV cache in state variables), ``openvino_tokenizer.xml`` and
``openvino_detokenizer.xml``, and ``config.json``. Its own converter (optimum-intel) pins a
transformers older than verispec's, and its GGUF reader refuses float32 weights, so
:func:`write_llama_openvino` writes the model with OpenVINO's operation set from a
transformers ``LlamaForCausalLM``, at float32 (``compress_to_fp16=False``):

* RMS norms, rotary embeddings in transformers' half-split layout, SwiGLU MLPs;
* per layer, the key and value caches as ``ReadValue -> Gather(beam_idx) -> Concat -> Assign``
  and one ``ScaledDotProductAttention`` with an explicit causal mask aligned to the last row
  (the pattern the pipeline rewrites into paged attention); grouped heads are repeated.

The speculative pipeline compares the target's and the draft's tokenizers by encoding a test
string, so both folders get the same tokenizer: a byte-level table built by
``openvino_tokenizers``. Engines get token ids, never text, so it is never read. :func:`openvino_pair`
converts a model pair once into the cache folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verispec.engines.model_pairs import checkpoint_dirs, converted_folder, load_checkpoint, write_once
from verispec.errors import MissingDependency, UsageError, installed

__all__ = ["OPENVINO_INSTALL", "openvino_pair", "write_llama_openvino"]

OPENVINO_INSTALL = "pip install 'verispec[openvino]'"


def _openvino() -> Any:
    for module in ("openvino", "openvino_genai", "openvino_tokenizers", "torch", "transformers"):
        if not installed(module):
            raise MissingDependency(module, "openvino", OPENVINO_INSTALL)
    import openvino  # deferred: optional

    return openvino


class _Graph:
    """OpenVINO's operation set with the few shapes a Llama needs."""

    def __init__(self) -> None:
        import numpy as np  # deferred: heavy
        import openvino.opset13 as ops  # deferred: optional

        self.np = np
        self.ops = ops

    def const(self, value: Any, dtype: Any = None) -> Any:
        return self.ops.constant(self.np.asarray(value, dtype=dtype))

    def matmul_t(self, x: Any, weight: Any) -> Any:
        """``x @ weight.T`` for a torch ``Linear`` weight."""
        return self.ops.matmul(x, self.const(weight, self.np.float32), False, True)

    def rms_norm(self, x: Any, weight: Any, eps: float) -> Any:
        ops, np = self.ops, self.np
        mean = ops.reduce_mean(ops.multiply(x, x), self.const([-1], np.int64), keep_dims=True)
        scale = ops.sqrt(ops.add(mean, self.const(eps, np.float32)))
        return ops.multiply(ops.divide(x, scale), self.const(weight, np.float32))

    def heads(self, x: Any, n: int, size: int) -> Any:
        """[B, T, n*size] -> [B, n, T, size]"""
        ops, np = self.ops, self.np
        x = ops.reshape(x, self.const([0, 0, n, size], np.int64), special_zero=True)
        return ops.transpose(x, self.const([0, 2, 1, 3], np.int64))

    def rotate(self, x: Any, cos: Any, sin: Any, size: int) -> Any:
        """transformers' ``apply_rotary_pos_emb``: x * cos + rotate_half(x) * sin."""
        ops, np = self.ops, self.np
        half = ops.split(x, self.const(-1, np.int64), 2)
        rotated = ops.concat([ops.negative(half.output(1)), half.output(0)], -1)
        return ops.add(ops.multiply(x, cos), ops.multiply(rotated, sin))


def write_llama_openvino(model: Any, out: Path, *, name: str = "") -> Path:
    """Write the transformers Llama ``model`` as a float32 stateful OpenVINO model folder
    ``out`` (model, placeholder tokenizer, ``config.json``)."""
    openvino = _openvino()
    config = model.config
    if getattr(config, "model_type", None) != "llama":
        raise UsageError(
            f"only Llama checkpoints convert to OpenVINO here; this one is model_type={config.model_type!r}"
        )
    g = _Graph()
    ops, np = g.ops, g.np
    from openvino import PartialShape, Type  # deferred: optional

    weights = {k: v.detach().to("cpu").float().numpy() for k, v in model.state_dict().items()}
    heads, kv_heads = int(config.num_attention_heads), int(config.num_key_value_heads)
    size = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    eps = float(config.rms_norm_eps)
    rope = getattr(config, "rope_parameters", None) or {}
    theta = float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0)))
    if rope.get("rope_type", "default") != "default":
        raise UsageError(
            f"rope_type={rope.get('rope_type')!r} is not converted to OpenVINO here (only 'default')"
        )

    inputs = {}
    for input_name, dtype, shape in (
        ("input_ids", Type.i64, [-1, -1]),
        ("attention_mask", Type.i64, [-1, -1]),
        ("position_ids", Type.i64, [-1, -1]),
        ("beam_idx", Type.i32, [-1]),
    ):
        parameter = ops.parameter(PartialShape(shape), dtype, name=input_name)
        parameter.output(0).get_tensor().set_names({input_name})
        inputs[input_name] = parameter
    x = ops.gather(
        g.const(weights["model.embed_tokens.weight"], np.float32), inputs["input_ids"], g.const(0, np.int64)
    )

    # rotary angles from the positions: [B, 1, T, size]
    inverse = 1.0 / theta ** (np.arange(0, size, 2, dtype=np.float64) / size)
    positions = ops.unsqueeze(ops.convert(inputs["position_ids"], Type.f32), g.const([-1], np.int64))
    freqs = ops.multiply(positions, g.const(inverse, np.float32))
    angles = ops.unsqueeze(ops.concat([freqs, freqs], -1), g.const([1], np.int64))
    cos, sin = ops.cos(angles), ops.sin(angles)

    # causal mask aligned to the last row: query i of T sees keys 0 .. S - T + i
    t = ops.gather(ops.shape_of(inputs["input_ids"]), g.const([1], np.int64), g.const(0, np.int64))
    s = ops.gather(ops.shape_of(inputs["attention_mask"]), g.const([1], np.int64), g.const(0, np.int64))
    zero, one = g.const(0, np.int64), g.const(1, np.int64)
    rows = ops.add(ops.range(zero, ops.squeeze(t, g.const([0], np.int64)), one, Type.i64), ops.subtract(s, t))
    cols = ops.range(zero, ops.squeeze(s, g.const([0], np.int64)), one, Type.i64)
    allowed = ops.less_equal(
        ops.unsqueeze(cols, g.const([0], np.int64)), ops.unsqueeze(rows, g.const([1], np.int64))
    )
    mask = ops.select(allowed, g.const(0.0, np.float32), g.const(-np.inf, np.float32))

    batch = ops.gather(ops.shape_of(inputs["input_ids"]), g.const([0], np.int64), g.const(0, np.int64))
    empty = ops.broadcast(
        g.const(0.0, np.float32), ops.concat([batch, g.const([kv_heads, 0, size], np.int64)], 0)
    )
    sinks = []
    for layer in range(int(config.num_hidden_layers)):
        p = f"model.layers.{layer}."
        h = g.rms_norm(x, weights[p + "input_layernorm.weight"], eps)
        q = g.rotate(
            g.heads(g.matmul_t(h, weights[p + "self_attn.q_proj.weight"]), heads, size), cos, sin, size
        )
        k = g.rotate(
            g.heads(g.matmul_t(h, weights[p + "self_attn.k_proj.weight"]), kv_heads, size), cos, sin, size
        )
        v = g.heads(g.matmul_t(h, weights[p + "self_attn.v_proj.weight"]), kv_heads, size)
        cached = []
        for kind, current in (("key", k), ("value", v)):
            info = openvino.op.util.VariableInfo()
            info.data_shape = PartialShape([-1, kv_heads, -1, size])
            info.data_type = Type.f32
            info.variable_id = f"past_key_values.{layer}.{kind}"
            variable = openvino.op.util.Variable(info)
            past = ops.gather(ops.read_value(empty, variable), inputs["beam_idx"], g.const(0, np.int64))
            joined = ops.concat([past, current], 2)
            sinks.append(ops.assign(joined, variable))
            if heads != kv_heads:  # repeat each key/value head for its group of query heads
                shape = ops.shape_of(joined)
                expanded = ops.broadcast(
                    ops.unsqueeze(joined, g.const([2], np.int64)),
                    ops.concat(
                        [
                            ops.gather(shape, g.const([0, 1], np.int64), g.const(0, np.int64)),
                            g.const([heads // kv_heads], np.int64),
                            ops.gather(shape, g.const([2, 3], np.int64), g.const(0, np.int64)),
                        ],
                        0,
                    ),
                )
                joined = ops.reshape(expanded, g.const([0, heads, -1, size], np.int64), special_zero=True)
            cached.append(joined)
        attended = ops.scaled_dot_product_attention(q, cached[0], cached[1], mask, causal=False)
        attended = ops.reshape(
            ops.transpose(attended, g.const([0, 2, 1, 3], np.int64)),
            g.const([0, 0, heads * size], np.int64),
            special_zero=True,
        )
        x = ops.add(x, g.matmul_t(attended, weights[p + "self_attn.o_proj.weight"]))
        h = g.rms_norm(x, weights[p + "post_attention_layernorm.weight"], eps)
        gate = g.matmul_t(h, weights[p + "mlp.gate_proj.weight"])
        up = g.matmul_t(h, weights[p + "mlp.up_proj.weight"])
        x = ops.add(x, g.matmul_t(ops.multiply(ops.swish(gate), up), weights[p + "mlp.down_proj.weight"]))
    x = g.rms_norm(x, weights["model.norm.weight"], eps)
    head = weights.get("lm_head.weight", weights["model.embed_tokens.weight"])
    logits = g.matmul_t(x, head)
    logits.output(0).get_tensor().set_names({"logits"})
    graph = openvino.Model([ops.result(logits)], sinks, list(inputs.values()), name or "llama")
    out.mkdir(parents=True, exist_ok=True)
    openvino.save_model(graph, str(out / "openvino_model.xml"), compress_to_fp16=False)
    _placeholder_tokenizer(out)
    special = {
        key: getattr(config, key)
        for key in ("bos_token_id", "eos_token_id", "pad_token_id")
        if getattr(config, key, None) is not None
    }
    (out / "config.json").write_text(
        json.dumps({"model_type": "llama", "vocab_size": int(config.vocab_size), **special}, indent=2)
    )
    (out / "generation_config.json").write_text(json.dumps(special, indent=2))
    return out


def _placeholder_tokenizer(out: Path) -> None:
    """A byte-level tokenizer and detokenizer, the same for every model (the speculative
    pipeline compares the target's and the draft's); engines never read them."""
    import numpy as np  # deferred: heavy
    import openvino  # deferred: optional
    import openvino.opset13 as ops  # deferred: optional
    from openvino_tokenizers.build_tokenizer import build_rwkv_tokenizer  # deferred: optional

    # the builder's byte-level table (id, bytes, length): one piece per byte value; multi-byte
    # pieces crash the pipeline's tokenizer at load (seen with 2026.4.1)
    pieces = [f"{i} {bytes([i])!r} 1" for i in range(256)]
    tokenizer, detokenizer = build_rwkv_tokenizer(pieces)
    ids = tokenizer.get_results()[0].input_value(0)
    attention = ops.broadcast(ops.constant(np.int64(1)), ops.shape_of(ids))
    attention.output(0).get_tensor().set_names({"attention_mask"})
    tokenizer = openvino.Model(
        [tokenizer.get_results()[0], ops.result(attention)], tokenizer.get_parameters(), "tokenizer"
    )
    openvino.save_model(tokenizer, str(out / "openvino_tokenizer.xml"))
    openvino.save_model(detokenizer, str(out / "openvino_detokenizer.xml"))


def openvino_pair(
    size: str = "ci", *, seed: int = 0, target: str | None = None, draft: str | None = None
) -> tuple[Path, Path]:
    """The pair's target and draft as OpenVINO model folders, written once into the cache
    folder from the same checkpoints the transformers baseline loads."""
    _openvino()

    target_dir, draft_dir = checkpoint_dirs(size, seed=seed, target=target, draft=draft)
    folder = converted_folder("openvino", target_dir, draft_dir)

    def write(out: Path) -> None:
        for role, source in (("target", target_dir), ("draft", draft_dir)):
            model = load_checkpoint(source)
            write_llama_openvino(model, out / role, name=f"{size} {role}")

    write_once(folder, write)
    return folder / "target", folder / "draft"
