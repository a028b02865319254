"""Boundary mode: uniforms pinned at the edges of their range find verifiers that can emit a
token of target probability 0 (``U <= p/q`` at ``U = 0``), pass exact ones at every boundary,
and call a verifier whose randomness cannot be pinned inconclusive. Deterministic: nothing is
sampled but the drafts, from a fixed seed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from verispec.audits.boundary import GRID_BITS, PinnedGenerator, Pins, boundary_value, pinned_globals
from verispec.audits.runner import boundary_audit
from verispec.cli import main
from verispec.errors import UsageError
from verispec.verdicts import RunVerdict

ROOT = Path(__file__).resolve().parents[2]
BOXES = "tests.fixtures.black_boxes"


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)


def test_boundary_values_are_the_edges_of_each_width() -> None:
    assert boundary_value("zero", "float32", 0, []) == 0.0
    assert boundary_value("below-one", "float32", 0, []) == 1 - 2**-24
    assert boundary_value("below-one", "float64", 0, []) == 1 - 2**-53
    assert boundary_value("ratio", "float64", 1, [0.25, 0.5]) == 0.5
    assert boundary_value("ratio", "float64", 0, [1.0]) == 1 - 2**-53  # a uniform is never 1
    assert GRID_BITS == {"float32": 24, "float64": 53}


def test_the_pinned_generator_draws_like_numpy_at_the_pins() -> None:
    pins = Pins(boundary="zero")
    rng = PinnedGenerator(pins)
    assert rng.random() == 0.0 and rng.random(3).tolist() == [0.0, 0.0, 0.0]
    assert rng.choice(4, p=[0.0, 0.5, 0.0, 0.5]) == 1  # the first cell with mass, as numpy's CDF
    pins.boundary = "below-one"
    assert rng.choice(4, p=[0.0, 0.5, 0.5, 0.0]) == 2  # the last cell with mass
    assert rng.integers(5) == 4
    with pytest.raises(AttributeError, match=r"rng\.normal"):
        rng.normal()
    assert pins.draws == {"rng.random (float64)": 4, "rng.choice (float64)": 2, "rng.integers (float64)": 1}


def test_global_generators_are_pinned_and_restored() -> None:
    import random

    import numpy as np

    pins = Pins(boundary="zero")
    before = np.random.random
    with pinned_globals(pins):
        assert np.random.random() == 0.0 and random.random() == 0.0
    assert np.random.random is before
    assert pins.draws == {"numpy.random (float64)": 1, "random.random (float64)": 1}


@pytest.mark.parametrize(
    "function",
    [
        f"{BOXES}:speculative_sampling",
        "verispec.audits.adapters:token_level",
        "verispec.audits.adapters:point_mass",
    ],
)
def test_exact_verifiers_emit_no_impossible_token_at_any_boundary(function: str) -> None:
    result = boundary_audit(function)
    assert result.verdict == RunVerdict.PASS, result.reason
    assert sum(result.draws.values()) > 1000


def test_acceptance_at_equality_is_a_boundary_finding_with_its_probability() -> None:
    result = boundary_audit(f"{BOXES}:accepts_at_equality")
    assert result.verdict == RunVerdict.FAIL
    first = result.findings[0]
    assert first["boundary"] == "zero" and first["accepted_draft"]
    assert result.per_draw_probability == 2.0**-53  # it draws float64 uniforms from its rng
    assert {f["boundary"] for f in result.findings} <= {"zero", "ratio"}  # never below one
    assert result.to_json()["finding_class"] == "boundary non-conformance"


def test_randomness_that_cannot_be_pinned_is_inconclusive(capsys) -> None:
    result = boundary_audit(f"{BOXES}:system_randomness")
    assert result.verdict == RunVerdict.INCONCLUSIVE and not result.draws
    assert "drew no uniform the boundary mode can pin" in result.reason
    assert main(["audit", "--chain", f"{BOXES}:system_randomness", "--boundary"]) == 10


def test_a_verifier_that_crashes_under_the_pins_fails_with_its_error() -> None:
    result = boundary_audit(f"{BOXES}:raises_sometimes")
    assert result.verdict == RunVerdict.FAIL and "raised" in result.reason


def test_the_cli_writes_the_boundary_report(tmp_path) -> None:
    code = main(["audit", "--chain", f"{BOXES}:accepts_at_equality", "--boundary", "--out", str(tmp_path)])
    assert code == 1
    data = json.loads((tmp_path / "boundary.json").read_text())
    assert data["verdict"] == "fail" and data["finding_class"] == "boundary non-conformance"
    assert "token (p = 0)" in (tmp_path / "boundary.md").read_text()


@pytest.mark.parametrize(
    "function",
    [f"{BOXES}:tree_sample_and_match", f"{BOXES}:tree_first_child", "verispec.audits.adapters:mss"],
)
def test_exact_tree_verifiers_emit_no_impossible_token_at_any_boundary(function: str) -> None:
    result = boundary_audit(function, "tree")
    assert result.verdict == RunVerdict.PASS, result.reason
    assert sum(result.draws.values()) > 500


def test_a_tree_child_kept_at_equality_is_a_boundary_finding(tmp_path) -> None:
    function = f"{BOXES}:tree_first_child_at_equality"
    result = boundary_audit(function, "tree")
    assert result.verdict == RunVerdict.FAIL
    assert any(f["boundary"] == "zero" and f["accepted_draft"] for f in result.findings)
    # the draft puts 2/3 of its mass on a token the target never emits: kept at u = 0
    assert any("target-impossible" in f["instance"] and f["token"] == 0 for f in result.findings)
    assert result.command == f"verispec audit --tree {function} --law iid --boundary --seed 0"
    assert main(["audit", "--tree", function, "--boundary", "--out", str(tmp_path)]) == 1
    assert json.loads((tmp_path / "boundary.json").read_text())["verdict"] == "fail"


def test_a_tree_boundary_audit_of_an_unknown_law_is_a_usage_error() -> None:
    assert main(["audit", "--tree", f"{BOXES}:tree_sample_and_match", "--boundary", "--law", "nope"]) == 2


@pytest.mark.torch
def test_a_float32_torch_uniform_at_zero_is_pinned_and_caught() -> None:
    """transformers' comparison before 5.25 (``U <= p/q``, U from torch.rand_like in float32):
    at U = 0, probability 2^-24 per draw, a draft of target probability 0 is kept."""
    result = boundary_audit(f"{BOXES}:torch_accepts_at_equality")
    assert result.verdict == RunVerdict.FAIL
    assert result.per_draw_probability == 2.0**-24
    assert any(f["boundary"] == "zero" and f["accepted_draft"] for f in result.findings)
    assert "torch (float32)" in result.draws


@pytest.mark.torch
def test_categorical_torch_draws_are_left_to_the_generator_and_tallied() -> None:
    """An exponential race or ``torch.multinomial`` has no boundary that is one of the real
    generator's draws: the mode passes those through and the report counts them."""
    import torch

    pins = Pins(boundary="zero")
    originals = (torch.Tensor.exponential_, torch.multinomial, torch.rand)
    with pinned_globals(pins):
        e = torch.empty(2, 5).exponential_()
        m = torch.multinomial(torch.tensor([[0.5, 0.5], [0.1, 0.9]]), 1)
        u = torch.rand(3, dtype=torch.float64)
    assert bool((e > 0).all()) and m.shape == (2, 1) and u.tolist() == [0.0, 0.0, 0.0]
    assert pins.unpinned == {"Tensor.exponential_": 10, "torch.multinomial": 2}
    assert pins.draws == {"torch (float64)": 3}
    assert (torch.Tensor.exponential_, torch.multinomial, torch.rand) == originals


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers")
def test_transformers_speculative_sampling_at_the_boundaries() -> None:
    """transformers up to 5.24 accepts when U <= p/q, so at U = 0 it keeps a draft of target
    probability 0 (docs/audits/transformers.md); 5.25 compares with ``<`` and passes, with
    its float32 torch uniforms pinned (a pass, not an inconclusive run)."""
    import transformers
    from packaging.version import Version

    result = boundary_audit("conformance.hf_speculative_sampling:verify")
    assert "torch (float32)" in result.draws
    if Version(transformers.__version__) < Version("5.25.0"):
        assert result.verdict == RunVerdict.FAIL
        assert result.per_draw_probability == 2.0**-24
        assert any(f["boundary"] == "zero" and f["accepted_draft"] for f in result.findings)
    else:
        assert result.verdict == RunVerdict.PASS, result.reason


def test_a_bad_function_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="module:function"):
        boundary_audit("no_colon")
