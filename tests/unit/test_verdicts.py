"""Verdicts, statuses and the one exit-code policy."""

from __future__ import annotations

import json

from verispec.errors import ExitCode
from verispec.verdicts import RunVerdict, Status, exit_code


class TestExitCode:
    def test_every_verdict_has_its_documented_code(self) -> None:
        assert [exit_code(v) for v in RunVerdict] == [
            ExitCode.OK,
            ExitCode.NON_CONFORMANCE,
            ExitCode.INTERNAL_ERROR,
            ExitCode.INCONCLUSIVE,
        ]
        assert exit_code(RunVerdict("inconclusive")) == 10


def test_statuses_are_strings_in_reports() -> None:
    assert json.dumps({"status": Status.XFAIL}) == '{"status": "xfail"}'
    assert Status.PASS == "pass"
