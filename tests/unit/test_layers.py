"""The package's layers hold: the import contracts of pyproject.toml, and imports at module top.

The contracts (``[tool.importlinter]``) say which layer may import which
(docs/explanation/architecture.md); CI also runs ``lint-imports`` on its own. An import inside a
function hides a dependency from both, so it is allowed only for a heavy or optional
third-party package, and says so on its line.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "verispec"
#: What a deferred import's line says: ``import torch  # deferred: heavy``.
DEFERRED = re.compile(r"#\s*deferred: (heavy|optional)\b")
#: verispec's own modules that import a heavy package at their top: a function may defer them.
HEAVY_MODULES = {"verispec.strategies"}  # hypothesis


def _function_imports(path: Path) -> list[tuple[int, str, str]]:
    """``(line, imported module, the line's text)`` for every import inside a function."""
    source = path.read_text()
    lines = source.splitlines()
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                module = child.names[0].name if isinstance(child, ast.Import) else child.module or ""
                text = " ".join(line.strip() for line in lines[child.lineno - 1 : child.end_lineno])
                found.append((child.lineno, module, text))
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


def test_imports_inside_functions_are_heavy_or_optional_and_say_so() -> None:
    """No verispec module (but one that is itself heavy) nor standard-library module is
    imported inside a function: that hides a layer dependency, or a cycle. A third-party import
    there carries ``# deferred: heavy`` or ``# deferred: optional``."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, module, text in _function_imports(path):
            where = f"{path.relative_to(ROOT)}:{line}: {text}"
            if module.split(".")[0] in ("verispec", *sys.stdlib_module_names) and module not in HEAVY_MODULES:
                bad.append(f"{where} (imports at module top)")
            elif not DEFERRED.search(text):
                bad.append(f"{where} (say '# deferred: heavy' or '# deferred: optional')")
    assert not bad, "\n".join(bad)


@pytest.mark.skipif(
    shutil.which("lint-imports") is None, reason="import-linter is not installed (the dev extra)"
)
def test_the_layer_contracts_hold() -> None:
    """``lint-imports`` keeps every contract of pyproject.toml (its report names the import
    that breaks one)."""
    run = subprocess.run(["lint-imports", "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in run.stdout
