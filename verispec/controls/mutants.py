"""The planted bugs of every layer, gathered as one catalog of :class:`Mutant` records.

Each bug is declared where the thing it breaks is written:

* **verifier** bugs are the control verifiers (``@chain_verifier(kind="control", ...)``,
  ``@tree_verifier(kind="control", ...)``); the exact checker must refute them;
* **engine** bugs are declared in the engine adapters, beside the seam each replaces
  (:func:`verispec.engines.bugs.planted_bug`; the reference engine's in
  :mod:`verispec.engines.reference.hooks`), and read through the engine registry; the
  conformance checks their records name must catch them, each through its named evidence;
* **index** bugs are the refuted conventions of the SMT catalog (:mod:`verispec.smt.catalog`);
  z3 must refute them.

:func:`catalog` gathers the three layers. The controls runner, ``verispec controls list``,
``Check.mutants``, the docs' catalog and the tests all read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from verispec._compat import deprecated_name
from verispec.conformance.api_server import through_api
from verispec.conformance.checks import get as get_check
from verispec.engines import registry as engines
from verispec.engines.bugs import REFERENCE_ENGINES, PlantedBug
from verispec.engines.openai_api import CAPABILITIES as API_CAPABILITIES
from verispec.engines.reference.hooks import planted_hooks
from verispec.errors import UsageError, unknown_name
from verispec.smt.catalog import CATALOG
from verispec.verdicts import Evidence, VerdictKind
from verispec.verifiers import registry as verifiers

__all__ = ["LAYERS", "Layer", "Mutant", "api_controls", "catalog", "engine_mutants", "find", "for_engine"]

Layer = Literal["verifier", "engine", "index"]
LAYERS: tuple[Layer, ...] = ("verifier", "engine", "index")


@dataclass(frozen=True)
class Mutant:
    """One planted bug of any layer (see the module docstring)."""

    subject: str  # the bug's name: the verifier, engine mutation or SMT convention entry
    layer: Layer
    mechanism: str
    source: str
    engine: str | None = None  # engine layer: the built-in engine it is planted in
    caught_by: tuple[str, ...] = ()  # engine layer: the checks that must catch it
    #: engine layer: the evidence each check of ``caught_by`` must fail through (same order)
    evidence: tuple[Evidence, ...] = ()
    hook: str | None = None  # engine layer: the seam (or patched function) it replaces
    #: engine layer: the other seams it replaces, each no bug alone
    alongside: tuple[str, ...] = ()
    #: engine layer: fixes of the engine's own bugs applied with the mutant
    fixes: tuple[str, ...] = ()
    #: engine layer: why the quick sizes cannot see the bug; ``None``: caught at quick sizes
    quick_miss: str | None = None

    @classmethod
    def of_bug(cls, bug: PlantedBug) -> Mutant:
        """The catalog record of an engine's planted bug."""
        return cls(
            bug.name,
            "engine",
            bug.mechanism,
            bug.source,
            bug.engine,
            bug.caught_by,
            bug.evidence,
            bug.seam,
            tuple(seam for seam, _ in bug.alongside),
            bug.fixes,
            bug.quick_miss,
        )

    @property
    def name(self) -> str:
        """Unique across layers: ``verifier:<name>``, ``engine:<bug>`` (the reference engines),
        ``engine:<engine>/<bug>``, ``index:<entry>``."""
        if self.layer == "engine":
            return PlantedBug.control_name(self.subject, str(self.engine))
        return f"{self.layer}:{self.subject}"

    def evidence_for(self, check: str) -> Evidence:
        """The evidence ``check`` must fail through to have caught this engine bug."""
        return dict(zip(self.caught_by, self.evidence, strict=True))[check]

    @property
    def reproduce(self) -> str:
        if self.layer == "verifier":
            return f"verispec prove {self.subject} --explain"
        if self.layer == "index":
            return f"verispec smt {self.subject}"
        checks = "".join(f" --check {c}" for c in self.caught_by)
        fixes = "".join(f" --fix {f}" for f in self.fixes)
        run = f"verispec conform --engine {self.engine} --mutation {self.subject}{fixes}"
        return f"{run} --quick --design sequential{checks}"

    @property
    def options(self) -> dict[str, Any]:
        """The engine options a run of this engine-layer control takes."""
        return {"mutations": [self.subject], **({"fixes": list(self.fixes)} if self.fixes else {})}

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "subject": self.subject,
            "mechanism": self.mechanism,
            "source": self.source,
            "engine": self.engine,
            "expected": list(self.caught_by),
            "evidence": dict(zip(self.caught_by, self.evidence, strict=True)),
            "hook": self.hook,
            "alongside": list(self.alongside),
            "quick_miss": self.quick_miss,
            "reproduce": self.reproduce,
        }


def engine_mutants(engine: str | None = None) -> list[Mutant]:
    """The engine layer's records, all of them or those of one built-in engine."""
    return [Mutant.of_bug(b) for b in engines.bugs(engine)]


#: A server batches the requests that arrive together, so which rows share a batch is not
#: the client's to choose: a check of batch composition does not count as seen through the API.
ARRIVAL_DEPENDENT = ("ragged-batch",)
#: Seams whose bugs need a request setting that ``openai:URL`` does not send.
SEAMS_NOT_SENT = {"penalise": "its bug is in the penalties, which `openai:URL` does not send"}


def api_controls() -> list[tuple[Mutant, list[str], str]]:
    """Each planted bug of the reference engines, served by ``verispec serve-engine`` and
    tested through ``--engine openai:URL``: the checks of its record that a black box runs,
    and, where there are none, why."""
    out = []
    for m in engine_mutants():
        if m.engine not in REFERENCE_ENGINES:
            continue
        seen = [c for c in through_api(m.caught_by) if c not in ARRIVAL_DEPENDENT]
        why = ""
        if m.hook in SEAMS_NOT_SENT:
            seen, why = [], SEAMS_NOT_SENT[m.hook]
        elif not seen:
            lacking = sorted({need for c in m.caught_by for need in get_check(c).missing(API_CAPABILITIES)})
            why = (
                f"needs {', '.join(lacking)}, which `openai:URL` does not declare"
                if lacking
                else "its checks test batch composition, which the server decides by arrival"
            )
        out.append((m, seen, why))
    return out


def _verifier_mutants() -> list[Mutant]:
    return [Mutant(v.name, "verifier", v.summary, v.source) for v in verifiers.verifiers("control")]


def _index_mutants() -> list[Mutant]:
    return [
        Mutant(e.name, "index", e.convention, e.source) for e in CATALOG if e.expected == VerdictKind.REFUTED
    ]


def catalog(layers: Sequence[Layer] = LAYERS) -> list[Mutant]:
    """Every planted bug of the given layers, verifier layer first."""
    for layer in layers:
        if layer not in LAYERS:
            raise UsageError(f"layer={layer!r} is not one of {', '.join(LAYERS)}")
    found: list[Mutant] = []
    if "verifier" in layers:
        found += _verifier_mutants()
    if "engine" in layers:
        found += engine_mutants()
    if "index" in layers:
        found += _index_mutants()
    return found


def for_engine(mutants: list[Mutant], engine: str | None) -> list[Mutant]:
    """``mutants`` with only the engine-layer ones of ``engine`` (all of them for ``None``)."""
    if engine is None:
        return mutants
    engines_with = sorted({m.engine or "" for m in mutants if m.layer == "engine"})
    if engine not in engines_with:
        raise UsageError(f"engine={engine!r} has no controls; engine controls exist for {engines_with}")
    return [m for m in mutants if m.layer != "engine" or m.engine == engine]


def find(name: str) -> Mutant:
    """A planted bug by its full name (``engine:crop-plus-one``) or by its subject alone."""
    mutants = catalog()
    by_name = {m.name: m for m in mutants}
    if name in by_name:
        return by_name[name]
    matches = [m for m in mutants if m.subject == name]
    if len(matches) == 1:
        return matches[0]
    raise unknown_name("control", name, by_name)


def _plant(engine: str, mutations: Sequence[str]) -> Any:
    """Deprecated :func:`plant`: the reference engines' hooks with the bugs planted, or another
    engine's patches applied in this process."""
    bugs = engines.planted(engine, mutations)
    if engine in REFERENCE_ENGINES:
        return planted_hooks(bugs)
    for bug in bugs:
        bug.replacement()
    return None


def _quick_blind_spots(checks: Sequence[str]) -> list[Mutant]:
    return [Mutant.of_bug(b) for b in engines.quick_blind_spots(checks)]


def __getattr__(name: str) -> Any:
    """Names of the release before the bugs moved beside their seams, kept for one release."""
    moved: dict[str, tuple[str, Callable[[], Any]]] = {
        "ENGINE_MUTANTS": ("verispec.controls.mutants.engine_mutants()", lambda: tuple(engine_mutants())),
        "plant": ("verispec.engines.registry.planted (and the engine's factory)", lambda: _plant),
        "quick_blind_spots": ("verispec.engines.registry.quick_blind_spots", lambda: _quick_blind_spots),
    }
    if name in moved:
        new, value = moved[name]
        deprecated_name(f"verispec.controls.mutants.{name}", new)
        return value()
    raise AttributeError(f"module 'verispec.controls.mutants' has no attribute {name!r}")
