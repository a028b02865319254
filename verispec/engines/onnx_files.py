"""Llama checkpoints as float32 ONNX models for ONNX Runtime GenAI, written by its own builder.

ONNX Runtime GenAI reads a folder holding ``model.onnx`` (with its weights beside it) and a
``genai_config.json``. Its model builder (``onnxruntime_genai.models.builder``) writes that
folder from a transformers checkpoint, offline, with ``-p fp32 -e cpu``: float32 weights and
a float32 KV cache (the cache takes the model's input and output type). Two facts of the
builder shape what is handed to it:

* it loads a tokenizer from the checkpoint folder and stops without one. The seeded pairs and
  the SmolLM2 checkpoint converted here have none, so the checkpoint is staged beside a
  word-level tokenizer of placeholder pieces ``<t0>``, ``<t1>``, ... with the model's special
  ids. Engines get token ids, never text, so the pieces are never read;
* its CPU attention (``GroupQueryAttention``) takes head sizes that are multiples of 16 only:
  the ``ci`` pair (8-wide heads) is refused when it runs, so the engines default to
  ``ci-wide`` (32-wide heads), as vLLM's do.

The builder is third-party code run on a file: it runs in a subprocess with a time limit, and
its own message is the error when it fails. :func:`onnx_pair` converts a model pair once
into the cache folder, with a configuration beside them that speculates with the draft
(:func:`write_speculative_config`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from verispec.engines.model_pairs import checkpoint_dirs, converted_folder, write_once
from verispec.errors import MissingDependency, UsageError, installed

__all__ = ["BUILDER_TIMEOUT", "ORT_INSTALL", "onnx_pair", "placeholder_tokenizer"]

ORT_INSTALL = "pip install 'verispec[onnxruntime-genai]'"
#: The longest a conversion may take (seconds); SmolLM2 takes about half a minute here.
BUILDER_TIMEOUT = 900
#: The head sizes ONNX Runtime's CPU attention takes are multiples of this.
HEAD_MULTIPLE = 16


def _require_builder() -> None:
    for module in ("onnxruntime_genai", "onnx_ir", "onnx", "transformers", "torch"):
        if not installed(module):
            raise MissingDependency(module, "onnxruntime-genai", ORT_INSTALL)


def placeholder_tokenizer(config: dict[str, Any], out: Path) -> None:
    """Write a word-level tokenizer of placeholder pieces ``<tN>`` for the checkpoint whose
    ``config.json`` is ``config`` into ``out`` (the builder needs one; engines never read it)."""
    from tokenizers import Tokenizer, models, pre_tokenizers  # deferred: heavy
    from transformers import PreTrainedTokenizerFast  # deferred: heavy

    vocab = int(config["vocab_size"])

    def piece(key: str, fallback: int) -> str:
        value = config.get(key)
        if isinstance(value, list):
            value = value[0] if value else None
        return f"<t{fallback if value is None else int(value)}>"

    unknown = piece("pad_token_id", 0)
    tokenizer = Tokenizer(models.WordLevel({f"<t{i}>": i for i in range(vocab)}, unk_token=unknown))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast: Any = PreTrainedTokenizerFast
    fast(
        tokenizer_object=tokenizer,
        bos_token=piece("bos_token_id", 0),
        eos_token=piece("eos_token_id", 0),
        pad_token=unknown,
        unk_token=unknown,
    ).save_pretrained(str(out))


def head_size(config: dict[str, Any]) -> int:
    """The attention head size of a Llama ``config.json``."""
    explicit = config.get("head_dim")
    return int(explicit) if explicit else int(config["hidden_size"]) // int(config["num_attention_heads"])


def build_onnx(checkpoint: Path, out: Path, *, timeout: float = BUILDER_TIMEOUT) -> None:
    """Convert the transformers checkpoint folder ``checkpoint`` into ONNX Runtime GenAI's
    float32 CPU format in ``out``, with the engine's own builder in a subprocess."""
    config = json.loads((checkpoint / "config.json").read_text())
    if head_size(config) % HEAD_MULTIPLE:
        raise UsageError(
            f"the checkpoint {checkpoint} has {head_size(config)}-wide attention heads; ONNX Runtime's CPU "
            f"attention (GroupQueryAttention) takes multiples of {HEAD_MULTIPLE} only (use --size ci-wide)"
        )
    staged = out.parent / f"{out.name}-source"
    staged.mkdir(parents=True)
    for path in checkpoint.iterdir():
        weights_or_config = path.suffix in (".json", ".safetensors", ".bin")
        if path.is_file() and weights_or_config and "tokenizer" not in path.name:
            shutil.copy2(path, staged / path.name)
    placeholder_tokenizer(config, staged)
    command = [
        sys.executable, "-m", "onnxruntime_genai.models.builder",
        "-i", str(staged), "-o", str(out), "-p", "fp32", "-e", "cpu", "-c", str(out.parent / "hf-cache"),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(
            f"ONNX Runtime GenAI's model builder did not finish converting {checkpoint} in {timeout:g} s"
        ) from None
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    if done.returncode != 0 or not (out / "genai_config.json").is_file():
        tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UsageError(f"ONNX Runtime GenAI's model builder could not convert {checkpoint}: {tail}")


def onnx_pair(
    size: str = "ci-wide", *, seed: int = 0, target: str | None = None, draft: str | None = None
) -> tuple[Path, Path]:
    """The pair's target and draft as ONNX Runtime GenAI model folders, written once into the
    cache folder from the same checkpoints the transformers baseline loads."""
    _require_builder()
    target_dir, draft_dir = checkpoint_dirs(size, seed=seed, target=target, draft=draft)
    folder = converted_folder("onnx", target_dir, draft_dir)

    def write(out: Path) -> None:
        for role, source in (("target", target_dir), ("draft", draft_dir)):
            build_onnx(source, out / role)
        write_speculative_config(out)

    write_once(folder, write)
    return folder / "target", folder / "draft"


def write_speculative_config(folder: Path) -> Path:
    """The configuration of the target in ``folder/target`` speculating with the draft model in
    ``folder/draft``: the target's ``genai_config.json`` with the draft's decoder as
    ``model.draft``, written to ``folder`` (the engine refuses model paths that climb out of
    the configuration's folder, so both are named from it)."""
    config = json.loads((folder / "target" / "genai_config.json").read_text())
    draft = json.loads((folder / "draft" / "genai_config.json").read_text())["model"]
    vocab = int(config["model"]["vocab_size"])
    if int(draft["vocab_size"]) != vocab:
        raise UsageError(f"the draft's vocabulary ({draft['vocab_size']}) is not the target's ({vocab})")
    config["model"]["decoder"]["filename"] = "target/" + config["model"]["decoder"]["filename"]
    config["model"]["draft"] = {**draft["decoder"], "filename": "draft/" + draft["decoder"]["filename"]}
    (folder / "genai_config.json").write_text(json.dumps(config, indent=4))
    return folder
