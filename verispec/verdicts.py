"""Three-valued verdicts: :class:`Proved`, :class:`Refuted`, :class:`Unknown`.

``Unknown`` never counts as a pass. A :class:`Refuted` verdict always carries the
counterexample that refutes the claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Proved", "Refuted", "Unknown", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """Base class. ``kind`` is ``"proved"``, ``"refuted"`` or ``"unknown"``."""

    kind: Literal["proved", "refuted", "unknown"] = field(init=False)

    @property
    def passed(self) -> bool:
        """True only for :class:`Proved`."""
        return self.kind == "proved"

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class Proved(Verdict):
    """The claim holds within ``scope`` (which says exactly what was established)."""

    scope: str
    kind: Literal["proved", "refuted", "unknown"] = field(init=False, default="proved")

    def to_json(self) -> dict[str, Any]:
        return {"verdict": "proved", "scope": self.scope}


@dataclass(frozen=True)
class Refuted(Verdict):
    """The claim is false; ``counterexample`` is a concrete, checkable instance."""

    reason: str
    counterexample: Any
    kind: Literal["proved", "refuted", "unknown"] = field(init=False, default="refuted")

    def to_json(self) -> dict[str, Any]:
        cx = self.counterexample
        return {
            "verdict": "refuted",
            "reason": self.reason,
            "counterexample": cx.to_json() if hasattr(cx, "to_json") else cx,
        }


@dataclass(frozen=True)
class Unknown(Verdict):
    """Nothing could be established (solver timeout, budget exhausted, ...)."""

    reason: str
    kind: Literal["proved", "refuted", "unknown"] = field(init=False, default="unknown")

    def to_json(self) -> dict[str, Any]:
        return {"verdict": "unknown", "reason": self.reason}
