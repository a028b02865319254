"""``verispec serve``: the figures' arithmetic (deterministic) and the command end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from verispec.cli import main
from verispec.engines.protocol import RoundStat
from verispec.serving import (
    STREAM_ROUNDS,
    Timed,
    checked_times,
    length_rule,
    round_summary,
    rounds_of,
    speed_summary,
    stream_summary,
)
from verispec.serving.measure import _draft_gain_lost

ROOT = Path(__file__).resolve().parents[2]
#: The end-to-end runs (marked torch: skipped, saying what to install, without torch and
#: transformers) serve the reference engine or an engine of ``tests/fixtures/my_engine.py``; the
#: arithmetic above them needs neither.


def _timed(seconds: float, tokens: int, speculative: bool = True, rounds=None, times=None) -> Timed:
    return Timed("short", "test", speculative, seconds, tokens, "length", rounds, times)


def test_time_per_token_is_a_ratio_of_sums_not_a_mean_of_ratios() -> None:
    """One long request and one short: the mean of per-request ratios (0.3 s per token) is not
    the time the engine spent per committed token (2.2 s over 12 tokens)."""
    spec = [_timed(2.0, 10), _timed(0.2, 2)]
    base = [_timed(2.2, 10, False), _timed(0.4, 2, False)]
    out = speed_summary(spec, base, seed=0)
    assert out["speculative"]["time_per_token_s"] == pytest.approx(2.2 / 12)
    assert out["baseline"]["time_per_token_s"] == pytest.approx(2.6 / 12)
    assert out["speedup"] == pytest.approx(2.6 / 2.2)
    low, high = out["speedup_interval"]
    assert low <= out["speedup"] <= high
    assert "length_disclosure" not in out


def test_different_output_lengths_are_disclosed() -> None:
    spec = [_timed(1.0, 4), _timed(1.0, 10)]
    base = [_timed(1.0, 10, False), _timed(1.0, 10, False)]
    spec[0].finish_reason = "stop"
    out = speed_summary(spec, base, seed=0)
    assert "14 tokens speculative (1 requests stopped at EOS) against 20" in out["length_disclosure"]


def test_the_tail_sum_identity_holds_on_rounds_not_cut_short() -> None:
    rounds = [[RoundStat(0, a, a + 1) for a in (0, 1, 2, 2, 3, 1)]]
    out = round_summary(rounds, gamma=3)
    assert out["survival"] == pytest.approx([5 / 6, 3 / 6, 1 / 6])
    assert out["committed_per_round"] == pytest.approx(out["tail_sum"])
    assert out["rounds_cut_short"] == 0
    a = out["acceptance_rate"]
    assert a == pytest.approx((5 + 3 + 1) / (6 + 5 + 3))  # accepted positions over positions tried
    assert out["independent_formula"] == pytest.approx((1 - a**4) / (1 - a))
    cut = round_summary([[RoundStat(0, 3, 2)]], gamma=3)  # three accepted, two committed: the budget
    assert cut["rounds_cut_short"] == 1 and cut["committed_per_round"] < cut["tail_sum"]


def test_the_stream_gives_first_token_inter_token_and_delivery_waits() -> None:
    """Two speculative streams: tokens delivered together arrive 0 s apart, so the inter-token
    median can be 0 while the wait between deliveries (a whole round) is what a user feels."""
    a = _timed(0.9, 5, times=[0.1, 0.1, 0.1, 0.4, 0.4])  # deliveries at 0.1 and 0.4
    b = _timed(0.9, 4, times=[0.3, 0.5, 0.5, 0.5])  # deliveries at 0.3 and 0.5
    out = stream_summary([a, b])
    assert out["time_to_first_token_p50_s"] == pytest.approx(0.2)  # median of 0.1 and 0.3
    gaps = [0, 0, 0.3, 0, 0.2, 0, 0]  # every consecutive pair of tokens
    assert out["inter_token_p50_s"] == pytest.approx(0.0)
    assert out["inter_token_p95_s"] == pytest.approx(float(np.quantile(gaps, 0.95)))
    assert out["delivery_wait_p50_s"] == pytest.approx(0.25)  # the waits 0.3 and 0.2
    assert out["deliveries"] == 4
    assert len(out["inter_token_deciles_s"]) == 10
    assert stream_summary([a, _timed(1.0, 3)]) == {
        "reason": "the engine lacks the capability token-times: no stream to time"
    }


def test_rounds_are_read_off_a_stream_when_the_engine_reports_none() -> None:
    """Each delivery is one round: 3 tokens at once are two accepted drafts and a correction."""
    streamed = _timed(1.0, 6, times=[0.1, 0.1, 0.1, 0.2, 0.3, 0.3])
    assert [(r.accepted, r.committed) for r in rounds_of(streamed) or []] == [(2, 3), (0, 1), (1, 2)]
    own = [RoundStat(0, 1, 2)]
    assert rounds_of(_timed(1.0, 2, rounds=own, times=[0.1, 0.1])) == own  # the engine's own win
    assert rounds_of(_timed(1.0, 2)) is None
    assert "read off the stream" in STREAM_ROUNDS


def test_a_malformed_stream_is_refused_never_timed() -> None:
    assert checked_times([0.1, 0.2], 2, "w") == [0.1, 0.2]
    assert checked_times(None, 2, "w") is None
    with pytest.raises(ValueError, match="w: token_times has 1 entries for 2 tokens"):
        checked_times([0.1], 2, "w")
    for bad in ([0.2, 0.1], [0.1, float("nan")], [-0.1, 0.2]):
        with pytest.raises(ValueError, match="must be finite, >= 0 and non-decreasing"):
            checked_times(bad, 2, "w")


def _tuning(seconds_per_round: float, committed: int, requests: int = 12) -> list[Timed]:
    """Requests of 10 rounds each, with a little spread between requests."""
    return [
        _timed(
            10 * seconds_per_round * (1 + 0.01 * (i % 3)),
            10 * committed,
            rounds=[RoundStat(0, committed - 1, committed)] * 10,
        )
        for i in range(requests)
    ]


def test_the_draft_length_rule_decides_on_time_per_token_with_its_uncertainty() -> None:
    short = _tuning(1.0, 2)  # 0.5 s per token
    cheap = length_rule(short, _tuning(1.2, 3), seed=0)  # dC 0.2 < dK 1 * C / K: 0.4 s per token
    assert cheap["decision"] == "worthwhile"
    assert cheap["dC_over_dK"] < cheap["C_over_K"]
    dear = length_rule(short, _tuning(2.0, 3), seed=0)  # 0.67 s per token
    assert dear["decision"] == "not worthwhile"
    assert dear["dC_over_dK"] > dear["C_over_K"]
    close = length_rule(short, _tuning(1.5, 3), seed=0)  # 0.5 s per token: the same
    assert close["decision"] == "undecided"


def test_a_draft_gain_that_does_not_reach_serving_is_named_only_beyond_noise() -> None:
    """A longer draft that commits more per round but serves slower is named, with the rise in
    committed tokens and the loss in time per token each outside its bootstrap noise."""

    def summary(p95: float) -> dict:
        return {"test": {"all": {"speculative": {"latency_p95_s": p95, "stream": {}}}}}

    short = _tuning(1.0, 2)  # 0.5 s per token
    slower = _tuning(2.0, 3)  # one more token per round, 0.67 s per token
    text = _draft_gain_lost(2, 4, {2: short, 4: slower}, {2: summary(1.0), 4: summary(1.5)}, seed=0)
    assert text is not None
    assert text.startswith("gamma 2 -> 4: committed tokens per round rose by 1.00 (95% [")
    assert re.search(r"while time per token \(\+16\d\.\d ms, 95% \[16\d\.\d, 1[67]\d\.\d\]\)", text)
    assert "and p95 latency (1000.0 -> 1500.0 ms)" in text
    assert text.endswith("got worse: the draft gain has not become a serving gain")
    flat = _tuning(2.0, 2)  # slower, but no more tokens per round: not this criterion
    assert _draft_gain_lost(2, 4, {2: short, 4: flat}, {2: summary(1.0), 4: summary(1.5)}, 0) is None
    cheap = _tuning(1.2, 3)  # more per round and faster, p95 better too
    assert _draft_gain_lost(2, 4, {2: short, 4: cheap}, {2: summary(1.0), 4: summary(0.9)}, 0) is None


@pytest.fixture()
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.torch
@pytest.mark.usefixtures("_in_repo_root")
def test_serve_measures_the_reference_engine_and_keeps_every_request(tmp_path, capsys) -> None:
    out = tmp_path / "serve"
    args = ["serve", "--engine", "reference", "--gammas", "1,3", "--requests", "2", "--tuning", "2"]
    args += ["--max-new-tokens", "8", "--out", str(out), "--json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert [g["gamma"] for g in data["draft_lengths"]] == [1, 3]
    assert data["length_rule"][0]["decision"] in ("worthwhile", "not worthwhile", "undecided")
    assert any("no matched quality contract" in c for c in data["contract"])
    kinds = set(data["draft_lengths"][0]["test"])
    assert kinds == {"all", "short", "long", "repeating"}
    # the reference engine streams: first token, inter-token times, in one request and in a batch
    first = data["draft_lengths"][0]
    for arm in ("speculative", "baseline"):
        assert first["test"]["all"][arm]["stream"]["time_to_first_token_p50_s"] > 0
        assert first["concurrent"][arm]["stream"]["inter_token_p95_s"] >= 0
    assert "source" not in first["rounds"]  # the engine's own rounds, not the stream's
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 2 * (2 * 3 * 2 + 1)  # gammas x arms x (requests + warm-up)
    assert (out / "serve.md").read_text().startswith("# Serving measurement")
    assert "<svg" in (out / "serve.html").read_text()
    assert main(args) == 2  # the folder holds a report now
    assert "pass --force" in capsys.readouterr().err


@pytest.mark.torch
@pytest.mark.usefixtures("_in_repo_root")
@pytest.mark.parametrize(
    ("factory", "reason"),
    [
        ("make_bare", "lacks the capability non-speculative"),
        ("make_crashing", "failed a request"),
        ("make_time_travel", "must be finite, >= 0 and non-decreasing"),
    ],
)
def test_no_baseline_is_inconclusive_never_a_speedup(factory: str, reason: str, capsys) -> None:
    code = main(["serve", "--engine", f"tests.fixtures.my_engine:{factory}", "--requests", "2", "--json"])
    assert code == 10
    data = json.loads(capsys.readouterr().out)
    assert reason in data["inconclusive"]
    assert data["draft_lengths"] == []


def test_bad_serve_options_are_usage_errors(capsys) -> None:
    assert main(["serve", "--engine", "reference", "--gammas", "2,x"]) == 2
    assert "--gammas='2,x'" in capsys.readouterr().err
    assert main(["serve", "--engine", "reference", "--requests", "1"]) == 2
    assert "--requests=1 must be >= 2" in capsys.readouterr().err
