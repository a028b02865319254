"""A vLLM custom proposer that scripts where a round's first rejection falls.

vLLM loads it by path (``speculative_config={"method": "custom_class", "model":
"verispec.engines.vllm_proposer.ScriptedProposer"}``) in the engine core, which the adapter
runs in its own process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the adapter hands the
script over through :data:`STATE` before each ``generate`` call.

vLLM gives a custom proposer's drafts no draft law (``draft_probs`` is ``None``): the
rejection sampler treats each draft as a point mass and accepts it with probability
``p(draft)``. So a draft cannot be made certain to pass; before the scripted position this
proposer drafts by :func:`verispec.engines.scripted.scripted_drafts`; the rounds the adapter
records from vLLM's scheduler say where the first rejection fell.
"""

from __future__ import annotations

from typing import Any

from verispec.engines.scripted import scripted_drafts

__all__ = ["STATE", "ScriptedProposer"]

#: Set by the adapter around each generate call: ``script`` (the request's script),
#: ``logits`` (committed ids -> the target's next-token logits), ``impossible`` (logits ->
#: a token the settings give probability 0, or None).
STATE: dict[str, Any] = {"script": None}


class ScriptedProposer:
    """``propose`` drafts by :data:`STATE`'s script; without a script it drafts nothing."""

    def __init__(self, vllm_config: Any) -> None:
        self.gamma = int(vllm_config.speculative_config.num_speculative_tokens)

    def load_model(self, *args: Any, **kwargs: Any) -> None:
        """vLLM loads a drafter's model at start-up; this one has none (the adapter computes
        the target's conditionals)."""

    def propose(
        self,
        sampled_token_ids: list[list[int]],
        num_tokens_no_spec: Any,
        token_ids_cpu: Any,
        slot_mappings: Any = None,
    ) -> list[list[int]]:
        drafts: list[list[int]] = []
        for row, sampled in enumerate(sampled_token_ids):
            n = int(num_tokens_no_spec[row])
            committed = tuple(int(t) for t in token_ids_cpu[row, :n])
            drafts.append(self._draft(committed) if sampled else [])
        return drafts

    def _draft(self, committed: tuple[int, ...]) -> list[int]:
        script = STATE.get("script")
        if not script:  # no script (and, outside a generate call, no logits to draft from)
            return []
        return scripted_drafts(script, self.gamma, committed, STATE["logits"], STATE["impossible"])
