"""An optional dependency counts as present only when it is installed: a bare folder of its name
on the path (a source checkout never built, a folder of scripts) leaves its engines out, with
the reason, instead of failing every one of their controls."""

from __future__ import annotations

import importlib.util

import pytest

from verispec.controls.mutants import catalog
from verispec.controls.runner import _installed
from verispec.engines import registry
from verispec.errors import MissingDependency, installed


class TestInstalled:
    def test_a_bare_folder_is_not_an_installation(self, tmp_path, monkeypatch) -> None:
        (tmp_path / "verispec_bare_folder").mkdir()
        monkeypatch.syspath_prepend(str(tmp_path))
        assert importlib.util.find_spec("verispec_bare_folder") is not None  # what misled
        assert not installed("verispec_bare_folder")

    def test_an_installed_distribution_is(self) -> None:
        assert installed("numpy") and installed("z3")  # z3-solver provides z3
        assert not installed("verispec_no_such_module")


@pytest.mark.skipif(installed("vllm"), reason="vLLM is installed here")
def test_a_vllm_folder_leaves_the_vllm_engines_out(tmp_path, monkeypatch) -> None:
    (tmp_path / "vllm").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependency, match="vllm"):
        registry.get("vllm-draft").require()
    kept, left_out = _installed(catalog(("engine",)))
    vllm_controls = [m.name for m in catalog(("engine",)) if str(m.engine).startswith("vllm")]
    assert vllm_controls and not {m.name for m in kept} & set(vllm_controls)
    for name in vllm_controls:  # each left out, saying why
        assert any(line.startswith(f"{name}: ") and "vllm" in line for line in left_out), name
