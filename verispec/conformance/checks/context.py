"""What a running check is handed: the engine, its share of the false-alarm budget, the
seeds, the baseline and the builders of its result.

**One seed scheme.** Every random choice a check makes (a prompt, a request's seed, the
randomisation of a PIT value) is seeded by :func:`derive_seed` from the run's seed, the
check's name and a label for the stream, so that two checks never share a stream, a check's
numbers do not depend on which other checks ran, and ``--seed`` reproduces everything.
"""

from __future__ import annotations

import hashlib
import random as _random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from verispec.conformance.checks.registry import POWER, Check, CheckResult
from verispec.conformance.proxy import EngineOutputError, EngineProxy
from verispec.core.transforms import apply_float
from verispec.engines.protocol import Completion, Request, Sampling
from verispec.stats.multiplicity import Budget
from verispec.verdicts import Evidence, Failure, Status

__all__ = ["BATCH", "GREEDY_MARGIN", "Context", "derive_seed"]

#: Logit margin below which a greedy mismatch is excused (fp32 rounding, stated, never loosened).
GREEDY_MARGIN = 1e-4
#: Requests per generate call for engines with the ``batch`` capability.
BATCH = 8
#: Seeds are 31-bit: every engine and generator accepts them.
SEED_BITS = 31


def derive_seed(*labels: object) -> int:
    """The seed of one random stream: the first 64 bits of BLAKE2b over the labels (joined
    by a unit separator), reduced to 31 bits.

    >>> derive_seed(0, "sampling-law", "request", 0, 5)
    969452242
    """
    text = "\x1f".join(str(label) for label in ("verispec", *labels))
    digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
    return int(int.from_bytes(digest, "big") % 2**SEED_BITS)


@dataclass
class Context:
    engine: EngineProxy
    check: Check
    quick: bool
    seed: int
    #: the check's share of the run's false-alarm budget (statistical checks only)
    budget: Budget | None = None
    design: str = "planned"  # or "sequential" (the first-token law's e-process)
    progress: Callable[[int, int], None] | None = None  # (done, planned) on long checks
    seen: list[tuple[Request, Completion]] = field(default_factory=list)
    #: settings the engine declares it cannot take, left out with its reason
    left_out: dict[str, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ the plan
    @property
    def alpha(self) -> float:
        """The check's false-alarm rate."""
        if self.budget is None:
            raise AssertionError(f"check {self.check.name!r} is not statistical: it has no alpha")
        return self.budget.total

    @property
    def effect(self) -> float:
        """The effect size this run plans for (doubled by the quick design)."""
        return self.check.effect.at(self.quick)

    @property
    def effect_text(self) -> str:
        return self.check.effect.describe(self.quick)

    # ----------------------------------------------------------------- the seeds
    def seed_for(self, stream: str, *index: object) -> int:
        """The seed of ``stream`` (a request's, a generator's) at ``index``."""
        return derive_seed(self.seed, self.check.name, stream, *index)

    def rng(self, stream: str, *index: object) -> Any:
        """A numpy generator seeded by :meth:`seed_for`."""
        import numpy as np  # deferred: heavy

        return np.random.default_rng(self.seed_for(stream, *index))

    def prompts(self, count: int, salt: str, length: int = 4) -> list[tuple[int, ...]]:
        """``count`` prompts from the stream ``prompts/salt``: drawn from the engine's real
        text prompts where it has some (a trained model), else ``length`` ids in
        ``3 .. vocab - 1`` (ids 0 to 2 are often special). A text prompt is cut to its first
        ``len - 4 + length`` ids when a check asks for prompts of several lengths."""
        rng = _random.Random(self.seed_for("prompts", salt))
        pool = self.engine.prompts
        if pool:
            chosen = [pool[rng.randrange(len(pool))] for _ in range(count)]
            return [p[: max(1, len(p) - 4 + length)] if length != 4 else p for p in chosen]
        return [tuple(rng.randrange(3, self.vocab) for _ in range(length)) for _ in range(count)]

    # ---------------------------------------------------------- the settings
    def setting(self, *alternatives: Sampling) -> Sampling | None:
        """The first of ``alternatives`` the engine takes; the others it declares it cannot
        take (``Engine.unsupported``) are recorded in :attr:`left_out` with its reason.
        ``None`` when it takes none of them."""
        for sampling in alternatives:
            reason = self.unsupported(sampling)
            if reason is None:
                return sampling
            self.left_out[sampling.describe()] = reason
        return None

    def settings(self, groups: list[tuple[Sampling, ...]]) -> list[Sampling]:
        """:meth:`setting` for each group of alternatives, leaving out the groups it cannot take."""
        chosen = [self.setting(*group) for group in groups]
        return [s for s in chosen if s is not None]

    def unsupported(self, sampling: Sampling) -> str | None:
        """Why the engine cannot take ``sampling`` (a feature it declares unsupported, or a
        penalty without the ``penalties`` capability), or None."""
        if sampling.penalised and "penalties" not in self.engine.capabilities:
            return "penalties: the engine lacks the capability penalties"
        for feature, reason in self.engine.unsupported.items():
            if sampling.uses(feature):
                return f"{feature}: {reason}"
        return None

    # ---------------------------------------------------------------- the engine
    def tick(self, done: int, planned: int) -> None:
        if self.progress is not None:
            self.progress(done, planned)

    @property
    def vocab(self) -> int:
        return self.engine.vocab_size

    @property
    def batch_size(self) -> int:
        """Requests per generate call: a batch where the engine takes one."""
        return BATCH if "batch" in self.engine.capabilities else 1

    def run(self, request: Request) -> Completion:
        return self._validate(request, self.engine.generate(request))

    def run_many(self, requests: list[Request]) -> list[Completion]:
        """The requests in one batch where the engine takes batches, else one by one."""
        if len(requests) > 1 and "batch" in self.engine.capabilities:
            completions = self.engine.generate_many(requests)
            return [self._validate(r, c) for r, c in zip(requests, completions, strict=True)]
        return [self.run(r) for r in requests]

    def _validate(self, request: Request, completion: Completion) -> Completion:
        self.seen.append((request, completion))
        bad = [t for t in completion.tokens if not (isinstance(t, int) and 0 <= t < self.vocab)]
        if bad:
            raise EngineOutputError(f"returned token {bad[0]!r} outside the vocabulary 0..{self.vocab - 1}")
        if len(completion.tokens) > request.max_new_tokens:
            raise EngineOutputError(
                f"returned {len(completion.tokens)} tokens for max_new_tokens={request.max_new_tokens}"
            )
        return completion

    # -------------------------------------------------------------- the baseline
    def probs_along(
        self, model: str, prompt: tuple[int, ...], tokens: list[int], sampling: Sampling
    ) -> list[Any]:
        """The ``model``'s law before each of ``tokens`` (after the penalties for the prompt and
        the tokens before it, then the sampling settings in the engine's declared order: a
        documented order is the engine's behaviour, never a failure), one float64 array per token."""
        import numpy as np  # deferred: heavy

        if not tokens:
            return []
        logits = np.asarray(self.engine.logits_along(model, prompt, tokens), dtype=np.float64)
        logits = np.stack([sampling.penalise(row, tokens[:i], prompt) for i, row in enumerate(logits)])
        logits -= logits.max(axis=1, keepdims=True)
        rows = np.exp(logits)
        rows /= rows.sum(axis=1, keepdims=True)
        config = sampling.config()
        order = getattr(self.engine, "sampling_order", "temperature-first")
        return [apply_float(row, config, order=order) for row in rows]

    # ---------------------------------------------------------------- the result
    def result(self, status: Status, reason: str, **fields: Any) -> CheckResult:
        return CheckResult(self.check.name, status, reason, **fields)

    def passed(self, reason: str, **fields: Any) -> CheckResult:
        return self.result(Status.PASS, reason, **fields)

    def failed(self, reason: str, evidence: Evidence, **fields: Any) -> CheckResult:
        """A detection, through ``evidence``: a rejected law, an impossible token, a mismatch
        with a deterministic reference, a count that breaks the contract."""
        return self.result(Status.FAIL, reason, failure=Failure.DETECTION, evidence=evidence, **fields)

    def skipped(self, reason: str, **fields: Any) -> CheckResult:
        return self.result(Status.SKIP, reason, **fields)

    def decide(
        self,
        pvalues: Mapping[str, float],
        alphas: Mapping[str, float],
        *,
        samples: int,
        details: dict[str, Any],
        failed: Callable[[str, float], str],
        passed: str,
        power: float = POWER,
    ) -> CheckResult:
        """A statistical check's verdict: each test ``label`` rejects at ``pvalues[label] <=
        alphas[label]``, the alpha it was planned at; the check fails if any test rejects.
        The reported p-value is the Bonferroni-adjusted smallest one,
        ``min(1, min_l p_l * alpha / alpha_l)``, comparable with the check's alpha.
        ``failed(worst, pvalue)`` words a failure."""
        adjusted = {label: min(1.0, p * self.alpha / alphas[label]) for label, p in pvalues.items()}
        worst = min(adjusted, key=lambda label: adjusted[label])
        pvalue = adjusted[worst]
        rejected = any(pvalues[label] <= alphas[label] for label in pvalues)
        details = {**details, "alpha_split": dict(alphas)}
        common: dict[str, Any] = dict(
            alpha=self.alpha,
            power=power,
            effect=self.effect_text,
            pvalue=pvalue,
            samples=samples,
            details=details,
        )
        if rejected:
            return self.failed(failed(worst, pvalue), Evidence.STATISTIC, **common)
        return self.passed(passed, **common)
