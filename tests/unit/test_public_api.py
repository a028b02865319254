"""The public API: every name in __all__ imports from its public path; imports stay light."""

from __future__ import annotations

import subprocess
import sys

import verispec


def test_every_public_name_resolves() -> None:
    for name in verispec.__all__:
        assert getattr(verispec, name) is not None, name


def test_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys, verispec; "
        "names = ('torch', 'transformers', 'z3', 'sympy', 'scipy', 'hypothesis'); "
        "heavy = [m for m in names if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_strategies_is_public() -> None:
    from verispec import strategies

    assert set(strategies.__all__) >= {"chain_instances", "conditional_models", "distributions"}
