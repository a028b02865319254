"""Reports: a versioned JSON document, Markdown for people, and a crash-safe record.

:class:`ReportWriter` writes into a folder:

* ``results.jsonl``: one line per result, appended and flushed to disk as soon as the
  result exists, so a crash midway loses nothing already measured;
* ``report.json``: the whole report (schema :data:`SCHEMA`), rewritten atomically after
  every result, with ``"status": "running"`` until the run completes;
* ``report.md`` and ``report.html``: the same, for a person, rewritten alongside.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verispec._version import __version__
from verispec.errors import UsageError

__all__ = ["SCHEMA", "ReportWriter", "environment"]

#: Version of the report's JSON schema; bump on any incompatible change.
SCHEMA = "verispec.report/1"


def _version_of(module: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Versions and machine facts every report records."""
    return {
        "verispec": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version_of("numpy"),
        "scipy": _version_of("scipy"),
        "sympy": _version_of("sympy"),
        "z3-solver": _version_of("z3-solver"),
        "hypothesis": _version_of("hypothesis"),
        "torch": _version_of("torch"),
        "transformers": _version_of("transformers"),
        "device": "cpu",
    }


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class ReportWriter:
    """Collects results by section and keeps the report folder current after each one."""

    def __init__(
        self, folder: str | os.PathLike[str], *, command: Sequence[str], settings: dict[str, Any]
    ) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"out={str(self.folder)!r} cannot be created: {exc.strerror}") from exc
        if not os.access(self.folder, os.W_OK):
            raise UsageError(f"out={str(self.folder)!r} is not writable")
        self.data: dict[str, Any] = {
            "schema": SCHEMA,
            "status": "running",
            "verdict": None,
            "started": _now(),
            "finished": None,
            "command": list(command),
            "settings": settings,
            "environment": environment(),
            "sections": {},
        }
        self._jsonl = self.folder / "results.jsonl"
        self._jsonl.write_text("", encoding="utf-8")
        self._flush()

    def add(self, section: str, record: dict[str, Any]) -> None:
        """Record one result in ``section`` and write it through to disk."""
        self.data["sections"].setdefault(section, []).append(record)
        with self._jsonl.open("a", encoding="utf-8") as stream:
            stream.write(json.dumps({"section": section, **record}, sort_keys=True) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        self._flush()

    def finish(self, verdict: str, summary: dict[str, Any]) -> None:
        self.data.update(status="complete", verdict=verdict, finished=_now(), summary=summary)
        self._flush()

    def _flush(self) -> None:
        self._atomic_write("report.json", json.dumps(self.data, indent=2, sort_keys=False) + "\n")
        from verispec.report import html, markdown

        self._atomic_write("report.md", markdown.render(self.data))
        self._atomic_write("report.html", html.render(self.data))

    def _atomic_write(self, name: str, text: str) -> None:
        tmp = self.folder / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.folder / name)


def write_json(data: Any, stream: Any = None) -> None:
    """Print ``data`` as JSON (to stdout by default)."""
    stream = stream or sys.stdout
    json.dump(data, stream, indent=2)
    stream.write("\n")
