"""Verdicts and statuses: the values every layer reports, and the one policy for exit codes.

Three-valued proof verdicts: :class:`Proved`, :class:`Refuted`, :class:`Unknown` (their
``kind`` is a :class:`VerdictKind`). ``Unknown`` never counts as a pass. A :class:`Refuted`
verdict always carries the counterexample that refutes the claim.

The other values are string enums (they compare equal to, and serialise as, their text):

* :class:`Status`: one conformance check's status;
* :class:`RunVerdict`: a whole run's verdict (``verispec check``, ``conform``, ``audit``,
  ``controls``, ``prove``, ``smt``), mapped to the exit code by :func:`exit_code`;
* :class:`Failure`: why a check failed (a detection, bad output, or the engine breaking);
* :class:`Evidence`: what a failing check saw (a statistic, an impossible token, a mismatch, a
  count, bad output): what a planted bug's record says its check must see;
* :class:`Outcome` and :class:`SubjectOutcome`: a negative control's and an unmutated
  subject's outcome;
* :class:`Decision`: one audit instance's decision.

>>> Status.PASS == "pass"
True
>>> exit_code(RunVerdict.INCONCLUSIVE)
<ExitCode.INCONCLUSIVE: 10>
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from verispec.errors import ExitCode

__all__ = [
    "Decision",
    "Evidence",
    "Failure",
    "Outcome",
    "Proved",
    "Refuted",
    "RunVerdict",
    "Status",
    "SubjectOutcome",
    "Unknown",
    "Verdict",
    "VerdictKind",
    "exit_code",
]


class VerdictKind(enum.StrEnum):
    """What a proof attempt established."""

    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


class Status(enum.StrEnum):
    """One conformance check's status.

    ``XFAIL`` is a failure listed in an expected-failures manifest, with its reason: reported,
    never hidden, and not counted against the run.
    """

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"
    XFAIL = "xfail"


class Failure(enum.StrEnum):
    """Why a check failed. Only ``DETECTION`` and ``BAD_OUTPUT`` are evidence about the law or
    contract; the engine crashing, hanging or being misused is recorded apart from them."""

    DETECTION = "detection"  # a p-value at or below alpha, a mismatch, a broken contract
    BAD_OUTPUT = "bad-output"  # output no correct engine gives (ids outside the vocabulary, ...)
    CRASH = "crash"  # the engine raised, died or hung
    MISUSE = "misuse"  # the engine rejected a valid request as a usage error

    @property
    def is_engine_breaking(self) -> bool:
        return self in (Failure.CRASH, Failure.MISUSE)


class Evidence(enum.StrEnum):
    """What a check that failed through the engine's output saw. A planted bug's record names
    the evidence each of its checks must fail through, so that a failure for another reason (the
    engine crashing, a bad id where a statistic was expected) is not counted as a catch."""

    STATISTIC = "statistic"  # a test rejected the law at the alpha it was planned at
    IMPOSSIBLE = "impossible"  # a token the declared law gives probability 0
    MISMATCH = "mismatch"  # tokens differ from a deterministic reference (baseline, repeat, alone)
    COUNT = "count"  # a count breaks the contract (accepted + 1 per round, a stop id, a budget)
    BAD_OUTPUT = "bad-output"  # output no engine may give (an id outside the vocabulary, ...)


class RunVerdict(enum.StrEnum):
    """A whole run's verdict."""

    PASS = "pass"
    FAIL = "fail"  # non-conformance: something under test is wrong
    ERROR = "error"  # verispec itself failed
    INCONCLUSIVE = "inconclusive"  # nothing failed, but nothing (or not enough) was established


class Outcome(enum.StrEnum):
    """A negative control's outcome."""

    CAUGHT = "caught"  # a declared check failed through the evidence the record names
    ERROR = "error"  # the engine crashed, hung or was misused, or a check errored: not a catch
    ESCAPED = "escaped"
    NOT_RUN = "not-run"


class SubjectOutcome(enum.StrEnum):
    """An unmutated subject's outcome in a controls run."""

    PASS = "pass"
    FLAGGED = "flagged"
    ERROR = "error"


class Decision(enum.StrEnum):
    """One audit instance's decision."""

    CONSISTENT = "consistent"
    REJECTED = "rejected"


#: The exit code of each run verdict (a stable interface, see ``docs/reference/cli.md``).
EXIT_CODES: dict[RunVerdict, ExitCode] = {
    RunVerdict.PASS: ExitCode.OK,
    RunVerdict.FAIL: ExitCode.NON_CONFORMANCE,
    RunVerdict.ERROR: ExitCode.INTERNAL_ERROR,
    RunVerdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE,
}


def exit_code(verdict: RunVerdict) -> ExitCode:
    """The one policy mapping a run's verdict to the command's exit code."""
    return EXIT_CODES[RunVerdict(verdict)]


@dataclass(frozen=True)
class Verdict:
    """Base class of the proof verdicts; ``kind`` says which."""

    kind: VerdictKind = field(init=False)

    @property
    def passed(self) -> bool:
        """True only for :class:`Proved`."""
        return self.kind == VerdictKind.PROVED

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class Proved(Verdict):
    """The claim holds within ``scope`` (which says exactly what was established)."""

    scope: str
    kind: VerdictKind = field(init=False, default=VerdictKind.PROVED)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.kind, "scope": self.scope}


@dataclass(frozen=True)
class Refuted(Verdict):
    """The claim is false; ``counterexample`` is a concrete, checkable instance."""

    reason: str
    counterexample: Any
    kind: VerdictKind = field(init=False, default=VerdictKind.REFUTED)

    def to_json(self) -> dict[str, Any]:
        cx = self.counterexample
        return {
            "verdict": self.kind,
            "reason": self.reason,
            "counterexample": cx.to_json() if hasattr(cx, "to_json") else cx,
        }


@dataclass(frozen=True)
class Unknown(Verdict):
    """Nothing could be established (solver timeout, budget exhausted, ...)."""

    reason: str
    kind: VerdictKind = field(init=False, default=VerdictKind.UNKNOWN)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.kind, "reason": self.reason}
