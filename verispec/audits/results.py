"""The result of a sampling audit (planned or budgeted), and how an instance's samples are
tested into it.

Each instance is tested through its views (:mod:`verispec.audits.views`: the whole sequence
and each position's token, G-tests Bonferroni-combined); its report gives the p-value and the
view that gave it, the total variation between the sample and the exact law on the sequence
view's cells (plug-in, bias-corrected, and a basic bootstrap interval), any contract error,
and, for a rejected instance whose samples without token 0 are consistent, a note saying so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verispec.audits.instances import AuditInstance, law_option
from verispec.audits.views import CombinedTest, View, combined_test, views
from verispec.exact.criterion import target_law
from verispec.report.markdown import table
from verispec.stats.gof import cell_counts
from verispec.verdicts import Decision, RunVerdict

__all__ = ["AuditResult", "InstanceResult", "exact_law", "record_test", "reproduce_command"]

#: Bootstrap resamples for the total-variation interval.
BOOTSTRAP = 1000


@dataclass
class InstanceResult:
    """One instance's outcome: ``n`` of ``n_planned`` samples tested at rate ``alpha``."""

    name: str
    n_planned: int
    n: int
    alpha: float
    pvalue: float | None = None
    statistic: float | None = None
    method: str | None = None
    tv: float | None = None
    tv_interval: tuple[float, float] | None = None
    #: the plug-in ``tv`` less its bootstrap bias (inside ``tv_interval``, which the plug-in,
    #: biased upward by sampling noise, may not be)
    tv_corrected: float | None = None
    block_lengths: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    #: the instance's time limit ended its sampling before the planned size (the samples
    #: drawn are kept and tested; without a rejection the audit is inconclusive)
    incomplete: str | None = None
    #: a diagnostic beside the verdict (a failure on token 0 alone)
    note: str | None = None
    seconds: float = 0.0
    #: budgeted design: the smallest TV the samples drawn detect with the declared power,
    #: why sampling stopped ("budget" or "e-process"), and the final log e-value
    resolution: float | None = None
    stopped: str | None = None
    log_e: float | None = None
    #: the view whose test gave the p-value, and every view's own p-value (before Bonferroni)
    decided_by: str | None = None
    view_pvalues: dict[str, float] = field(default_factory=dict)

    @property
    def rejected(self) -> bool:
        return self.error is not None or (self.pvalue is not None and self.pvalue <= self.alpha)

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.name,
            "n_planned": self.n_planned,
            "n": self.n,
            "alpha": self.alpha,
            "pvalue": self.pvalue,
            "statistic": self.statistic,
            "method": self.method,
            "decided_by": self.decided_by,
            "view_pvalues": self.view_pvalues,
            "tv_estimate": self.tv,
            "tv_bias_corrected": self.tv_corrected,
            "tv_interval_95_basic_bootstrap": list(self.tv_interval) if self.tv_interval else None,
            "block_lengths": self.block_lengths,
            "error": self.error,
            "incomplete": self.incomplete,
            "note": self.note,
            "verdict": Decision.REJECTED
            if self.rejected
            else "incomplete"
            if self.incomplete
            else Decision.CONSISTENT,
            "seconds": round(self.seconds, 3),
            **(
                {"resolution_tv": self.resolution, "stopped": self.stopped, "log_e": self.log_e}
                if self.stopped
                else {}
            ),
        }


@dataclass
class AuditResult:
    """The outcome of a planned audit (``tv``: the effect planned for) or a budgeted one
    (``budget``: its description; ``tv`` 0), one :class:`InstanceResult` per instance."""

    function: str
    kind: str
    alpha: float
    power: float
    tv: float
    seed: int
    command: str
    instances: list[InstanceResult]
    budget: str | None = None
    #: threads per worker process (``None``: the libraries' defaults; in-process audits)
    threads: int | None = None
    #: whose drafts the black box verified: verispec's (``"given"``) or its own (``"self"``)
    drafts: str = "given"

    @property
    def verdict(self) -> RunVerdict:
        """``fail`` (non-conformance) if any instance rejects or broke the contract; else
        ``inconclusive`` if a time limit cut an instance short; else ``pass``."""
        if any(r.rejected for r in self.instances):
            return RunVerdict.FAIL
        if any(r.incomplete for r in self.instances):
            return RunVerdict.INCONCLUSIVE
        return RunVerdict.PASS

    def to_json(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "kind": self.kind,
            "verdict": self.verdict,
            "alpha": self.alpha,
            "power": self.power,
            "tv": self.tv,
            "seed": self.seed,
            "reproduce": self.command,
            "budget": self.budget,
            "worker_threads": self.threads,
            "drafts": self.drafts,
            "instances": [r.to_json() for r in self.instances],
        }

    def markdown(self) -> str:
        power = (
            f"budget {self.budget}: each instance sampled for its share, then the smallest total variation "
            f"detected with power {self.power:g} (the resolution) reported per instance"
            if self.budget
            else f"power {self.power:g} against any total-variation distance >= {self.tv:g} per instance"
        )
        lines = [
            f"# Audit of `{self.function}` ({self.kind} verifier): **{self.verdict}**",
            "",
            f"- family-wise false-alarm rate {self.alpha:g} (split over {len(self.instances)} "
            f"instances), {power}",
            "- each instance is tested on the whole sequence and on each position's token (G-tests, "
            "Bonferroni over the views; the p-value is the smallest view's times the number of views)",
            "- TV is the total variation between the sample and the exact law on the test's cells: the "
            "plug-in estimate is biased upward by sampling noise (a correct verifier shows a small positive "
            "TV), so the report also gives it less its bootstrap bias, inside its basic bootstrap interval",
            f"- seed {self.seed}; reproduce with `{self.command}`",
            *([f"- {_threads_line(self.threads)}"] if self.threads is not None else []),
            *(
                [
                    "- the black box drafts for itself (`speculate(model, rng)`): only its blocks' shape "
                    "is checked, the law does the rest"
                ]
                if self.drafts == "self"
                else []
            ),
            *(
                [
                    "- **inconclusive**: a time limit cut instances short; their samples are tested, and "
                    "nothing was rejected (raise --timeout, or audit with --budget)"
                ]
                if self.verdict == RunVerdict.INCONCLUSIVE
                else []
            ),
            "",
        ]
        rows = []
        for r in self.instances:
            tv = "" if r.tv is None else f"{r.tv:.4f}"
            interval = (
                ""
                if r.tv_interval is None or r.tv_corrected is None
                else f"{r.tv_corrected:.4f} [{r.tv_interval[0]:.4f}, {r.tv_interval[1]:.4f}]"
            )
            pvalue = "" if r.pvalue is None else f"{r.pvalue:.3g}"
            verdict = (
                f"**{Decision.REJECTED}**" if r.rejected else "incomplete" if r.incomplete else "consistent"
            )
            row = [
                r.name,
                r.n,
                pvalue,
                r.decided_by or "",
                tv,
                interval,
                verdict,
                r.error or r.incomplete or "",
            ]
            if self.budget:
                row[2:2] = ["" if r.resolution is None else f"{r.resolution:.4f}", r.stopped or ""]
            rows.append(row)
        header = ["instance", "samples", "p-value", "decided by", "TV on cells (plug-in)"]
        header += ["TV bias-corrected [95% basic bootstrap]"]
        header += ["verdict", "error"]
        if self.budget:
            header[2:2] = ["resolution (TV)", "stopped by"]
        lines.append(table(header, rows))
        lines += [f"- note on {r.name}: {r.note}" for r in self.instances if r.note]
        return "\n".join(lines) + "\n"


def _threads_line(threads: int) -> str:
    return (
        f"worker threads: {threads} per worker process (OMP_NUM_THREADS, MKL_NUM_THREADS and "
        "OPENBLAS_NUM_THREADS, which torch follows); --threads N to change"
    )


def exact_law(item: AuditInstance) -> dict[str, Any]:
    """The target's exact law of an instance's ``length`` tokens, keyed ``"t0 t1 ..."``."""
    return {" ".join(map(str, k)): v for k, v in target_law(item.instance, item.length).items()}


def _tv_with_interval(
    counts: dict[str, int], law: dict[str, Any], cells: list[list[Any]], seed: int
) -> tuple[float, float, tuple[float, float]]:
    """Total variation between the sample and the exact law on the test's cells: the plug-in
    estimate, the estimate less its bootstrap bias (``2 tv - mean``), and the basic
    (bias-correcting) bootstrap 95% interval, all clipped at 0. The plug-in is biased upward
    by sampling noise, so the interval, which subtracts the bootstrap's estimate of that bias,
    can lie below it; the bias-corrected estimate lies inside the interval.
    """
    import numpy as np  # deferred: heavy

    observed, probs, _ = cell_counts(counts, law, cells)
    n = sum(observed)
    freq = np.asarray(observed, dtype=np.float64) / n
    exact = np.asarray(probs, dtype=np.float64)
    tv = 0.5 * float(np.abs(freq - exact).sum())
    rng = np.random.default_rng(seed)
    boot = 0.5 * np.abs(rng.multinomial(n, freq, size=BOOTSTRAP) / n - exact).sum(axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    corrected = max(0.0, 2 * tv - float(boot.mean()))
    return tv, corrected, (max(0.0, 2 * tv - float(high)), max(0.0, 2 * tv - float(low)))


def record_test(
    result: InstanceResult, counts: dict[str, int], views_: list[View], seed: int
) -> CombinedTest:
    """Run the instance's combined test on ``counts``; record it and the TV estimate (on the
    sequence view's cells)."""
    test = combined_test(counts, views_)
    result.pvalue, result.statistic, result.method = test.pvalue, test.statistic, test.method
    result.decided_by, result.view_pvalues = test.decided_by, test.view_pvalues
    result.tv, result.tv_corrected, result.tv_interval = _tv_with_interval(
        counts, views_[0].law, views_[0].cells, seed
    )
    if result.pvalue <= result.alpha:
        result.note = _without_token_zero(counts, views_[0].law, len(views_) - 1, result.alpha)
    return test


def _without_token_zero(counts: dict[str, int], law: dict[str, Any], length: int, alpha: float) -> str | None:
    """A diagnostic for a rejected instance: the same test on the samples that hold no token
    0, against the exact law given that. Where those are consistent with it, the black box
    may mishandle token 0 only (as code that reserves it for padding does), which the report
    says; ``None`` otherwise. It changes no verdict."""
    kept = {k: v for k, v in law.items() if "0" not in k.split()}
    total = sum(kept.values())
    sub = {k: c for k, c in counts.items() if "0" not in k.split()}
    n = sum(sub.values())
    if not kept or not total or not n or len(kept) == len(law):
        return None
    test = combined_test(sub, views({k: v / total for k, v in kept.items()}, length, n))
    if test.pvalue <= alpha:
        return None
    return (
        f"rejected, but the {n} samples without token 0 are consistent with the target's law given that "
        f"(p = {test.pvalue:.3g}): the black box may mishandle token 0 alone (code that reserves it for "
        "padding does); audits draw token 0 as an ordinary token"
    )


def reproduce_command(
    kind: str, name: str, design: str, alpha: float, power: float, seed: int, law: str, drafts: str = "given"
) -> str:
    """The command line that reproduces an audit; ``design`` is ``--tv X`` or ``--budget B``."""
    command = f"verispec audit --{kind} {name} --alpha {alpha:g} --power {power:g} {design} --seed {seed}"
    return command + law_option(kind, law) + (" --drafts self" if drafts == "self" else "")
