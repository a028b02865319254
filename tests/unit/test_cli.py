"""The command line: exit codes, usage errors without tracebacks, tables and JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verispec.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class TestUsageErrors:
    def test_unknown_verifier_suggests_and_exits_2(self, capsys) -> None:
        code, _out, err = run(capsys, "prove", "token-levl")
        assert code == 2
        assert err.startswith(
            "verispec: error: verifier='token-levl' is not a known name; did you mean 'token-level'?"
        )
        assert "Traceback" not in err

    def test_out_of_range_option(self, capsys) -> None:
        code, _, err = run(capsys, "prove", "--jobs", "0")
        assert code == 2
        assert err.strip() == "verispec: error: --jobs=0 must be >= 1"

    def test_unknown_subcommand(self, capsys) -> None:
        code, _, err = run(capsys, "frobnicate")
        assert code == 2 and "invalid choice" in err

    def test_no_command_prints_help(self, capsys) -> None:
        code, out, _ = run(capsys)
        assert code == 2 and "usage: verispec" in out


class TestAuditDesigns:
    """``verispec audit`` runs the budgeted design unless told otherwise; options of two designs
    are a usage error naming both, raised before anything is sampled."""

    BOX = "tests.fixtures.black_boxes:speculative_sampling"

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                ["--planned", "--budget", "60s"],
                "--planned and --budget=60s choose two designs (the planned design samples each instance "
                "to the size planned for --tv; the budgeted design samples each for its share of the "
                "budget): pass one of them",
            ),
            (
                ["--tv", "0.02", "--budget"],
                "--tv=0.02 and --budget=60s choose two designs (the planned design samples each instance "
                "to the size planned for --tv; the budgeted design samples each for its share of the "
                "budget): pass one of them",
            ),
            (
                ["--boundary", "--planned"],
                "--boundary and --planned choose two designs (the boundary mode pins the verifier's "
                "uniforms and tests no law; the planned design samples each instance to the size planned "
                "for --tv): pass one of them",
            ),
            (
                ["--planned", "--workers", "2"],
                "--workers=2 sets the worker processes of a budgeted audit; --planned runs one instance "
                "at a time",
            ),
            (
                ["--boundary", "--workers", "2"],
                "--workers=2 sets the worker processes of a budgeted audit; --boundary runs one instance "
                "at a time",
            ),
        ],
    )
    def test_two_designs_at_once_are_a_usage_error(self, capsys, options: list[str], message: str) -> None:
        code, _, err = run(capsys, "audit", "--chain", self.BOX, *options)
        assert code == 2
        assert err.strip() == f"verispec: error: {message}"

    def test_the_help_names_the_default_budget_and_the_planned_option(self, capsys) -> None:
        with pytest.raises(SystemExit):
            main(["audit", "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "budgeted design, the default" in out
        assert "(default and --budget alone: 60s)" in out
        assert "--planned planned design instead of a budget" in out


class TestProve:
    def test_json_has_the_documented_fields(self, capsys) -> None:
        code, out, _ = run(
            capsys, "prove", "--json", "--quick", "--jobs", "1", "point-mass", "reused-uniform"
        )
        assert code == 0
        data = json.loads(out)
        assert [d["name"] for d in data] == ["point-mass", "reused-uniform"]
        assert data[0]["kind"] == "exact" and data[0]["verdict"] == "proved"
        assert data[1]["kind"] == "control" and data[1]["verdict"] == "refuted"
        assert "counterexample" in data[1] and "tv_distance" in data[1]
        assert all(isinstance(d["instances"], int) for d in data)

    def test_table(self, capsys) -> None:
        code, out, _ = run(capsys, "prove", "--quick", "--jobs", "1", "--explain", "greedy", "missing-bonus")
        assert code == 0
        assert "greedy" in out and "proved" in out and "refuted" in out
        assert "2/2 as expected" in out
        assert "round contract is broken" in out

    def test_list(self, capsys) -> None:
        from verispec.verifiers import registry

        code, out, _ = run(capsys, "prove", "--list")
        assert code == 0 and out.count("\n") == len(registry.names())


class TestCheck:
    def test_quick_check_writes_the_report_folder(self, capsys, tmp_path) -> None:
        out_dir = tmp_path / "report"
        code, _, err = run(capsys, "check", "--quick", "--out", str(out_dir))
        assert code == 0, err
        assert "verdict: PASS" in err
        report = json.loads((out_dir / "report.json").read_text())
        assert report["schema"] == "verispec.report/2"
        assert report["status"] == "complete" and report["verdict"] == "pass"
        assert {"prove", "articles", "theorems"} <= set(report["sections"])
        assert report["environment"]["verispec"]
        lines = (out_dir / "results.jsonl").read_text().splitlines()
        assert len(lines) == sum(len(v) for v in report["sections"].values())
        assert (out_dir / "report.md").read_text().startswith("# verispec report")

    def test_unwritable_out_is_a_usage_error(self, capsys, tmp_path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        code, _, err = run(capsys, "check", "--quick", "--out", str(blocker / "sub"))
        assert code == 2 and "cannot be created" in err


@pytest.mark.parametrize("args", [["--version"], ["prove", "--list"]])
def test_console_script_runs(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "verispec", *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr


def test_a_closed_pipe_is_not_an_internal_error() -> None:
    """`verispec controls list | head -1`: the reader leaves before verispec writes."""
    command = [sys.executable, "-m", "verispec", "controls", "list"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before the interpreter has even imported verispec
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 0, err
    assert "internal error" not in err and "Traceback" not in err
