"""``Sampling``'s penalties: vLLM's semantics and order, computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from verispec.engines.protocol import Sampling
from verispec.errors import UsageError


class TestPenalise:
    def test_repetition_then_frequency_and_presence_as_vllm_applies_them(self) -> None:
        """The repetition penalty acts on every token seen (prompt or output): a positive logit
        divided by it, another multiplied; then each output token's logit is lowered by the
        frequency penalty times its count and by the presence penalty once."""
        s = Sampling(1.0, frequency_penalty=0.5, presence_penalty=0.25, repetition_penalty=2.0)
        logits = np.array([1.0, -1.0, 2.0, 0.5, 3.0])
        out = s.penalise(logits, generated=[2, 2, 3], prompt=[0, 1])
        expected = [
            1.0 / 2,  # prompt token, positive: divided
            -1.0 * 2,  # prompt token, negative: multiplied
            2.0 / 2 - 0.5 * 2 - 0.25,  # generated twice
            0.5 / 2 - 0.5 * 1 - 0.25,  # generated once
            3.0,  # never seen
        ]
        assert out.tolist() == pytest.approx(expected)
        assert logits.tolist() == [1.0, -1.0, 2.0, 0.5, 3.0]  # the input is left alone

    def test_the_prompt_counts_for_repetition_only(self) -> None:
        s = Sampling(1.0, frequency_penalty=1.0, presence_penalty=1.0)
        logits = np.array([1.0, 2.0])
        assert s.penalise(logits, generated=[], prompt=[0, 1]) is logits
        assert Sampling(1.0, repetition_penalty=2.0).penalise(logits, [], prompt=[1]).tolist() == [1.0, 1.0]

    def test_no_penalty_returns_the_row_itself(self) -> None:
        logits = np.array([0.3, 0.7])
        assert Sampling(0.5).penalise(logits, [0, 1], [1]) is logits
        assert not Sampling(0.5).penalised and Sampling(presence_penalty=0.1).penalised

    def test_settings_name_their_penalties_and_refuse_bad_values(self) -> None:
        described = Sampling(1.0, top_p=0.9, presence_penalty=0.5, repetition_penalty=1.3).describe()
        assert described.endswith(", presence penalty 0.5, repetition penalty 1.3")
        with pytest.raises(UsageError, match=r"repetition_penalty=0\.0 must be finite and > 0"):
            Sampling(repetition_penalty=0.0)
        with pytest.raises(UsageError, match="presence_penalty=nan must be finite"):
            Sampling(presence_penalty=float("nan"))
