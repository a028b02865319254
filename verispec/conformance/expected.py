"""Expected failures: a manifest of (engine, check, reason) that a run reports as expected.

Like scikit-learn's ``expected_failed_checks`` and the xfails files of array-api-tests, a
manifest lets an engine team run the whole suite in CI while a known failure is being
fixed, without hiding it: a listed failure keeps its evidence and is reported as ``xfail``
with the manifest's reason, and a listed entry that matches no failure of this engine (the
check passed, was skipped or did not run, or names no known check) is a warning, so that a
fixed bug does not stay excused. A reason is required: the engine's documented behaviour, or
the engine bug with its minimal reproduction.

The manifest is TOML::

    [[expected-failure]]
    engine = "hf-lookup"          # a built-in name, module:factory, or the engine's own name
    check = "cache-rollback"
    reason = "..."

Only failures can be expected; a check that errors is verispec's own fault and never is.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verispec.conformance.checks import names
from verispec.errors import UsageError, unknown_name
from verispec.verdicts import Status

__all__ = ["ExpectedFailure", "for_engine", "load_expected_failures", "mark_expected", "unmatched"]


@dataclass(frozen=True)
class ExpectedFailure:
    engine: str
    check: str
    reason: str

    def applies_to(self, engine: str, name: str) -> bool:
        """For the engine ``engine`` (as given to ``--engine``) that calls itself ``name``."""
        return self.engine in (engine, name)

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "check": self.check, "reason": self.reason}


def load_expected_failures(path: str | os.PathLike[str]) -> list[ExpectedFailure]:
    """Read a manifest; a missing file, bad TOML or an entry without its three fields is a
    usage error naming the file and the entry."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"expected_failures={str(where)!r} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"expected_failures={str(where)!r} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"expected_failures={str(where)!r} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"expected-failure"})
    if unknown:
        raise UsageError(
            f"expected_failures={str(where)!r}: unknown table(s) {unknown}; use [[expected-failure]]"
        )
    entries = []
    for i, entry in enumerate(data.get("expected-failure", [])):
        fields = {key: entry.get(key) for key in ("engine", "check", "reason")}
        missing = [key for key, value in fields.items() if not isinstance(value, str) or not value.strip()]
        if missing:
            raise UsageError(
                f"expected_failures={str(where)!r}: entry {i + 1} needs a non-empty {', '.join(missing)}"
            )
        extra = sorted(set(entry) - set(fields))
        if extra:
            raise UsageError(f"expected_failures={str(where)!r}: entry {i + 1} has unknown field(s) {extra}")
        entries.append(
            ExpectedFailure(fields["engine"].strip(), fields["check"].strip(), fields["reason"].strip())
        )
    return entries


def mark_expected(result: Any, entries: Sequence[ExpectedFailure]) -> str | None:
    """Turn ``result`` into ``xfail`` (in place) when an entry lists its check and it failed;
    return a warning when an entry lists it but it did not fail. ``entries`` are this
    engine's (:func:`for_engine`)."""
    entry = next((e for e in entries if e.check == result.name), None)
    if entry is None:
        return None
    if result.status == Status.FAIL:
        result.status = Status.XFAIL
        result.expected = entry.reason
        return None
    return (
        f"expected failure of {entry.check!r}: the check's status is {result.status}, not fail; "
        "the entry matches nothing (remove it if the bug is fixed)"
    )


def for_engine(entries: Sequence[ExpectedFailure], *, engine: str, name: str) -> list[ExpectedFailure]:
    """The entries for the engine given as ``engine`` that calls itself ``name``."""
    return [e for e in entries if e.applies_to(engine, name)]


def unmatched(entries: Sequence[ExpectedFailure], ran: Sequence[str]) -> list[str]:
    """Warnings for this engine's entries whose check did not run, or does not exist."""
    known = set(names())
    warnings = []
    for entry in entries:
        if entry.check not in known:
            hint = str(unknown_name("check", entry.check, known)).split(" is not a known name", 1)[1]
            warnings.append(f"expected failure of {entry.check!r}: no such check{hint}")
        elif entry.check not in ran:
            warnings.append(
                f"expected failure of {entry.check!r}: the check did not run; the entry matches nothing"
            )
    return warnings
