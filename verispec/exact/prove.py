"""Prove the exact verifiers and refute the controls: the engine behind ``verispec prove``.

For an **exact** verifier the evidence is, in order:

1. round exactness and round accounting on ``instances`` seeded random instances (random
   rational models with zeros, prefix-dependent, over the verifier's sampling settings);
2. the law of the first ``multi_round_tokens`` committed tokens over repeated rounds on
   ``multi_round_instances`` further instances;
3. an adversarial, shrinking search over ``search_examples`` hypothesis examples;
4. the symbolic theorems registered for it (sympy, z3), which extend the claim to every
   vocabulary size where they exist.

The verdict is ``proved`` only if everything passes. Its ``proof`` field says ``symbolic``
when theorems cover every vocabulary size and ``bounded`` when the evidence is the finite
enumeration alone. A theorem that cannot be proved makes the verdict ``unknown``.

A **control** is refuted by a shrunk exact counterexample; if the search finds none, the
verdict is ``unknown`` (and the run fails: a control that is not caught is a defect).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from dataclasses import dataclass, field, replace
from typing import Any

from verispec.errors import NonConformance, UsageError
from verispec.exact.criterion import check_multi_round, check_round
from verispec.exact.search import (
    counterexample_from,
    find_counterexample,
    random_instances,
    random_tree_instances,
)
from verispec.exact.symbolic import TheoremResult, theorems_for
from verispec.isolation import process_pool
from verispec.verdicts import RunVerdict, VerdictKind
from verispec.verifiers import registry
from verispec.verifiers.trees import LAWS

__all__ = ["ProveBudget", "ProveResult", "law_matrix", "prove", "prove_one", "prove_verdict"]


@dataclass(frozen=True)
class ProveBudget:
    """How much evidence to gather per verifier."""

    instances: int = 2000
    multi_round_instances: int = 1000
    multi_round_tokens: int = 5
    search_examples: int = 300
    control_search_examples: int = 3000
    tree_instances: int = 400
    tree_multi_round_instances: int = 100
    matrix_instances: int = 40
    seed: int = 0

    def __post_init__(self) -> None:
        for name in (
            "instances",
            "multi_round_instances",
            "search_examples",
            "control_search_examples",
            "tree_instances",
            "tree_multi_round_instances",
            "matrix_instances",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{name}={value!r} must be a non-negative integer")
        if not isinstance(self.multi_round_tokens, int) or self.multi_round_tokens < 1:
            raise UsageError(f"multi_round_tokens={self.multi_round_tokens!r} must be a positive integer")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise UsageError(f"seed={self.seed!r} must be a non-negative integer")

    @classmethod
    def quick(cls, seed: int = 0) -> ProveBudget:
        """A smoke-test budget (seconds, not minutes)."""
        return cls(
            instances=150,
            multi_round_instances=20,
            multi_round_tokens=3,
            search_examples=30,
            control_search_examples=3000,
            tree_instances=40,
            tree_multi_round_instances=10,
            matrix_instances=12,
            seed=seed,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "instances": self.instances,
            "multi_round_instances": self.multi_round_instances,
            "multi_round_tokens": self.multi_round_tokens,
            "search_examples": self.search_examples,
            "control_search_examples": self.control_search_examples,
            "tree_instances": self.tree_instances,
            "tree_multi_round_instances": self.tree_multi_round_instances,
            "matrix_instances": self.matrix_instances,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class ProveResult:
    """The verdict on one registered verifier, with its evidence. Plain data, picklable."""

    name: str
    kind: str
    verdict: VerdictKind
    instances: int
    seconds: float
    summary: str
    source: str
    proof: str | None = None
    scope: str | None = None
    reason: str | None = None
    multi_round_instances: int = 0
    counterexample: dict[str, Any] | None = None
    counterexample_text: str | None = None
    tv_distance: str | None = None
    theorems: list[dict[str, Any]] = field(default_factory=list)
    family: str = "chain"
    laws: dict[str, dict[str, Any]] | None = None

    @property
    def expected_verdict(self) -> VerdictKind:
        return VerdictKind.PROVED if self.kind == "exact" else VerdictKind.REFUTED

    @property
    def ok(self) -> bool:
        """An exact verifier proved, or a control refuted."""
        return self.verdict == self.expected_verdict

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "kind": self.kind,
            "verdict": self.verdict,
            "ok": self.ok,
            "instances": self.instances,
            "multi_round_instances": self.multi_round_instances,
            "seconds": round(self.seconds, 3),
            "summary": self.summary,
            "source": self.source,
            "family": self.family,
        }
        if self.laws is not None:
            out["laws"] = self.laws
        if self.proof is not None:
            out["proof"] = self.proof
        if self.scope is not None:
            out["scope"] = self.scope
        if self.reason is not None:
            out["reason"] = self.reason
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
            out["counterexample_text"] = self.counterexample_text
        if self.tv_distance is not None:
            out["tv_distance"] = self.tv_distance
        if self.theorems:
            out["theorems"] = self.theorems
        return out


@dataclass(frozen=True)
class _Campaign:
    """One candidate law's worth of evidence: round instances, multi-round instances, search."""

    label: str
    instances: Iterable[Any]
    multi_round: Iterable[Any]
    law: str | None
    describe: str


def _campaigns(entry: registry.Verifier, budget: ProveBudget) -> list[_Campaign]:
    settings = "; ".join(s.describe() for s in entry.settings)
    if isinstance(entry, registry.TreeVerifier):
        return [
            _Campaign(
                law,
                random_tree_instances(law, entry.settings, budget.tree_instances, seed=budget.seed),
                random_tree_instances(
                    law,
                    entry.settings,
                    budget.tree_multi_round_instances,
                    seed=budget.seed + 1,
                    shapes=((2,), (3,), (1, 1), (1, 2)),
                ),
                law,
                f"law {law}: V 2..3, shapes [2] [3] [1,2] [2,1] [1,1,1] [2,2]",
            )
            for law in entry.laws
        ]
    return [
        _Campaign(
            "chain",
            random_instances(entry.settings, budget.instances, seed=budget.seed),
            random_instances(
                entry.settings,
                budget.multi_round_instances,
                seed=budget.seed + 1,
                vocab_sizes=(2, 3),
                gammas=(1, 2, 3),
            ),
            None,
            f"V 2..4, gamma 1..3, settings: {settings}",
        )
    ]


def _prove_exact(entry: registry.Verifier, budget: ProveBudget) -> ProveResult:
    start = time.perf_counter()
    base = ProveResult(
        entry.name, entry.kind, VerdictKind.UNKNOWN, 0, 0.0, entry.summary, entry.source, family=entry.family
    )
    checked = multi = 0

    def done(**changes: Any) -> ProveResult:
        return replace(
            base,
            instances=checked,
            multi_round_instances=multi,
            seconds=time.perf_counter() - start,
            **changes,
        )

    def refuted(note: str, cx: Any) -> ProveResult:
        return done(
            verdict=VerdictKind.REFUTED,
            reason=note,
            counterexample=cx.to_json(),
            counterexample_text=cx.format(),
            tv_distance=str(cx.tv_distance),
        )

    scopes = []
    for campaign in _campaigns(entry, budget):
        here = 0
        for instance in campaign.instances:
            try:
                check = check_round(entry, instance)
            except NonConformance as exc:
                checked += 1
                return done(
                    verdict=VerdictKind.REFUTED,
                    reason=f"the verifier broke the round contract on {instance.describe()}: {exc}",
                )
            checked += 1
            here += 1
            if not check.decided:
                return done(
                    verdict=VerdictKind.UNKNOWN,
                    reason=f"certified arithmetic could not decide {instance.describe()}",
                )
            if not check.exact:
                what = "round law" if not check.law_exact else "round accounting"
                shrunk = find_counterexample(
                    entry, max_examples=max(budget.search_examples, 200), law=campaign.law
                )
                return refuted(
                    f"{what} differs from the target's", shrunk or counterexample_from(entry, check)
                )
        multi_here = 0
        for instance in campaign.multi_round:
            mr = check_multi_round(entry, instance, budget.multi_round_tokens)
            multi += 1
            multi_here += 1
            if not mr.exact:
                worst = mr.discrepancies[0] if mr.discrepancies else None
                return done(
                    verdict=VerdictKind.REFUTED,
                    reason=(
                        f"the law of the first {budget.multi_round_tokens} tokens differs from the "
                        f"target's (TV {float(mr.tv_distance):.6g}) on {instance.describe()}"
                        + (
                            f"; e.g. {list(worst.sequence)}: {worst.output} vs {worst.target}"
                            if worst
                            else ""
                        )
                    ),
                    tv_distance=str(mr.tv_distance),
                )
        if budget.search_examples:
            cx = find_counterexample(entry, max_examples=budget.search_examples, law=campaign.law)
            if cx is not None:
                return refuted(f"adversarial search: {cx.kind} differs", cx)
        scopes.append(
            f"{here} round instances ({campaign.describe}), the first {budget.multi_round_tokens} "
            f"tokens on {multi_here} multi-round instances, {budget.search_examples} adversarial examples"
        )

    theorems: list[TheoremResult] = [t() for t in theorems_for(entry.name)]
    theorem_json = [t.to_json() for t in theorems]
    if any(not t.verdict.passed for t in theorems):
        failed = [t.name for t in theorems if not t.verdict.passed]
        return done(
            verdict=VerdictKind.UNKNOWN,
            reason=f"symbolic theorem(s) not proved: {', '.join(failed)}",
            theorems=theorem_json,
        )
    scope = "round exactness and accounting: " + "; ".join(scopes)
    if theorems:
        scope += "; symbolic: " + "; ".join(f"{t.name} [{t.prover}]" for t in theorems)
    matrix = law_matrix(entry, budget) if isinstance(entry, registry.TreeVerifier) else None
    return done(
        verdict=VerdictKind.PROVED,
        proof="symbolic" if any(t.general for t in theorems) else "bounded",
        scope=scope,
        theorems=theorem_json,
        laws=matrix,
    )


def law_matrix(entry: registry.TreeVerifier, budget: ProveBudget) -> dict[str, dict[str, Any]]:
    """Where a tree verifier is exact: each candidate law checked on its own sweep.

    Status is ``exact`` (no failure on the sweep), ``not exact`` (with the largest TV found
    and the instance) or ``invalid`` (the verifier cannot even run: the declared law breaks
    its contract, e.g. a zero-probability draft under the ``q`` it assumes).
    """
    out: dict[str, dict[str, Any]] = {}
    for law in LAWS:
        status, worst_tv, where, count, note = "exact", None, None, 0, None
        for instance in random_tree_instances(
            law, entry.settings, budget.matrix_instances, seed=budget.seed + 7
        ):
            count += 1
            try:
                check = check_round(entry, instance)
            except NonConformance as exc:
                status, note, worst_tv, where = "invalid", str(exc), None, instance.describe()
                break
            if not check.law_exact and check.decided:
                status = "not exact"
                tv = float(check.tv_distance)
                if worst_tv is None or tv > worst_tv:
                    worst_tv, where = tv, instance.describe()
        out[law] = {
            "status": status,
            "meant_for": law in entry.laws,
            "instances": count,
            "max_tv": worst_tv,
            "worst_instance": where,
            **({"reason": note} if note else {}),
        }
    return out


def _refute_control(entry: registry.Verifier, budget: ProveBudget) -> ProveResult:
    start = time.perf_counter()
    cx = find_counterexample(entry, max_examples=budget.control_search_examples)
    base = ProveResult(
        entry.name, entry.kind, VerdictKind.UNKNOWN, 0, 0.0, entry.summary, entry.source, family=entry.family
    )
    if cx is None:
        return replace(
            base,
            instances=budget.control_search_examples,
            reason=f"no counterexample in {budget.control_search_examples} examples: the control escaped",
            seconds=time.perf_counter() - start,
        )
    reason = (
        "the round's law differs from the target's"
        if cx.kind == "law"
        else "the law is kept but the round commits fewer tokens than the tail-sum identity predicts"
    )
    return replace(
        base,
        verdict=VerdictKind.REFUTED,
        instances=1,
        reason=reason,
        counterexample=cx.to_json(),
        counterexample_text=cx.format(),
        tv_distance=str(cx.tv_distance),
        seconds=time.perf_counter() - start,
    )


def prove_one(name: str, budget: ProveBudget | None = None) -> ProveResult:
    """Prove (exact verifier) or refute (control) the registered verifier ``name``."""
    entry = registry.get(name)
    budget = budget or ProveBudget()
    if entry.kind == "exact":
        return _prove_exact(entry, budget)
    return _refute_control(entry, budget)


def _prove_one_job(args: tuple[str, ProveBudget]) -> ProveResult:
    return prove_one(*args)


def prove(
    names: Iterable[str] | None = None,
    budget: ProveBudget | None = None,
    *,
    jobs: int = 1,
    on_start: Callable[[str], None] | None = None,
    on_result: Callable[[ProveResult], None] | None = None,
) -> list[ProveResult]:
    """Prove or refute each named verifier (all registered ones by default).

    With ``jobs > 1`` verifiers are checked in parallel processes, which end with this one
    (:func:`verispec.isolation.process_pool`). ``on_result`` is called
    as each result arrives, so a caller can record it before the next one finishes.
    Results are returned in the order of ``names``.
    """
    selected = list(names) if names else registry.names()
    for name in selected:
        registry.get(name)  # unknown names fail here, before any work
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"jobs={jobs!r} must be a positive integer")
    budget = budget or ProveBudget()
    results: dict[str, ProveResult] = {}
    if jobs == 1 or len(selected) == 1:
        for name in selected:
            if on_start:
                on_start(name)
            results[name] = prove_one(name, budget)
            if on_result:
                on_result(results[name])
    else:
        with process_pool(jobs) as pool:  # its processes end with this one, even killed
            futures = {pool.submit(_prove_one_job, (name, budget)): name for name in selected}
            if on_start:
                for name in selected:
                    on_start(name)
            for future in as_completed(futures):
                result = future.result()
                results[futures[future]] = result
                if on_result:
                    on_result(result)
    return [results[name] for name in selected]


def prove_verdict(results: Iterable[ProveResult]) -> RunVerdict:
    """Fail when an exact verifier is refuted; inconclusive when anything else is not as
    expected (a control the search did not refute, a theorem the prover could not settle)."""
    results = list(results)
    if any(r.verdict == VerdictKind.REFUTED and r.kind == "exact" for r in results):
        return RunVerdict.FAIL
    if any(not r.ok for r in results):
        return RunVerdict.INCONCLUSIVE
    return RunVerdict.PASS
