"""Black-box audits: is a third-party chain or tree verifier exact?

``verispec audit --chain module:function`` (or :func:`audit` from Python):

1. builds the audit battery (:mod:`verispec.audits.instances`) and, for each instance, the
   exact law of ``L`` tokens under the target;
2. plans the sample size of each instance: a G-test (exact p-value when the count vectors
   can be enumerated) with false-alarm rate ``alpha / instances`` and power ``power``
   against every alternative at total variation ``tv`` from the target (the least
   favourable one has Cohen's ``w = 2 tv``); cells are pooled from the exact law before
   sampling;
3. samples the black box (in a subprocess with a time limit per instance, or in-process
   for a trusted callable), checking every returned block;
4. reports, per instance, the p-value, a total-variation estimate with a bootstrap
   interval, and errors; the verdict is ``fail`` (non-conformance) if any instance rejects or breaks
   the contract, and the command that reproduces the run.

Nothing measured is lost: each instance's result is recorded as soon as it arrives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verispec.audits.instances import AuditInstance, chain_audit_instances, to_spec, tree_audit_instances
from verispec.audits.worker import sample_instance
from verispec.errors import UsageError
from verispec.exact.criterion import target_law
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.gof import g_test, pooled_cells
from verispec.stats.plan import check_rate, chi_square_sample_size
from verispec.verdicts import Decision, RunVerdict

__all__ = ["AuditResult", "InstanceResult", "audit", "plan_instance"]

#: Bootstrap resamples for the total-variation interval.
BOOTSTRAP = 1000


@dataclass
class InstanceResult:
    name: str
    n_planned: int
    n: int
    alpha: float
    pvalue: float | None = None
    statistic: float | None = None
    method: str | None = None
    tv: float | None = None
    tv_interval: tuple[float, float] | None = None
    block_lengths: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

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
            "tv_estimate": self.tv,
            "tv_interval_95_basic_bootstrap": list(self.tv_interval) if self.tv_interval else None,
            "block_lengths": self.block_lengths,
            "error": self.error,
            "verdict": Decision.REJECTED if self.rejected else Decision.CONSISTENT,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class AuditResult:
    function: str
    kind: str
    alpha: float
    power: float
    tv: float
    seed: int
    command: str
    instances: list[InstanceResult]

    @property
    def verdict(self) -> RunVerdict:
        """``fail`` (non-conformance) if any instance rejects or broke the contract."""
        return RunVerdict.FAIL if any(r.rejected for r in self.instances) else RunVerdict.PASS

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
            "instances": [r.to_json() for r in self.instances],
        }

    def markdown(self) -> str:
        from verispec.report.markdown import table

        lines = [
            f"# Audit of `{self.function}` ({self.kind} verifier): **{self.verdict}**",
            "",
            f"- family-wise false-alarm rate {self.alpha:g} (split over {len(self.instances)} instances), "
            f"power {self.power:g} against any total-variation distance >= {self.tv:g} per instance",
            f"- seed {self.seed}; reproduce with `{self.command}`",
            "",
        ]
        rows = []
        for r in self.instances:
            tv = "" if r.tv is None else f"{r.tv:.4f}"
            interval = "" if r.tv_interval is None else f"[{r.tv_interval[0]:.4f}, {r.tv_interval[1]:.4f}]"
            pvalue = "" if r.pvalue is None else f"{r.pvalue:.3g}"
            verdict = f"**{Decision.REJECTED}**" if r.rejected else Decision.CONSISTENT
            rows.append([r.name, r.n, pvalue, tv, interval, verdict, r.error or ""])
        lines.append(
            table(
                ["instance", "samples", "p-value", "TV on cells", "95% basic bootstrap", "verdict", "error"],
                rows,
            )
        )
        return "\n".join(lines) + "\n"


def plan_instance(
    item: AuditInstance, *, alpha: float, power: float, tv: float
) -> tuple[int, dict[str, Any], list[list[str]]]:
    """The planned sample size, the exact law (keys ``"t0 t1 ..."``) and the cells of one instance."""
    exact = target_law(item.instance, item.length)
    law = {" ".join(map(str, k)): v for k, v in exact.items()}
    n = 200
    for _ in range(4):  # the pooling depends on n and the plan on the pooling: iterate to a fixed point
        cells = pooled_cells(law, n)
        new_n = chi_square_sample_size(2 * tv, max(len(cells) - 1, 1), alpha=alpha, power=power)
        if new_n == n:
            break
        n = new_n
    return n, law, pooled_cells(law, n)


def _tv_with_interval(
    counts: dict[str, int], law: dict[str, Any], cells: list[list[Any]], seed: int
) -> tuple[float, tuple[float, float]]:
    """Total variation between the sample and the exact law on the test's cells, with a basic
    (bias-correcting) bootstrap 95% interval, clipped at 0. The plug-in estimate is biased
    upward by sampling noise; the basic interval subtracts the bootstrap's estimate of that bias.
    """
    import numpy as np

    from verispec.stats.gof import cell_counts

    observed, probs, _ = cell_counts(counts, law, cells)
    n = sum(observed)
    freq = np.asarray(observed, dtype=np.float64) / n
    exact = np.asarray(probs, dtype=np.float64)
    tv = 0.5 * float(np.abs(freq - exact).sum())
    rng = np.random.default_rng(seed)
    boot = 0.5 * np.abs(rng.multinomial(n, freq, size=BOOTSTRAP) / n - exact).sum(axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return tv, (max(0.0, 2 * tv - float(high)), max(0.0, 2 * tv - float(low)))


def _run_isolated(
    function: str,
    jobs: list[dict[str, Any]],
    timeout_s: float,
    on_item: Callable[[int, dict[str, Any]], None],
) -> None:
    """One request per instance to the worker (:mod:`verispec.isolation`); a hang or a crash
    is that instance's error, and the next instance starts a fresh worker."""
    from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout

    with Worker("verispec.audits.worker", {"function": function}, startup_timeout_s=timeout_s) as worker:
        for job in jobs:
            try:
                data = worker.ask(job, timeout_s)
            except WorkerTimeout:
                data = {"error": f"did not finish within {timeout_s:g} s (time limit)"}
            except WorkerCrashed as exc:
                data = {"error": f"the audit process crashed: {exc}"}
            except RemoteError as exc:
                if exc.kind == "usage":  # the function could not be loaded
                    raise UsageError(exc.message) from None
                where = f" at {exc.where}" if exc.where else ""
                data = {"error": f"the audit worker raised {exc}{where}"}
            on_item(job["index"], data)


def audit(
    function: str | Callable[..., Any],
    kind: str = "chain",
    *,
    alpha: float = SUITE_ALPHA,
    power: float = 0.99,
    tv: float = 0.05,
    seed: int = 0,
    timeout_s: float = 120.0,
    law: str = "iid",
    instances: list[AuditInstance] | None = None,
    on_instance: Callable[[InstanceResult], None] | None = None,
) -> AuditResult:
    """Audit ``function`` (``"module:function"``, run in a subprocess, or a callable, run here).

    ``kind`` is ``"chain"`` or ``"tree"``; ``law`` is the candidate law of the tree battery.
    """
    check_rate("alpha", alpha)
    check_rate("power", power)
    if not 0 < tv < 1:
        raise UsageError(f"tv={tv!r} must be in (0, 1)")
    if kind not in ("chain", "tree"):
        raise UsageError(f"kind={kind!r} must be 'chain' or 'tree'")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"seed={seed!r} must be a non-negative integer")
    if isinstance(function, str) and (function.count(":") != 1 or not all(function.split(":"))):
        raise UsageError(f"function={function!r} must be written module:function")
    items = instances or (
        chain_audit_instances(seed) if kind == "chain" else tree_audit_instances(seed, law=law)
    )
    per_instance_alpha = alpha / len(items)
    plans = [plan_instance(item, alpha=per_instance_alpha, power=power, tv=tv) for item in items]
    name = function if isinstance(function, str) else getattr(function, "__qualname__", repr(function))
    flag = "--chain" if kind == "chain" else "--tree"
    command = f"verispec audit {flag} {name} --alpha {alpha:g} --power {power:g} --tv {tv:g} --seed {seed}"
    if kind == "tree":
        command += f" --law {law}"
    results: list[InstanceResult | None] = [None] * len(items)
    clock = [time.perf_counter()]

    def finish(index: int, data: dict[str, Any]) -> None:
        n_planned, exact, cells = plans[index]
        counts = data.get("counts", {})
        now = time.perf_counter()
        result = InstanceResult(
            items[index].name,
            n_planned,
            sum(counts.values()),
            per_instance_alpha,
            block_lengths=data.get("block_lengths", {}),
            error=data.get("error"),
            seconds=now - clock[0],
        )
        clock[0] = now
        if result.n and result.error is None:
            test = g_test(counts, exact, cells)
            result.pvalue, result.statistic, result.method = test.pvalue, test.statistic, test.method
            result.tv, result.tv_interval = _tv_with_interval(counts, exact, cells, seed + index)
        results[index] = result
        if on_instance:
            on_instance(result)

    jobs = [
        {"index": i, "spec": to_spec(item), "n": plans[i][0], "seed": seed * 1000 + i}
        for i, item in enumerate(items)
    ]
    if isinstance(function, str):
        _run_isolated(function, jobs, timeout_s, finish)
    else:
        for i, item in enumerate(items):
            finish(i, sample_instance(function, item, plans[i][0], seed * 1000 + i))
    done = [r for r in results if r is not None]
    return AuditResult(name, kind, alpha, power, tv, seed, command, done)
