"""A report folder written crash-safely: one JSON line per result, atomic report files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from verispec.errors import UsageError

__all__ = ["ReportFolder"]


class ReportFolder:
    """``results.jsonl`` grows by one synced line per result; ``write`` replaces a file
    atomically, so a crash midway keeps everything measured before it."""

    def __init__(self, folder: Path) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"out={str(folder)!r} cannot be created: {exc.strerror}") from exc
        if not os.access(folder, os.W_OK):
            raise UsageError(f"out={str(folder)!r} is not writable")
        self.folder = folder
        (folder / "results.jsonl").write_text("", encoding="utf-8")

    def write(self, name: str, text: str) -> None:
        tmp = self.folder / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.folder / name)

    def append(self, record: dict[str, Any]) -> None:
        with (self.folder / "results.jsonl").open("a", encoding="utf-8") as stream:
            stream.write(json.dumps(record) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
