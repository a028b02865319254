"""A programmable draft model: a one-layer Llama whose next-token law after each token is a
table verispec writes, so any engine's ordinary draft-model path drafts what verispec planned.

Engines without a proposer hook (OpenVINO GenAI, transformers' assisted generation, a remote
server) take drafts only from a draft model. At temperature 0 a draft model drafts its argmax
after the last token, and the target keeps a draft while it equals the target's own argmax;
the target's greedy continuation is known in advance from the token-by-token baseline. So a
draft model whose argmax after token ``t`` is ``successors[t]`` decides, round by round,
where the first rejection falls: :func:`plan_rejections` writes the successors that put it
at a chosen draft position in every round (or accept every draft), and
:func:`bigram_checkpoint` writes the model.

The model (:func:`bigram_state`): the embedding of ``t`` is a one-hot vector on the slot of
``t``'s successor, the layer's attention output and MLP down projections are zero (the
residual stream is the embedding), the final RMS norm scales the one-hot to ``sqrt(H)`` and
the output head puts :data:`LOGIT_GAP` on the successor and 0 elsewhere. Its draft law after
``t`` is that row's softmax: the successor with probability ``1 - (V - 1) e^-LOGIT_GAP``.

A bigram sees only the last token, so a token the continuation repeats has one successor
for all its occurrences: a plan can conflict with itself. :func:`plan_rejections` fixes
each successor the first time a round needs it and simulates every round with the table it
ends with, so its rounds are the ones the engine will run (for an engine that drafts
``gamma`` tokens each round), whether or not they are the ones asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verispec.engines.model_pairs import write_once
from verispec.errors import UsageError, require

__all__ = [
    "LOGIT_GAP",
    "BigramPlan",
    "Drafters",
    "PlannedRound",
    "bigram_checkpoint",
    "bigram_model",
    "bigram_name",
    "bigram_state",
    "plan_rejections",
    "script_plan",
]

#: The logit of the planned successor above every other token's.
LOGIT_GAP = 40.0


@dataclass(frozen=True)
class PlannedRound:
    """One round the plan makes the engine run."""

    start: int  # committed length (context included) at the round's start
    wanted: int  # the first rejection asked for (``gamma``: every draft accepted)
    proposed: int  # drafts the round proposes
    accepted: int  # drafts the target keeps

    @property
    def first_rejection(self) -> int | None:
        """The draft position of the first rejection, or None when every draft is kept."""
        return self.accepted if self.accepted < self.proposed else None

    @property
    def rejected(self) -> bool:
        return self.accepted < self.proposed

    @property
    def as_wanted(self) -> bool:
        wanted = None if self.wanted >= self.proposed else self.wanted
        return self.first_rejection == wanted


@dataclass(frozen=True)
class BigramPlan:
    """A successor table and the rounds it gives along one greedy continuation."""

    successors: dict[int, int]
    #: drafted after every token the table does not list (the plan lists every token its rounds
    #: draft after): the largest id the continuation never holds, where there is one
    default: int
    rounds: list[PlannedRound] = field(default_factory=list)

    def successor(self, token: int) -> int:
        return self.successors.get(token, self.default)

    def script(self) -> dict[str, Any]:
        """The plan as a request script (``bigram-drafts``): JSON, so it crosses into the
        engine's process."""
        return {
            "kind": "bigram",
            "successors": sorted([t, s] for t, s in self.successors.items()),
            "default": self.default,
        }

    def realised(self) -> dict[int | None, int]:
        """How many rounds put their first rejection at each position (None: none rejected)."""
        out: dict[int | None, int] = {}
        for r in self.rounds:
            out[r.first_rejection] = out.get(r.first_rejection, 0) + 1
        return out


def plan_rejections(
    context: Sequence[int],
    greedy: Sequence[int],
    gamma: int,
    position: int,
    vocab_size: int,
    *,
    lead: int = 0,
) -> BigramPlan:
    """The successor table that puts each round's first rejection at draft ``position``
    (``gamma`` or more: every draft accepted) along ``greedy``, the target's greedy
    continuation of ``context``, for an engine that commits ``lead`` tokens before its first
    round and then drafts ``gamma`` tokens a round (fewer where fewer tokens are left), with
    the rounds it gives."""
    if gamma < 1:
        raise UsageError(f"gamma={gamma} must be at least 1")
    if position < 0 or lead < 0:
        raise UsageError(f"position={position} and lead={lead} must be 0 or more")
    seen = {*context, *greedy}
    for t in seen:
        if not 0 <= t < vocab_size:
            raise UsageError(f"token {t} is outside the vocabulary of {vocab_size}")
    # a rejected draft is the largest id the path never holds (low ids are the special ones in
    # most vocabularies), or, where it holds them all, the largest id other than the expected one
    unused = [t for t in range(vocab_size) if t not in seen]
    wrong = unused[-1] if unused else vocab_size - 1
    successors: dict[int, int] = {}
    # first pass: fix each successor the first time a round needs it
    _rounds(context, greedy, gamma, position, lead, successors, wrong, assign=True)
    rounds = _rounds(context, greedy, gamma, position, lead, successors, wrong, assign=False)
    return BigramPlan(successors, wrong, rounds)


def _rounds(
    context: Sequence[int],
    greedy: Sequence[int],
    gamma: int,
    position: int,
    lead: int,
    successors: dict[int, int],
    wrong: int,
    *,
    assign: bool,
) -> list[PlannedRound]:
    rounds: list[PlannedRound] = []
    sequence = [*context, *greedy]
    n = lead
    while n < len(greedy):
        proposed = min(gamma, len(greedy) - n - 1)
        if proposed <= 0:
            break
        previous = sequence[len(context) + n - 1]
        accepted = proposed
        for i in range(proposed):
            expected = greedy[n + i]
            if assign and previous not in successors:
                miss = wrong if wrong != expected else wrong - 1
                successors[previous] = expected if i < position else miss
            if successors.get(previous, wrong) != expected:
                accepted = i
                break
            previous = expected
        rounds.append(PlannedRound(len(context) + n, position, proposed, accepted))
        n += accepted + 1
    return rounds


def script_plan(script: Mapping[str, Any], vocab_size: int) -> tuple[dict[int, int], int]:
    """The successor table and default of a ``bigram`` request script, checked."""
    try:
        successors = {int(t): int(s) for t, s in script["successors"]}
        default = int(script["default"])
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(
            f"a bigram script needs successors [[token, next], ...] and a default: {exc}"
        ) from None
    for t in (*successors, *successors.values(), default):
        if not 0 <= t < vocab_size:
            raise UsageError(f"bigram script: token {t} is outside the vocabulary of {vocab_size}")
    return successors, default


class Drafters:
    """The last ``keep`` drafters an engine built from ``bigram`` request scripts, one per
    table: ``get(script, build)`` checks the script and returns the table's name and its
    drafter, calling ``build(successors, default, name)`` the first time."""

    def __init__(self, vocab_size: int, keep: int) -> None:
        self.vocab_size = vocab_size
        self.keep = keep
        self._built: dict[str, Any] = {}

    def get(
        self, script: Mapping[str, Any], build: Callable[[dict[int, int], int, str], Any]
    ) -> tuple[str, Any]:
        successors, default = script_plan(script, self.vocab_size)
        name = bigram_name(successors, default, self.vocab_size)
        if name not in self._built:
            if len(self._built) >= self.keep:
                self._built.pop(next(iter(self._built)))
            self._built[name] = build(successors, default, name)
        return name, self._built[name]

    def drop(self, name: str) -> None:
        """Forget a drafter that failed (the next request with its table builds it again)."""
        self._built.pop(name, None)


def _hidden_size(slots: int) -> int:
    """One dimension per successor slot, in heads of 64 (engines' attention kernels take
    head sizes that are multiples of 16)."""
    return 64 * max(1, -(-slots // 64))


def bigram_state(
    successors: Mapping[int, int], default: int, vocab_size: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The config keywords and the state dict (numpy float32) of the one-layer Llama whose
    argmax after ``t`` is ``successors.get(t, default)``."""
    import numpy as np  # deferred: heavy

    targets = sorted({default, *successors.values()})
    slot = {t: i for i, t in enumerate(targets)}
    hidden = _hidden_size(len(targets))
    heads = hidden // 64
    embed = np.zeros((vocab_size, hidden), dtype=np.float32)
    for t in range(vocab_size):
        embed[t, slot[successors.get(t, default)]] = 1.0
    head = np.zeros((vocab_size, hidden), dtype=np.float32)
    for t, i in slot.items():
        # the final norm turns the one-hot into sqrt(hidden) on its slot
        head[t, i] = LOGIT_GAP / np.sqrt(hidden)
    layer = "model.layers.0."
    rng = np.random.default_rng(0)
    state: dict[str, Any] = {
        "model.embed_tokens.weight": embed,
        "lm_head.weight": head,
        "model.norm.weight": np.ones(hidden, dtype=np.float32),
        layer + "input_layernorm.weight": np.ones(hidden, dtype=np.float32),
        layer + "post_attention_layernorm.weight": np.ones(hidden, dtype=np.float32),
        # the attention and the MLP read the input (small random weights, so converters see
        # ordinary tensors) but write nothing back: their output projections are zero
        layer + "self_attn.q_proj.weight": rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32),
        layer + "self_attn.k_proj.weight": rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32),
        layer + "self_attn.v_proj.weight": rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32),
        layer + "self_attn.o_proj.weight": np.zeros((hidden, hidden), dtype=np.float32),
        layer + "mlp.gate_proj.weight": rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32),
        layer + "mlp.up_proj.weight": rng.normal(0, 0.02, (hidden, hidden)).astype(np.float32),
        layer + "mlp.down_proj.weight": np.zeros((hidden, hidden), dtype=np.float32),
    }
    config = {
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "intermediate_size": hidden,
        "num_hidden_layers": 1,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "rms_norm_eps": 1e-6,
        "tie_word_embeddings": False,
    }
    return config, state


def bigram_model(successors: Mapping[int, int], default: int, like: Any) -> Any:
    """The bigram draft as a transformers ``LlamaForCausalLM`` in memory, with the special
    ids and the context length of the config ``like`` (the target's)."""
    torch: Any = require("torch", "torch")
    transformers: Any = require("transformers", "transformers")
    vocab_size = int(like.vocab_size)
    keywords, state = bigram_state(successors, default, vocab_size)
    config = transformers.LlamaConfig(
        **keywords,
        max_position_embeddings=int(getattr(like, "max_position_embeddings", 4096)),
        bos_token_id=getattr(like, "bos_token_id", None),
        eos_token_id=getattr(like, "eos_token_id", None),
        pad_token_id=getattr(like, "pad_token_id", None),
    )
    model = transformers.LlamaForCausalLM(config)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    model.generation_config.eos_token_id = None  # requests name their own stop ids
    return model.eval()


def bigram_name(successors: Mapping[int, int], default: int, vocab_size: int) -> str:
    """A folder name for the table (the same table, the same name)."""
    key = json.dumps([sorted(successors.items()), default, vocab_size])
    return "bigram-" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def bigram_checkpoint(successors: Mapping[int, int], default: int, like: Any, folder: Path) -> Path:
    """The bigram draft written as a checkpoint folder (``save_pretrained``) under ``folder``,
    named by the table, written once."""
    out = folder / bigram_name(successors, default, int(like.vocab_size))

    def write(tmp: Path) -> None:
        bigram_model(successors, default, like).save_pretrained(str(tmp), safe_serialization=True)

    write_once(out, write)
    return out
