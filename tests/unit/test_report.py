"""Reports are written through: a crash midway keeps every result recorded so far."""

from __future__ import annotations

import json

from verispec.report import SCHEMA, ReportWriter


class TestReportWriter:
    def test_partial_report_is_readable_before_finish(self, tmp_path) -> None:
        writer = ReportWriter(tmp_path, command=["verispec", "check"], settings={"seed": 0})
        writer.add(
            "seeds",
            {
                "name": "a",
                "ok": True,
                "statement": "s",
                "source": "x",
                "expected": {"k": "1"},
                "computed": {"k": "1"},
            },
        )
        # no finish(): as if the process died here
        data = json.loads((tmp_path / "report.json").read_text())
        assert data["schema"] == SCHEMA and data["status"] == "running"
        assert data["sections"]["seeds"][0]["name"] == "a"
        assert json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])["name"] == "a"
        assert "partial" in (tmp_path / "report.md").read_text()

    def test_finish_records_verdict_and_summary(self, tmp_path) -> None:
        writer = ReportWriter(tmp_path, command=["verispec"], settings={})
        writer.finish("pass", {"seconds": 1})
        data = json.loads((tmp_path / "report.json").read_text())
        assert (data["status"], data["verdict"], data["summary"]) == ("complete", "pass", {"seconds": 1})
