"""Audit mode: functions defined outside verispec, run in a subprocess with a time limit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from verispec.cli import main
from verispec.errors import UsageError
from verispec.smt.audit import audit

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the fixtures module is imported by name from here


class TestAudit:
    def test_correct_function_is_proved(self) -> None:
        assert audit("visibility", "tests.fixtures.engine_masks:visible_ok").verdict.kind == "proved"

    def test_wrong_convention_is_refuted_with_a_counterexample(self) -> None:
        result = audit("visibility", "tests.fixtures.engine_masks:visible_top_left")
        assert result.verdict.kind == "refuted"
        assert result.counterexample == {"L": 2, "gamma": 0, "row": 0, "key": 1}

    def test_hf_negative_slice_crop_is_refuted(self) -> None:
        result = audit("crop", "tests.fixtures.engine_masks:crop_hf_negative")
        assert result.verdict.kind == "refuted"
        assert result.counterexample["accepted"] == result.counterexample["gamma"]

    def test_python_if_falls_back_to_small_cases_and_is_never_proved(self) -> None:
        ok = audit("visibility", "tests.fixtures.engine_masks:visible_with_if")
        assert ok.verdict.kind == "unknown" and "not a proof" in ok.verdict.reason
        bad = audit("visibility", "tests.fixtures.engine_masks:visible_with_if_off_by_one")
        assert bad.verdict.kind == "refuted"

    def test_non_boolean_is_a_usage_error_naming_the_function(self) -> None:
        with pytest.raises(
            UsageError, match=r"visible_returns_int returned int \(1\) where a boolean is required"
        ):
            audit("visibility", "tests.fixtures.engine_masks:visible_returns_int")

    def test_raising_function_is_unknown(self) -> None:
        result = audit("visibility", "tests.fixtures.engine_masks:visible_raises")
        assert result.verdict.kind == "unknown"
        assert "visible_raises raised RuntimeError: mask builder exploded" in result.verdict.reason

    def test_hanging_function_hits_the_time_limit(self) -> None:
        result = audit("visibility", "tests.fixtures.engine_masks:visible_hangs", timeout_s=3)
        assert result.verdict.kind == "unknown"
        assert "did not finish within 3 s" in result.verdict.reason

    def test_tree_function_missing_grandparents_is_refuted(self) -> None:
        result = audit("tree-visibility", "tests.fixtures.engine_masks:tree_visible_parent_only")
        assert result.verdict.kind == "refuted"
        assert result.counterexample["parents"] == [-1, 0, 1]

    def test_unimportable_module_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match=r"function='nosuchmodule:f': cannot import 'nosuchmodule'"):
            audit("visibility", "nosuchmodule:f")


class TestCli:
    def test_smt_json_lists_every_convention(self, capsys) -> None:
        code = main(["smt", "--json", "top-left-mask", "crop"])
        data = json.loads(capsys.readouterr().out)
        assert code == 0
        assert [(d["name"], d["verdict"]) for d in data] == [("top-left-mask", "refuted"), ("crop", "proved")]

    def test_audit_option_exit_codes(self, capsys) -> None:
        assert main(["smt", "--visible", "tests.fixtures.engine_masks:visible_ok"]) == 0
        assert main(["smt", "--visible", "tests.fixtures.engine_masks:visible_top_left"]) == 1
        assert main(["smt", "--positions", "tests.fixtures.engine_masks:position_ok"]) == 0
        out = capsys.readouterr().out
        assert "counterexample" in out

    def test_bad_audit_spec(self, capsys) -> None:
        assert main(["smt", "--audit", "nonsense"]) == 2
        assert "--audit='nonsense' must be OBLIGATION=MODULE:FUNCTION" in capsys.readouterr().err

    def test_environment_untouched(self) -> None:
        assert "tests.fixtures.engine_masks" not in __import__("sys").modules or os.environ is not None
