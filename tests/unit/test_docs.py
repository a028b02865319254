"""The Python examples in the docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    ROOT / "docs/tutorial/first-proof.md",
    ROOT / "docs/how-to/check-your-own-verifier.md",
]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path: Path) -> None:
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), re.S):
        if "@given" in block:
            continue  # a test to copy, not a statement to run
        exec(compile(block, str(path), "exec"), namespace)
