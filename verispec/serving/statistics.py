"""The serving figures, computed from timed requests: no engine, no rendering.

Time per committed token as a ratio of sums with a 95% percentile bootstrap interval over
requests, and the paired speedup (:func:`speed_summary`); what a streaming user sees
(:func:`stream_summary`); the survival of the accepted length, the committed tokens per round
measured, from the tail-sum identity and from the independent-acceptance formula
(:func:`round_summary`, on the engine's rounds or those read off its stream,
:func:`rounds_of`); the draft-length rule (:func:`length_rule`); the seed article's modelled
speedup (:func:`modelled_speedup`); and one draft length's record of them all
(:func:`gamma_record`). How the requests are served is :mod:`verispec.serving.measure`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass
from typing import Any

from verispec.engines.protocol import RoundStat
from verispec.errors import UsageError

__all__ = [
    "BOOTSTRAP",
    "DECILES",
    "STREAM_ROUNDS",
    "Timed",
    "checked_times",
    "gamma_record",
    "length_rule",
    "modelled_speedup",
    "round_summary",
    "rounds_of",
    "speed_summary",
    "stream_summary",
]

#: Bootstrap resamples for every interval.
BOOTSTRAP = 2000
#: The quantiles a distribution is drawn at in the HTML report (deciles).
DECILES = tuple(i / 10 for i in range(1, 11))


@dataclass
class Timed:
    """One request as served: the engine's time for it and what it committed."""

    kind: str
    split: str  # "tuning" or "test"
    speculative: bool
    seconds: float
    tokens: int
    finish_reason: str
    rounds: list[RoundStat] | None = None
    #: when each token came out, seconds from the start of the request (``token-times``)
    token_times: list[float] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["rounds"] = None if self.rounds is None else [asdict(r) for r in self.rounds]
        return data


def checked_times(times: list[float] | None, tokens: int, where: str) -> list[float] | None:
    """An engine's token times, refused when they cannot be a stream of ``tokens`` tokens (a
    wrong count, a negative, a non-finite or a decreasing time): a malformed stream would
    give wrong latencies, so it is the engine's error, never a figure."""
    if times is None:
        return None
    if len(times) != tokens:
        raise ValueError(f"{where}: token_times has {len(times)} entries for {tokens} tokens")
    if any(not math.isfinite(t) or t < 0 for t in times) or any(b < a for a, b in itertools.pairwise(times)):
        raise ValueError(f"{where}: token_times={times[:8]!r}... must be finite, >= 0 and non-decreasing")
    return list(times)


def stream_summary(timed: list[Timed]) -> dict[str, Any]:
    """What a user of a streaming server sees, from the requests' token times: time to first
    token (p50, p95), the inter-token times of every token (p50, p95; tokens delivered
    together arrive 0 s apart) and the waits between deliveries (p50, p95: how long a user
    waits for the next chunk, a whole round under speculation)."""
    import numpy as np  # deferred: heavy

    if not timed or any(t.token_times is None for t in timed):
        return {"reason": "the engine lacks the capability token-times: no stream to time"}
    streams = [t.token_times or [] for t in timed if t.token_times]
    if not streams:
        return {"reason": "no request committed a token"}
    first = np.array([s[0] for s in streams])
    gaps = np.concatenate([np.diff(s) for s in streams])
    waits = np.concatenate([np.diff([d[0] for d in _deliveries(s)]) for s in streams])

    def p(values: Any, q: float) -> float | None:
        return float(np.quantile(values, q)) if len(values) else None

    return {
        "inter_token_deciles_s": [float(v) for v in np.quantile(gaps, DECILES)] if len(gaps) else [],
        "time_to_first_token_p50_s": p(first, 0.5),
        "time_to_first_token_p95_s": p(first, 0.95),
        "inter_token_p50_s": p(gaps, 0.5),
        "inter_token_p95_s": p(gaps, 0.95),
        "delivery_wait_p50_s": p(waits, 0.5),
        "delivery_wait_p95_s": p(waits, 0.95),
        "deliveries": int(len(waits) + len(streams)),
    }


#: How rounds read off a stream are to be taken (the report says it beside them).
STREAM_ROUNDS = (
    "read off the stream (the engine reports no rounds): each delivery is one round's committed tokens, "
    "accepted drafts plus one; a round cut short by the budget reads as a shorter round, and an engine "
    "that decodes its first token from the prefill shows it as a round of one"
)


def rounds_of(timed: Timed) -> list[RoundStat] | None:
    """A speculative request's rounds: the engine's own, else read off its stream
    (:data:`STREAM_ROUNDS`), else none."""
    if timed.rounds:
        return timed.rounds
    if timed.token_times is None:
        return None
    return [RoundStat(0, len(group) - 1, len(group)) for group in _deliveries(timed.token_times)]


def _deliveries(times: list[float]) -> list[list[float]]:
    return [list(group) for _, group in itertools.groupby(times)]


def _interval(values: Any) -> list[float]:
    import numpy as np  # deferred: heavy

    low, high = np.quantile(np.asarray(values, dtype=np.float64), [0.025, 0.975])
    return [float(low), float(high)]


def speed_summary(spec: list[Timed], base: list[Timed], seed: int) -> dict[str, Any]:
    """Time per token (ratio of sums) of both arms with intervals, the paired speedup, p50/p95
    latency and the output-length disclosure; ``spec[i]`` and ``base[i]`` are one request."""
    import numpy as np  # deferred: heavy

    if len(spec) != len(base) or not spec:
        raise UsageError(f"spec and base must pair up one to one (got {len(spec)} and {len(base)})")
    s_sec = np.array([t.seconds for t in spec])
    s_tok = np.array([t.tokens for t in spec], dtype=np.float64)
    b_sec = np.array([t.seconds for t in base])
    b_tok = np.array([t.tokens for t in base], dtype=np.float64)
    if s_tok.sum() == 0 or b_tok.sum() == 0:
        raise UsageError("an arm committed no tokens: no time per token to compare")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(spec), size=(BOOTSTRAP, len(spec)))
    with np.errstate(divide="ignore", invalid="ignore"):
        s_boot = s_sec[idx].sum(1) / s_tok[idx].sum(1)
        b_boot = b_sec[idx].sum(1) / b_tok[idx].sum(1)
        speed_boot = b_boot / s_boot
    s_tpot, b_tpot = s_sec.sum() / s_tok.sum(), b_sec.sum() / b_tok.sum()

    def arm(sec: Any, tok: Any, tpot: float, boot: Any, timed: list[Timed]) -> dict[str, Any]:
        return {
            "requests": len(timed),
            "committed_tokens": int(tok.sum()),
            "seconds": float(sec.sum()),
            "time_per_token_s": float(tpot),
            "time_per_token_interval_s": _interval(boot[np.isfinite(boot)]),
            "latency_p50_s": float(np.quantile(sec, 0.5)),
            "latency_p95_s": float(np.quantile(sec, 0.95)),
            "latency_deciles_s": [float(v) for v in np.quantile(sec, DECILES)],
            "stopped_at_eos": sum(t.finish_reason == "stop" for t in timed),
            "mean_tokens": float(tok.mean()),
            "stream": stream_summary(timed),
        }

    out: dict[str, Any] = {
        "speculative": arm(s_sec, s_tok, s_tpot, s_boot, spec),
        "baseline": arm(b_sec, b_tok, b_tpot, b_boot, base),
        "speedup": float(b_tpot / s_tpot),
        "speedup_interval": _interval(speed_boot[np.isfinite(speed_boot)]),
    }
    s_arm, b_arm = out["speculative"], out["baseline"]
    if s_arm["committed_tokens"] != b_arm["committed_tokens"]:
        out["length_disclosure"] = (
            f"the arms committed different lengths: {s_arm['committed_tokens']} tokens speculative "
            f"({s_arm['stopped_at_eos']} requests stopped at EOS) against {b_arm['committed_tokens']} "
            f"baseline ({b_arm['stopped_at_eos']} at EOS); times are per committed token"
        )
    return out


def round_summary(rounds: list[list[RoundStat]], gamma: int) -> dict[str, Any]:
    """Survival of the accepted length and committed tokens per round, measured and predicted.

    ``rounds[i]`` are request i's rounds; a round is cut short when it committed fewer than
    ``accepted + 1`` tokens (EOS or the budget)."""
    flat = [r for rs in rounds for r in rs]
    if not flat:
        return {"rounds": 0, "reason": "the engine reported no rounds"}
    gamma = max([gamma, *(r.accepted for r in flat)])
    n = len(flat)
    survival = [sum(r.accepted >= j for r in flat) / n for j in range(1, gamma + 1)]
    cut = sum(r.committed < r.accepted + 1 for r in flat)
    measured = sum(r.committed for r in flat) / n
    # the per-position rate that fits the survival curve best under independence: the
    # geometric maximum-likelihood estimate, accepted positions over positions tried
    tried = 1 + sum(survival[:-1])
    a = sum(survival) / tried if tried else 0.0
    independent = gamma + 1.0 if a >= 1 else (1 - a ** (gamma + 1)) / (1 - a)
    return {
        "rounds": n,
        "gamma": gamma,
        "survival": survival,
        "committed_per_round": measured,
        "tail_sum": 1 + sum(survival),
        "rounds_cut_short": cut,
        "acceptance_rate": a,
        "independent_formula": independent,
    }


def length_rule(shorter: list[Timed], longer: list[Timed], seed: int) -> dict[str, Any]:
    """The draft-length rule between two draft lengths, on tuning requests of each (their
    rounds): ``dC``, ``dK`` and the change in time per token, each with a bootstrap interval
    (the two sets resampled independently: they ran in different engine processes)."""
    import numpy as np  # deferred: heavy

    def per_request(timed: list[Timed]) -> Any:
        return np.array(
            [
                [t.seconds, sum(r.committed for r in rs), len(rs)]
                for t in timed
                for rs in [rounds_of(t) or []]
            ],
            dtype=np.float64,
        )

    a, b = per_request(shorter), per_request(longer)
    if a[:, 2].sum() == 0 or b[:, 2].sum() == 0:
        return {"decision": "undecided", "reason": "the engine reported no rounds"}
    rng = np.random.default_rng(seed)

    def stats(x: Any) -> Any:  # x: [..., requests, 3] -> (C, K, C/K) as ratios of sums
        sums = x.sum(axis=-2)
        return sums[..., 0] / sums[..., 2], sums[..., 1] / sums[..., 2], sums[..., 0] / sums[..., 1]

    ca, ka, ta = stats(a)
    cb, kb, tb = stats(b)
    boot_a = stats(a[rng.integers(0, len(a), size=(BOOTSTRAP, len(a)))])
    boot_b = stats(b[rng.integers(0, len(b), size=(BOOTSTRAP, len(b)))])
    d_tpot = _interval(boot_b[2] - boot_a[2])
    if d_tpot[1] < 0:
        decision = "worthwhile"
    elif d_tpot[0] > 0:
        decision = "not worthwhile"
    else:
        decision = "undecided"
    dk = float(kb - ka)
    return {
        "C": float(ca),
        "K": float(ka),
        "dC": float(cb - ca),
        "dC_interval": _interval(boot_b[0] - boot_a[0]),
        "dK": dk,
        "dK_interval": _interval(boot_b[1] - boot_a[1]),
        "dC_over_dK": float((cb - ca) / dk) if dk else None,
        "C_over_K": float(ta),
        "d_time_per_token": float(tb - ta),
        "d_time_per_token_interval": d_tpot,
        "decision": decision,
    }


def modelled_speedup(acceptance: float, gamma: int, c: float) -> float:
    """The seed article's model: ``((1 - a^(g+1)) / (1 - a)) / (g c + 1)``.

    >>> round(modelled_speedup(0.8, 4, 0.0), 4)  # free drafts: E[K] = (1 - 0.8^5) / 0.2
    3.3616
    """
    tokens = gamma + 1.0 if acceptance >= 1 else (1 - acceptance ** (gamma + 1)) / (1 - acceptance)
    return tokens / (gamma * c + 1)


def gamma_record(gamma: int, pairs: list[tuple[Timed, Timed]], seed: int) -> dict[str, Any]:
    """One draft length's figures: speed by prompt kind and overall, on the test requests, and
    their rounds with the round cost, the draft cost ``c`` it implies and the modelled speedup;
    ``pairs`` are (speculative, baseline), one request each."""
    test = [(s, b) for s, b in pairs if s.split == "test"]
    kinds = sorted({s.kind for s, _ in test})
    speed = {"all": speed_summary([s for s, _ in test], [b for _, b in test], seed)}
    for kind in kinds:
        chosen = [(s, b) for s, b in test if s.kind == kind]
        speed[kind] = speed_summary([s for s, _ in chosen], [b for _, b in chosen], seed)
    spec = [s for s, _ in test]
    rounds = round_summary([rounds_of(s) or [] for s in spec], gamma)
    if rounds.get("rounds") and not any(s.rounds for s in spec):
        rounds["source"] = STREAM_ROUNDS
    elif not rounds.get("rounds"):
        rounds["reason"] = "the engine reports neither rounds (round-stats) nor a stream (token-times)"
    if len(kinds) > 1 and rounds.get("rounds"):  # prompt lookup copies on some kinds only
        rounds["by_kind"] = {}
        for kind in kinds:
            part = round_summary([rounds_of(s) or [] for s in spec if s.kind == kind], gamma)
            if part.get("rounds"):
                keys = ("rounds", "committed_per_round", "acceptance_rate")
                rounds["by_kind"][kind] = {key: part[key] for key in keys}
    record: dict[str, Any] = {"gamma": gamma, "test": speed, "rounds": rounds}
    if rounds.get("rounds"):
        # steps that committed one token without drafts (the prefill's first token, a lookup
        # that found nothing) are not rounds: they share the time, so the cost is per step
        in_rounds = sum(r.committed for s in spec for r in rounds_of(s) or [])
        rounds["steps_without_drafts"] = max(0, sum(s.tokens for s in spec) - in_rounds)
        base_tpot = speed["all"]["baseline"]["time_per_token_s"]
        steps = rounds["rounds"] + rounds["steps_without_drafts"]
        round_cost = speed["all"]["speculative"]["seconds"] / steps
        implied = round_cost / base_tpot  # one round in baseline tokens: g c + 1
        c = (implied - 1) / gamma if gamma else 0.0
        rounds["round_cost_s"] = round_cost
        rounds["implied_draft_cost_c"] = c
        # a round cheaper than a baseline token (c < 0) is outside the model: it gets c = 0
        rounds["modelled_speedup"] = modelled_speedup(rounds["acceptance_rate"], gamma, max(c, 0.0))
    return record
