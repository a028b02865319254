"""The registry of conformance checks: each declared by :func:`check` on its own function.

A check is a function of a :class:`~verispec.conformance.checks.context.Context` returning a
:class:`CheckResult`, registered with keyword fields::

    @check(
        name="determinism",
        description="the same request and seed give the same tokens",
        needs=("seeded",),
        effect=Effect("any difference"),
    )
    def determinism(ctx: Context) -> CheckResult: ...

``needs`` are engine capabilities (a check the engine cannot run is skipped with the
reason); a statistical check declares its effect size with a number (the quick design
multiplies it by :data:`QUICK_EFFECT_FACTOR`), draws its false-alarm rate from the run's
budget and plans its samples for :data:`POWER`. The planted bugs a check must catch are
declared once, on the bugs' records (:func:`verispec.engines.bugs.planted_bug`, in the engine
adapters); :attr:`Check.mutants` reads them back through the engine registry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from verispec.engines import registry as engines
from verispec.engines.protocol import CAPABILITIES
from verispec.errors import UsageError, unknown_name
from verispec.verdicts import Evidence, Failure, Status

if TYPE_CHECKING:
    from verispec.conformance.checks.context import Context

__all__ = [
    "FAMILIES",
    "POWER",
    "QUICK_EFFECT_FACTOR",
    "Check",
    "CheckResult",
    "Effect",
    "check",
    "checks",
    "get",
    "names",
    "select",
]

#: Power of every statistical check against its declared effect.
POWER = 0.99
#: The quick (smoke) design plans every statistical check for an effect this many times larger.
QUICK_EFFECT_FACTOR = 2.0
#: The modules that declare checks, one per family, in the order the checks run and are listed.
FAMILIES = (
    "invariance",
    "sampling_law",
    "first_token",
    "cache_rollback",
    "length_ids",
    "accounting",
)


@dataclass(frozen=True)
class Effect:
    """The smallest departure a check must detect. ``measure`` names it; a statistical check
    gives its ``size`` at full sample sizes and ``measure`` holds ``{}`` where it goes."""

    measure: str
    size: float | None = None

    def at(self, quick: bool) -> float:
        """The planned effect size of this run."""
        if self.size is None:
            raise UsageError(f"effect {self.measure!r} has no size: the check is not statistical")
        return self.size * (QUICK_EFFECT_FACTOR if quick else 1.0)

    def describe(self, quick: bool | None = None) -> str:
        """``KS distance 0.1 on the PIT law``; with ``quick=None`` both sizes."""
        if self.size is None:
            return self.measure
        if quick is None:
            return self.measure.format(f"{self.at(False):g} (quick: {self.at(True):g})")
        return self.measure.format(f"{self.at(quick):g}")


@dataclass
class CheckResult:
    name: str
    status: Status
    reason: str
    alpha: float | None = None
    power: float | None = None
    effect: str | None = None
    pvalue: float | None = None
    samples: int = 0
    generate_calls: int = 0
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    #: why a failing check failed: a detection, bad output, or the engine breaking
    failure: Failure | None = None
    #: what a check that failed through the engine's output saw (a statistic, an impossible
    #: token, a mismatch, a count, bad output); ``None`` when it passed or the engine broke
    evidence: Evidence | None = None
    #: the expected-failures manifest's reason, for a listed failure (status ``xfail``)
    expected: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.name,
            "status": self.status,
            "reason": self.reason,
            "failure": self.failure,
            "evidence": self.evidence,
            "expected_failure": self.expected,
            "alpha": self.alpha,
            "power": self.power,
            "effect": self.effect,
            "pvalue": self.pvalue,
            "samples": self.samples,
            "generate_calls": self.generate_calls,
            "seconds": round(self.seconds, 2),
            "details": self.details,
        }


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    needs: frozenset[str]
    statistical: bool
    effect: Effect
    run: Callable[[Context], CheckResult]
    family: str
    #: capabilities of which the check needs one (it is skipped, saying so, without any)
    needs_one_of: frozenset[str] = frozenset()

    def missing(self, capabilities: frozenset[str]) -> list[str]:
        """What an engine with ``capabilities`` lacks to run the check (empty: it can)."""
        out = sorted(self.needs - capabilities)
        if self.needs_one_of and not self.needs_one_of & capabilities:
            out.append(" or ".join(sorted(self.needs_one_of)))
        return out

    @property
    def mutants(self) -> tuple[str, ...]:
        """The planted bugs (their controls' names) whose records say this check must catch them."""
        return tuple(b.control for b in engines.bugs() if self.name in b.caught_by)


_CHECKS: dict[str, Check] = {}


def check(
    *,
    name: str,
    description: str,
    effect: Effect,
    needs: Sequence[str] = (),
    needs_one_of: Sequence[str] = (),
    statistical: bool = False,
) -> Callable[[Callable[[Context], CheckResult]], Callable[[Context], CheckResult]]:
    """Register the decorated function as the conformance check ``name``."""
    unknown = sorted((set(needs) | set(needs_one_of)) - set(CAPABILITIES))
    if unknown:
        raise UsageError(
            f"check {name!r} needs {unknown}, not among the capabilities {', '.join(CAPABILITIES)}"
        )
    if statistical and effect.size is None:
        raise UsageError(f"check {name!r} is statistical but its effect {effect.measure!r} has no size")

    def register(fn: Callable[[Context], CheckResult]) -> Callable[[Context], CheckResult]:
        if name in _CHECKS:
            raise UsageError(f"check={name!r} is already registered")
        family = fn.__module__.rsplit(".", 1)[-1]
        _CHECKS[name] = Check(
            name, description, frozenset(needs), statistical, effect, fn, family, frozenset(needs_one_of)
        )
        return fn

    return register


def _load() -> None:
    for family in FAMILIES:
        importlib.import_module(f"verispec.conformance.checks.{family}")


def checks() -> list[Check]:
    """Every registered check, family by family in :data:`FAMILIES` order."""
    _load()
    order = {family: i for i, family in enumerate(FAMILIES)}
    return sorted(_CHECKS.values(), key=lambda c: order[c.family])


def names() -> list[str]:
    return [c.name for c in checks()]


def get(name: str) -> Check:
    _load()
    try:
        return _CHECKS[name]
    except KeyError:
        raise unknown_name("check", name, _CHECKS) from None


def select(wanted: Sequence[str] | None) -> list[Check]:
    """The named checks in the order given (every check for ``None`` or an empty list)."""
    if not wanted:
        return checks()
    return [get(n) for n in wanted]
