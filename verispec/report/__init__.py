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
from importlib import metadata
from pathlib import Path
from typing import Any

from verispec._version import __version__
from verispec.report import html, markdown
from verispec.report.folder import ReportFolder

__all__ = ["SCHEMA", "ReportWriter", "describe_device", "environment"]

#: Version of the report's JSON schema; bump on any incompatible change.
SCHEMA = "verispec.report/2"


def _version_of(module: str) -> str | None:
    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return None


def _cpu_name() -> str:
    """The processor's model name where the system says it, else the architecture."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as stream:
            for line in stream:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_device(device: str = "cpu") -> str:
    """A device as a person wants it in a report: ``cpu (<model>, N cores)`` or
    ``cuda:0 (<GPU name>)``. Only a CUDA device asks torch, and only where torch is loaded."""
    if device.startswith("cuda"):
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            index = int(device.split(":", 1)[1]) if ":" in device else torch.cuda.current_device()
            return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
        return device
    if device == "cpu":
        return f"cpu ({_cpu_name()}, {os.cpu_count()} cores)"
    return device


def environment(device: str = "cpu") -> dict[str, Any]:
    """Versions and machine facts every report records; ``device`` is the device the work ran
    on (as :func:`describe_device` gives it, or a description an engine process reported)."""
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
        "device": device if "(" in device else describe_device(device),
    }


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class ReportWriter:
    """Collects results by section and keeps the report folder current after each one."""

    def __init__(
        self, folder: str | os.PathLike[str], *, command: Sequence[str], settings: dict[str, Any]
    ) -> None:
        self.folder = Path(folder)
        self._files = ReportFolder(self.folder)
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
        self._flush()

    def add(self, section: str, record: dict[str, Any]) -> None:
        """Record one result in ``section`` and write it through to disk."""
        self.data["sections"].setdefault(section, []).append(record)
        self._files.append({"section": section, **record})
        self._flush()

    def finish(self, verdict: str, summary: dict[str, Any]) -> None:
        self.data.update(status="complete", verdict=verdict, finished=_now(), summary=summary)
        self._flush()

    def _flush(self) -> None:
        self._files.write("report.json", json.dumps(self.data, indent=2) + "\n")
        self._files.write("report.md", markdown.render(self.data))
        self._files.write("report.html", html.render(self.data))


def write_json(data: Any, stream: Any = None) -> None:
    """Print ``data`` as JSON (to stdout by default)."""
    stream = stream or sys.stdout
    json.dump(data, stream, indent=2)
    stream.write("\n")
