"""The expected-failures manifest: entries need an engine, a check and a reason."""

from __future__ import annotations

import re

import pytest

from verispec.conformance.expected import ExpectedFailure, load_expected_failures
from verispec.errors import UsageError


def test_a_manifest_is_read(tmp_path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[[expected-failure]]\nengine = "e"\ncheck = "determinism"\nreason = " documented "\n')
    assert load_expected_failures(path) == [ExpectedFailure("e", "determinism", "documented")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[expected-failure]]\nengine = "e"\ncheck = "c"\n', "entry 1 needs a non-empty reason"),
        (
            '[[expected-failure]]\nengine = "e"\ncheck = "c"\nreason = ""\n',
            "entry 1 needs a non-empty reason",
        ),
        ('[[expected-failures]]\nengine = "e"\n', "unknown table(s) ['expected-failures']"),
        (
            '[[expected-failure]]\nengine = "e"\ncheck = "c"\nreason = "r"\nwhy = "w"\n',
            "entry 1 has unknown field(s) ['why']",
        ),
        ("[[expected-failure]\n", "is not valid TOML"),
    ],
)
def test_a_bad_manifest_is_a_usage_error(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "x.toml"
    path.write_text(text)
    with pytest.raises(
        UsageError, match=re.escape(f"expected_failures='{path}'") + ".*" + re.escape(message)
    ):
        load_expected_failures(path)


def test_a_missing_manifest_is_named(tmp_path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_expected_failures(tmp_path / "none.toml")


def test_the_projects_own_manifest_parses() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    entries = load_expected_failures(root / "conformance" / "expected-failures.toml")
    # every entry names a built-in engine and a real check, with a reason pointing at its evidence
    from verispec.conformance.checks import names
    from verispec.engines import registry

    assert entries
    for entry in entries:
        assert entry.engine in registry.names() and entry.check in names()
        assert "docs/audits/" in entry.reason
