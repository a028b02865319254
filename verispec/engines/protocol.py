"""The engine protocol: what a speculative-decoding engine under test must provide.

An engine generates for a batch of requests and returns tokens and finish reasons. It
declares optional capabilities; a check that needs a capability the engine lacks is
skipped with a stated reason, never passed silently.

The capabilities, and what an engine that declares one promises, are :data:`CAPABILITIES`.

The baseline is the target model's own token-by-token conditionals (a plain forward pass),
served by the engine process but computed with the plain model, never the engine's path.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from verispec.core.distributions import to_fraction
from verispec.core.transforms import SamplingConfig
from verispec.errors import UsageError

__all__ = [
    "CAPABILITIES",
    "Completion",
    "Engine",
    "Request",
    "RoundStat",
    "Sampling",
    "probe_sequence",
    "refuse_unsupported",
]

#: Every optional capability, with what an engine that declares it promises.
CAPABILITIES: dict[str, str] = {
    "target-logits": "exposes the target's own next-token logits from a plain forward pass "
    "(`target_logits_along(prompt, tokens)` or `target_logits(prefixes)`), the token-by-token "
    "baseline; without it no check can compare the output with the target's law",
    "scripted-drafts": 'honours `Request.script`: `{"kind": "forced-rejection", "position": j}` puts '
    "the first rejection at draft `j` (the drafts before it are drawn from the target's own law, so "
    "they are accepted; the draft at `j` is a token the target cannot emit under top-k); "
    '`{"kind": "full-acceptance"}` accepts every draft',
    "bigram-drafts": "honours `Request.script = "
    '{"kind": "bigram", "successors": [[t, s], ...], "default": d}` by drafting with '
    "verispec's programmable bigram draft model (`verispec.engines.bigram`), whose argmax after token t "
    "is s (d after any token not listed), through the engine's own draft-model path; at temperature 0 "
    "the table decides where each round's first rejection falls",
    "round-stats": "fills `Completion.rounds`: per round, the committed length at its start, the "
    "accepted and the committed count, and the drafts (or, where the engine counts them but does not "
    "list them, how many it proposed)",
    "non-speculative": "`Request(speculative=False)` decodes token by token with the same model",
    "seeded": "the same request and seed give the same tokens",
    "seeded-equivalence": "spends one random draw per committed token on both paths, in the same order "
    "(sample-and-match verification: each position's token is the target's own sample, and a draft is "
    "accepted when it equals it), so a speculative request gives token for token the output of the same "
    "request and seed with `speculative=False`, at any temperature",
    "draft-model": "exposes the draft model's logits (`draft_logits_along` or `draft_logits`)",
    "point-mass-drafts": "the verifier receives no draft law: each draft is a point mass (q = 1 at the "
    "draft), accepted with probability p(draft); with `draft-model` the drafts are the draft model's "
    "argmax",
    "token-times": "fills `Completion.token_times`: for each committed token, the seconds from the start "
    "of the `generate` call at which the engine handed it out (tokens committed together share one time), "
    "the stream a user sees: time to first token and inter-token times",
    "batch": "`generate` takes several requests at once and gives each row its own tokens, however "
    "ragged the rows' lengths and acceptance",
    "penalties": "applies `Sampling`'s penalties on every path, greedy and sampled, as vLLM does "
    "(`Sampling.penalise`): the repetition penalty on every token of the prompt and the output so far "
    "(a positive logit divided by it, another multiplied), then each logit lowered by the frequency "
    "penalty times its token's count in the output so far and by the presence penalty if it occurs there; "
    "without it no request carries a penalty",
}


@dataclass(frozen=True)
class Sampling:
    """Float sampling settings as an engine receives them (0 temperature is greedy)."""

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    #: OpenAI/vLLM semantics: every logit lowered by the penalty times the number of times its
    #: token was generated so far in this request (the prompt does not count)
    frequency_penalty: float = 0.0
    #: OpenAI/vLLM semantics: every logit of a token generated so far lowered by the penalty
    presence_penalty: float = 0.0
    #: vLLM/transformers semantics: the logit of every token seen so far, in the prompt or the
    #: output, divided by the penalty where positive and multiplied by it where not
    repetition_penalty: float = 1.0

    def __post_init__(self) -> None:
        for name in ("frequency_penalty", "presence_penalty"):
            if not math.isfinite(getattr(self, name)):
                raise UsageError(f"{name}={getattr(self, name)!r} must be finite")
        if not (math.isfinite(self.repetition_penalty) and self.repetition_penalty > 0):
            raise UsageError(f"repetition_penalty={self.repetition_penalty!r} must be finite and > 0")
        if not self.temperature >= 0:
            raise UsageError(f"temperature={self.temperature!r} must be >= 0")
        if self.top_k is not None and self.top_k < 1:
            raise UsageError(f"top_k={self.top_k!r} must be >= 1")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise UsageError(f"top_p={self.top_p!r} must be in (0, 1]")
        if self.min_p is not None and not 0 <= self.min_p <= 1:
            raise UsageError(f"min_p={self.min_p!r} must be in [0, 1]")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def config(self) -> Any:
        """The same settings as a :class:`~verispec.core.transforms.SamplingConfig`."""

        def exact(name: str, value: float | None) -> Any:
            return None if value is None else to_fraction(value, name=name)

        return SamplingConfig(
            exact("temperature", self.temperature),
            self.top_k,
            exact("top_p", self.top_p),
            exact("min_p", self.min_p),
        )

    def uses(self, feature: str) -> bool:
        """Whether the setting ``feature`` (a field name) is set to anything but its neutral
        value (unset, 0, or its default: a repetition penalty of 1 is no penalty)."""
        value = getattr(self, feature)
        return value not in (None, 0) and value != getattr(_NEUTRAL, feature)

    @property
    def penalised(self) -> bool:
        """Whether any penalty is set (a request carries one only to engines with ``penalties``)."""
        return bool(self.frequency_penalty or self.presence_penalty or self.repetition_penalty != 1)

    def describe(self) -> str:
        penalties = [
            f"{name} penalty {value:g}"
            for name, value, neutral in (
                ("frequency", self.frequency_penalty, 0),
                ("presence", self.presence_penalty, 0),
                ("repetition", self.repetition_penalty, 1),
            )
            if value != neutral
        ]
        return str(self.config().describe()) + "".join(f", {p}" for p in penalties)

    def penalise(self, logits: Any, generated: Sequence[int], prompt: Sequence[int] = ()) -> Any:
        """``logits`` (one row, numpy or torch) after the penalties, in vLLM's order: the
        repetition penalty over the tokens of ``prompt`` and ``generated``, then the frequency
        and presence penalties over ``generated``."""
        if not self.penalised or not (generated or (prompt and self.repetition_penalty != 1)):
            return logits
        out = logits.clone() if hasattr(logits, "clone") else logits.copy()
        if self.repetition_penalty != 1:
            r = self.repetition_penalty
            for token in {*prompt, *generated}:
                value = out[token]
                out[token] = value / r if value > 0 else value * r
        for token, count in Counter(generated).items():
            out[token] -= self.frequency_penalty * count + self.presence_penalty
        return out


_NEUTRAL = Sampling()


@dataclass(frozen=True)
class Request:
    prompt: tuple[int, ...]
    max_new_tokens: int
    sampling: Sampling = field(default_factory=Sampling)
    seed: int = 0
    stop_ids: tuple[int, ...] = ()
    speculative: bool = True
    script: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["prompt"] = list(self.prompt)
        data["stop_ids"] = list(self.stop_ids)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Request:
        return cls(
            prompt=tuple(data["prompt"]),
            max_new_tokens=int(data["max_new_tokens"]),
            sampling=Sampling(**data["sampling"]),
            seed=int(data["seed"]),
            stop_ids=tuple(data.get("stop_ids", ())),
            speculative=bool(data.get("speculative", True)),
            script=data.get("script"),
        )


@dataclass(frozen=True)
class RoundStat:
    start: int  # committed length (prompt included) at the start of the round
    accepted: int
    committed: int
    drafts: tuple[int, ...] = ()  # the proposed drafts, when the engine reports them
    #: how many drafts the round proposed, where the engine counts them but does not list them
    proposed: int | None = None
    #: the engine ended its request in this round (at its end-of-sequence id, which this request
    #: does not stop at) and the adapter resumed it: the round committed fewer than accepted + 1
    ended: bool = False

    @property
    def rejected(self) -> bool:
        """Whether a draft of this round was rejected (the round committed the target's own
        token in place of a proposed draft)."""
        proposed = len(self.drafts) if self.proposed is None else self.proposed
        return self.accepted < proposed and self.committed > self.accepted


@dataclass
class Completion:
    tokens: list[int]
    finish_reason: str  # "stop" or "length"
    rounds: list[RoundStat] | None = None
    error: str | None = None
    #: seconds from the start of ``generate`` at which each token was handed out (``token-times``)
    token_times: list[float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "finish_reason": self.finish_reason,
            "rounds": None if self.rounds is None else [asdict(r) for r in self.rounds],
            "error": self.error,
            "token_times": self.token_times,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Completion:
        rounds = data.get("rounds")
        return cls(
            tokens=list(data.get("tokens", [])),
            finish_reason=str(data.get("finish_reason", "")),
            rounds=None
            if rounds is None
            else [RoundStat(**{**r, "drafts": tuple(r.get("drafts", ()))}) for r in rounds],
            error=data.get("error"),
            token_times=None if data.get("token_times") is None else [float(t) for t in data["token_times"]],
        )


@runtime_checkable
class Engine(Protocol):
    """What ``--engine module:factory`` must return.

    Optional methods go with the capabilities that declare them: ``target_logits(prefixes)``
    or ``target_logits_along(prompt, tokens)`` with ``target-logits`` (raw next-token logits
    of the target from a plain forward pass: after each prefix, or predicting each of
    ``tokens`` after ``prompt``), and ``draft_logits`` or ``draft_logits_along`` with
    ``draft-model``.
    """

    name: str
    vocab_size: int
    capabilities: frozenset[str]

    def generate(self, requests: list[Request]) -> list[Completion]: ...


def refuse_unsupported(name: str, unsupported: dict[str, str], sampling: Sampling) -> None:
    """Raise a usage error naming the first setting of ``sampling`` that the engine ``name``
    declares it cannot take (``unsupported``: setting -> reason)."""
    for feature, reason in unsupported.items():
        if sampling.uses(feature):
            raise UsageError(f"{name} does not take {feature}: {reason}")


def probe_sequence(prompts: Sequence[Sequence[int]], vocab_size: int) -> list[int]:
    """The token sequence an adapter compares its engine's logits with the baseline's on: the
    first prompt, or twelve ordinary ids where the pair has none."""
    return list(prompts[0]) if prompts else [3 + (7 * i) % (vocab_size - 3) for i in range(12)]
