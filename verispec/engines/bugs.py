"""Planted bugs: each known bug a built-in engine can run with, declared beside the seam it replaces.

A planted bug (``verispec conform --engine NAME --mutation BUG``) is a known bug, most of
them real bugs of public engines, that the negative controls run to show that the checks
catch it. An adapter declares its bugs in its own module, with :func:`planted_bug` on the
replacement::

    @planted_bug(
        "crop-plus-one",
        engine="reference",
        seam="crop",
        mechanism="target cache cropped to L + accepted + 1",
        source="the crop rule, docs/explanation/index-conventions.md",
        caught_by={"greedy-equivalence": Evidence.MISMATCH},
    )
    def _crop_plus_one(starts, kept, lengths): ...

``seam`` names what the replacement replaces: a field of the reference engine's
:class:`~verispec.engines.reference.Hooks`, or, for an engine verispec does not own, the
dotted path of the function it patches (the replacement is then the patch, called in the
engine's own process). ``caught_by`` maps each check that must catch the bug to the
:class:`~verispec.verdicts.Evidence` it must fail through: a check that fails for another
reason (the engine crashing, say) has not caught it.

The engine registry (:func:`verispec.engines.registry.bugs`) loads the adapter modules and
hands these records to the controls layer, which runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from verispec.errors import UsageError
from verispec.verdicts import Evidence

__all__ = ["AUDIT_ARTICLE", "CONVENTIONS", "REFERENCE_ENGINES", "PlantedBug", "planted_bug", "registered"]

#: The engines whose bugs are the catalog's own: their controls are named ``engine:<bug>``,
#: another engine's ``engine:<engine>/<bug>``.
REFERENCE_ENGINES = ("reference", "reference-tree")

#: Where the index conventions the cache, mask and position bugs break are stated and proved.
CONVENTIONS = "docs/explanation/index-conventions.md"
#: The seed article the resampling example comes from (its numbers: proofs/thm_three_token_example.py).
AUDIT_ARTICLE = "'Why speculative decoding preserves distributions but may not be faster', section 3"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class PlantedBug:
    """One planted bug of one built-in engine (see the module docstring)."""

    name: str
    engine: str
    seam: str
    replacement: Callable[..., Any] = field(compare=False, repr=False)
    mechanism: str
    source: str
    #: the checks that must catch it, and (same order) the evidence each must fail through
    caught_by: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    #: fixes of the engine's own bugs applied with this one, so that what the checks catch is
    #: the planted bug (vLLM's CPU build needs ``cpu-expand``)
    fixes: tuple[str, ...] = ()
    #: reference engines: other seams replaced with ``seam``, each no bug alone: the behaviour
    #: of the engine the bug comes from that lets it through
    alongside: tuple[tuple[str, Callable[..., Any]], ...] = field(default=(), compare=False, repr=False)
    #: why the quick sizes cannot see the bug (smaller than the quick design's effect), so that
    #: only the full sizes catch it; ``None``: caught at the quick sizes
    quick_miss: str | None = None

    @property
    def control(self) -> str:
        """The bug's name in the controls catalog (:meth:`control_name`)."""
        return self.control_name(self.name, self.engine)

    @staticmethod
    def control_name(name: str, engine: str) -> str:
        """``engine:<bug>`` for the reference engines, ``engine:<engine>/<bug>`` for the others."""
        return f"engine:{name}" if engine in REFERENCE_ENGINES else f"engine:{engine}/{name}"

    @property
    def seams(self) -> dict[str, Callable[..., Any]]:
        """Every seam the bug replaces, ``seam`` first, and its replacement."""
        return {self.seam: self.replacement, **dict(self.alongside)}


_BUGS: dict[tuple[str, str], PlantedBug] = {}


def planted_bug(
    name: str,
    *,
    engine: str,
    seam: str,
    mechanism: str,
    source: str,
    caught_by: Mapping[str, Evidence | str],
    fixes: Sequence[str] = (),
    alongside: Sequence[tuple[str, Callable[..., Any]]] = (),
    quick_miss: str | None = None,
) -> Callable[[F], F]:
    """Declare the decorated function as the replacement that plants the bug ``name`` in the
    built-in engine ``engine`` (see the module docstring). The function is returned unchanged,
    so one replacement can be declared for several bugs or engines."""
    if not caught_by:
        raise UsageError(f"planted bug {engine}/{name}: caught_by is empty; name the checks that catch it")
    evidence = []
    for check, kind in caught_by.items():
        try:
            evidence.append(Evidence(kind))
        except ValueError:
            raise UsageError(
                f"planted bug {engine}/{name}: evidence {kind!r} of check {check!r} is not one of "
                f"{', '.join(Evidence)}"
            ) from None

    def register(replacement: F) -> F:
        if (engine, name) in _BUGS:
            raise UsageError(f"planted bug {name!r} of engine {engine!r} is already declared")
        _BUGS[engine, name] = PlantedBug(
            name,
            engine,
            seam,
            replacement,
            mechanism,
            source,
            tuple(caught_by),
            tuple(evidence),
            tuple(fixes),
            tuple(alongside),
            quick_miss,
        )
        return replacement

    return register


def registered() -> list[PlantedBug]:
    """The bugs declared so far, in declaration order (the engine registry loads the adapters
    that declare them: :func:`verispec.engines.registry.bugs`)."""
    return list(_BUGS.values())
