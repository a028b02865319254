"""Black-box audits: is a third-party chain or tree verifier exact?

``verispec audit --chain module:function`` (or :func:`audit` from Python) builds the audit
battery (:mod:`verispec.audits.instances`) and, for each instance, the exact law of ``L``
tokens under the target; samples the black box (in a worker process with a time limit, or
in-process for a trusted callable), checking every returned block; and tests each instance's
samples against the exact law. Three modes, a module each:

* the budgeted design (:mod:`verispec.audits.budgeted`, the command's default, 60 s): each
  instance sampled for its share of a time or sample budget, an e-process after each chunk
  and a G-test at the end, and the total variation the samples drawn resolve;
* the planned design (:mod:`verispec.audits.planned`, :func:`audit`'s default, ``--planned``
  on the command line): each instance sampled to the size that detects a total variation of
  ``tv`` with power ``power``;
* the boundary mode (:mod:`verispec.audits.boundary_mode`): the verifier's uniforms pinned at
  the edges of their range, and any emitted token of target probability 0 reported.

The two sampling designs share the sampling loop (:mod:`verispec.audits.sampling`) and the
result (:mod:`verispec.audits.results`): per instance, the p-value, a total-variation estimate
with a bootstrap interval, and errors; the verdict is ``fail`` (non-conformance) if any
instance rejects or breaks the contract, and the command that reproduces the run. Nothing
measured is lost: each instance's result is recorded as soon as it arrives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verispec.audits.boundary_mode import BoundaryResult, boundary_audit
from verispec.audits.budgeted import SamplingBudget, budgeted_audit
from verispec.audits.instances import AuditInstance, battery
from verispec.audits.planned import plan_instance, planned_audit
from verispec.audits.results import AuditResult, InstanceResult
from verispec.audits.sampling import WORKER_THREADS, check_isolation, target_name
from verispec.errors import UsageError
from verispec.stats.constants import SUITE_ALPHA
from verispec.stats.plan import check_rate

__all__ = ["AuditResult", "BoundaryResult", "InstanceResult", "audit", "boundary_audit", "plan_instance"]


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
    budget: SamplingBudget | None = None,
    workers: int | None = None,
    threads: int | None = WORKER_THREADS,
    python: str | None = None,
    on_progress: Callable[[str], None] | None = None,
    drafts: str = "given",
    vocab: int | None = None,
    pairs: int | None = None,
) -> AuditResult:
    """Audit ``function`` (``"module:function"``, run in a worker process, or a callable, run here).

    ``kind`` is ``"chain"`` or ``"tree"``; ``law`` is the candidate law of the tree battery.
    Without ``budget``, the planned design: each instance sampled to the size that detects a
    total variation of ``tv`` with power ``power``, the same samples on every machine. With
    ``budget`` (a :class:`~verispec.audits.budgeted.SamplingBudget`) each instance is sampled
    for its share of it instead, and reports its resolution; ``tv`` is then unused, and
    ``workers`` worker processes (default: one per CPU) sample instances at once. A worker
    process runs ``threads`` threads (``None``: the libraries' defaults) under the interpreter
    ``python`` (default: this one). ``timeout_s`` limits each instance (each chunk, in a
    budgeted audit): the samples drawn before it are kept and tested, and an instance it cut
    short leaves the audit inconclusive unless something is rejected. ``on_progress``
    receives a line after each chunk of samples, at most every 2 s per instance.
    ``drafts="self"`` audits a chain black box that drafts for itself,
    ``speculate(model, rng) -> block`` (:class:`~verispec.audits.rounds.SelfDraftRounds`).
    ``vocab`` and ``pairs`` set the battery's vocabulary and its number of extra random model
    pairs (default: the battery's own, 4 and 0 for chains, 3 and 2 for trees).
    """
    check_rate("alpha", alpha)
    check_rate("power", power)
    if not 0 < tv < 1:
        raise UsageError(f"tv={tv!r} must be in (0, 1)")
    name = target_name(function, seed)
    isolation = check_isolation(threads, python, drafts, kind)
    items = instances or battery(kind, seed, law, drafts, vocab, pairs)
    if budget is not None:
        return budgeted_audit(
            function,
            name,
            kind,
            items,
            budget,
            alpha=alpha,
            power=power,
            seed=seed,
            timeout_s=timeout_s,
            law=law,
            isolation=isolation,
            workers=workers,
            vocab=vocab,
            pairs=pairs,
            on_instance=on_instance,
            on_progress=on_progress,
        )
    return planned_audit(
        function,
        name,
        kind,
        items,
        alpha=alpha,
        power=power,
        tv=tv,
        seed=seed,
        timeout_s=timeout_s,
        law=law,
        isolation=isolation,
        vocab=vocab,
        pairs=pairs,
        on_instance=on_instance,
        on_progress=on_progress,
    )
