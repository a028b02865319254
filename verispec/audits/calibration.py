"""Calibration harness: measured false-alarm rates and power of verispec's tests.

For a registered verifier and an instance, the exact law of "one round, then target
sampling" over ``L`` tokens is enumerated; it equals the target's law for an exact verifier
and differs for a control. Vectorised multinomial sampling of that law (no Python loop per
sample) then measures, over many repetitions:

* the **false-alarm rate** of the audit's test (G-test on cells pooled from the target law)
  on exact verifiers, at rates large enough to observe (1e-2, 1e-3), with a Clopper-Pearson
  interval;
* the **power** of the same planned test on controls, at the audit's own rate.

:func:`sequential_false_alarms` does the same for the SPRT and the Dirichlet e-process under
the null. ``python -m verispec.audits.calibration`` writes ``docs/reference/calibration.md``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verispec.audits.instances import chain_audit_instances, tree_audit_instances
from verispec.core.models import RandomRationalModel
from verispec.exact.criterion import _walk, round_law, target_law
from verispec.report.markdown import table
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.gof import pooled_cells, williams_factor
from verispec.stats.plan import chi_square_sample_size
from verispec.stats.vectorised import law_counts
from verispec.verifiers import registry
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.trees import TreeInstance

__all__ = ["CalibrationRow", "calibrate", "clopper_pearson", "continuation_law", "sequential_false_alarms"]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    from scipy import stats  # deferred: heavy

    a = (1 - level) / 2
    low = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a, k + 1, n - k))
    return low, high


def continuation_law(entry: Any, instance: Any) -> dict[tuple[int, ...], Fraction]:
    """The exact law of ``L`` tokens: one round of ``entry``, then target sampling."""
    law = round_law(entry, instance)
    return {s: f for s, f, _ in _walk(instance, law, instance.gamma + 1) if f}


def _g_pvalues(counts: Any, probs: Any, outside: Any) -> Any:
    """The audit's test, vectorised: G with Williams' correction (see :func:`~verispec.stats.gof.g_test`)."""
    import numpy as np  # deferred: heavy
    from scipy import stats  # deferred: heavy

    n = counts.sum(axis=1, keepdims=True)
    expected = n * probs[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(counts / expected), 0.0)
    g = 2 * terms.sum(axis=1) / williams_factor(probs.size, int(n[0, 0]))
    pvalues = stats.chi2.sf(g, probs.size - 1)
    return np.where(outside > 0, 0.0, pvalues)


@dataclass(frozen=True)
class CalibrationRow:
    verifier: str
    kind: str
    instance: str
    n: int
    alpha: float
    reps: int
    rejections: int
    exact_tv: float

    @property
    def rate(self) -> float:
        return self.rejections / self.reps

    @property
    def interval(self) -> tuple[float, float]:
        return clopper_pearson(self.rejections, self.reps)

    @property
    def within_bound(self) -> bool:
        """Exact verifiers: the interval does not lie above alpha. Controls: always True."""
        return self.kind != "exact" or self.interval[0] <= self.alpha

    def to_json(self) -> dict[str, Any]:
        return {
            "verifier": self.verifier,
            "kind": self.kind,
            "instance": self.instance,
            "n": self.n,
            "alpha": self.alpha,
            "reps": self.reps,
            "rejections": self.rejections,
            "rate": self.rate,
            "interval_95": list(self.interval),
            "exact_tv": self.exact_tv,
        }


def _audit_instance_for(entry: Any) -> tuple[str, Any]:
    """The audit-battery instance on which ``entry`` is farthest from the target."""
    if isinstance(entry, registry.TreeVerifier):
        items = tree_audit_instances(0, law=entry.laws[0])
    else:
        items = chain_audit_instances(0)
    best = max(items, key=lambda item: _exact_tv(entry, item.instance))
    return f"audit battery: {best.name}", best.instance


def _exact_tv(entry: Any, instance: Any) -> float:
    truth = target_law(instance, instance.gamma + 1)
    law = continuation_law(entry, instance)
    return 0.5 * sum(abs(float(law.get(s, 0)) - float(truth.get(s, 0))) for s in set(law) | set(truth))


def _instance_for(entry: Any, seed: int) -> tuple[str, Any]:
    target, draft = RandomRationalModel(3, seed=seed), RandomRationalModel(3, seed=seed + 1)
    config = entry.settings[0]
    if isinstance(entry, registry.TreeVerifier):
        return f"V=3 tree [2, 1] law {entry.laws[0]} {config.describe()}", TreeInstance(
            target, draft, (2, 1), entry.laws[0], config
        )
    return f"V=3 gamma=2 {config.describe()}", ChainInstance(target, draft, 2, config)


def calibrate(
    names: Sequence[str],
    *,
    alpha: float,
    reps: int,
    tv: float = 0.05,
    power: float = 0.99,
    plan_alpha: float | None = None,
    seed: int = 20261202,
    battery: bool = False,
) -> list[CalibrationRow]:
    """Rejection rate of the planned G-test at ``alpha`` over ``reps`` repetitions per verifier.

    The sample size is planned as the audit plans it (``plan_alpha``, default ``alpha``,
    power ``power`` against total variation ``tv``); the test is then run at ``alpha``.
    """
    import numpy as np  # deferred: heavy

    rng = np.random.default_rng(seed)
    rows = []
    for k, name in enumerate(names):
        entry = registry.get(name)
        label, instance = _audit_instance_for(entry) if battery else _instance_for(entry, 7 + 2 * k)
        truth = target_law(instance, instance.gamma + 1)
        law = continuation_law(entry, instance)
        exact_tv = _exact_tv(entry, instance)
        n = 200
        for _ in range(4):
            cells = pooled_cells(truth, n)
            new_n = chi_square_sample_size(
                2 * tv, max(len(cells) - 1, 1), alpha=plan_alpha or alpha, power=power
            )
            if new_n == n:
                break
            n = new_n
        cells = pooled_cells(truth, n)
        index = {s: i for i, cell in enumerate(cells) for s in cell}
        keys, counts = law_counts(law, n, reps, rng)
        cell_counts = np.zeros((reps, len(cells)))
        outside = np.zeros(reps)
        for j, key in enumerate(keys):
            if key in index:
                cell_counts[:, index[key]] += counts[:, j]
            else:
                outside += counts[:, j]
        probs = np.array([sum(float(truth[s]) for s in cell) for cell in cells])
        pvalues = _g_pvalues(cell_counts, probs, outside)
        rows.append(
            CalibrationRow(name, entry.kind, label, n, alpha, reps, int((pvalues <= alpha).sum()), exact_tv)
        )
    return rows


def sequential_false_alarms(
    null: Sequence[float], alternative: Sequence[float], *, alpha: float, reps: int, cap: int, seed: int
) -> dict[str, Any]:
    """Null paths of the SPRT (against ``alternative``) and the Dirichlet(100 p) e-process:
    rejection rates with Clopper-Pearson intervals, and mean stopping times."""
    import numpy as np  # deferred: heavy

    rng = np.random.default_rng(seed)
    p, q = np.asarray(null, float), np.asarray(alternative, float)
    draws = rng.choice(len(p), size=(reps, cap), p=p)
    llr = np.cumsum(np.log(q[draws] / p[draws]), axis=1)
    upper, lower = math.log(0.99 / alpha), math.log(0.01 / (1 - alpha))
    hit_upper = (llr >= upper).argmax(axis=1)
    hit_lower = (llr <= lower).argmax(axis=1)
    up_any, low_any = (llr >= upper).any(axis=1), (llr <= lower).any(axis=1)
    up_time = np.where(up_any, hit_upper, cap)
    low_time = np.where(low_any, hit_lower, cap)
    sprt_reject = int((up_time < low_time).sum())
    sprt_n = float(np.minimum(up_time, low_time).mean() + 1)
    # Dirichlet-multinomial e-process, evaluated after every sample
    a = 100 * p
    counts = np.zeros((reps, len(p)))
    log_e = np.zeros(reps)
    rejected = np.zeros(reps, dtype=bool)
    for t in range(cap):
        x = draws[:, t]
        predictive = (a[x] + counts[np.arange(reps), x]) / (a.sum() + t)
        log_e += np.log(predictive / p[x])
        counts[np.arange(reps), x] += 1
        rejected |= log_e >= math.log(1 / alpha)
    e_reject = int(rejected.sum())
    return {
        "alpha": alpha,
        "reps": reps,
        "cap": cap,
        "sprt_rejections": sprt_reject,
        "sprt_interval_95": clopper_pearson(sprt_reject, reps),
        "sprt_mean_samples_under_null": sprt_n,
        "eprocess_rejections": e_reject,
        "eprocess_interval_95": clopper_pearson(e_reject, reps),
    }


def write_tables(path: str, *, reps: int = 20_000) -> None:  # pragma: no cover - a slow, manual run
    """Run the full calibration and write the Markdown tables (``python -m verispec.audits.calibration``)."""
    exact = registry.names("exact")
    controls = [n for n in registry.names("control") if n not in CALIBRATION_SKIP]
    lines = [
        "# Calibration of verispec's tests (measured)",
        "",
        "Written by `python -m verispec.audits.calibration`. Samples are drawn, vectorised, from the exact",
        "law of one round followed by target sampling (L = gamma + 1 tokens), enumerated by the exact",
        "executor; the test is the audit's G-test on cells pooled from the target law, with the audit's",
        "sample-size plan (power 0.99 against TV >= 0.05).",
        "",
    ]
    for alpha in (1e-2, 1e-3):
        rows = calibrate(exact, alpha=alpha, reps=reps)
        lines += [f"## False alarms on exact verifiers at alpha = {alpha:g} ({reps} repetitions each)", ""]
        lines.append(
            table(
                ["verifier", "instance", "n", "rejections", "rate", "95% interval", "within alpha"],
                [
                    [
                        r.verifier,
                        r.instance,
                        r.n,
                        r.rejections,
                        f"{r.rate:.4f}",
                        f"[{r.interval[0]:.4f}, {r.interval[1]:.4f}]",
                        "yes" if r.within_bound else "**no**",
                    ]
                    for r in rows
                ],
            )
        )
        lines.append("")
    per = SUITE_ALPHA / 8
    rows = calibrate(controls, alpha=per, reps=2000, battery=True)
    lines += [
        f"## Power on controls at the audit's per-instance alpha = {per:g} (2000 repetitions each)",
        "",
        "Each control on the audit-battery instance where it is farthest from the target; the planned",
        "power (0.99) applies when the exact TV is at least 0.05.",
        "",
    ]
    lines.append(
        table(
            ["control", "instance", "exact TV", "n", "rejections", "power"],
            [[r.verifier, r.instance, f"{r.exact_tv:.4f}", r.n, r.rejections, f"{r.rate:.4f}"] for r in rows],
        )
    )
    lines.append("")
    seq = sequential_false_alarms([0.5, 0.3, 0.2], [0.4, 0.32, 0.28], alpha=1e-2, reps=reps, cap=3000, seed=5)
    lines += ["## Sequential designs under the null (p = (0.5, 0.3, 0.2), alpha = 0.01, cap 3000)", ""]
    lines.append(
        table(
            ["design", "rejections", "95% interval", "note"],
            [
                [
                    "SPRT against q = (0.4, 0.32, 0.28)",
                    seq["sprt_rejections"],
                    f"[{seq['sprt_interval_95'][0]:.4f}, {seq['sprt_interval_95'][1]:.4f}]",
                    f"mean samples {seq['sprt_mean_samples_under_null']:.0f}",
                ],
                [
                    "Dirichlet(100 p) e-process",
                    seq["eprocess_rejections"],
                    f"[{seq['eprocess_interval_95'][0]:.4f}, {seq['eprocess_interval_95'][1]:.4f}]",
                    "monitored after every sample",
                ],
            ],
        )
    )
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("\n".join(lines) + "\n")


#: Controls whose law equals the target's (caught by other checks) or that need drafter access.
CALIBRATION_SKIP = ("missing-bonus",)

if __name__ == "__main__":  # pragma: no cover
    write_tables(sys.argv[1] if len(sys.argv) > 1 else "docs/reference/calibration.md")
