"""Reports are written through: a crash midway keeps every result recorded so far."""

from __future__ import annotations

import json

from verispec.report import SCHEMA, ReportWriter


class TestReportWriter:
    def test_partial_report_is_readable_before_finish(self, tmp_path) -> None:
        writer = ReportWriter(tmp_path, command=["verispec", "check"], settings={"seed": 0})
        writer.add(
            "articles",
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
        assert data["sections"]["articles"][0]["name"] == "a"
        assert json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])["name"] == "a"
        assert "partial" in (tmp_path / "report.md").read_text()
        page = (tmp_path / "report.html").read_text()
        assert page.startswith("<!DOCTYPE html>") and "<td>1</td>" in page and "partial" in page

    def test_finish_records_verdict_and_summary(self, tmp_path) -> None:
        writer = ReportWriter(tmp_path, command=["verispec"], settings={})
        writer.finish("pass", {"seconds": 1})
        data = json.loads((tmp_path / "report.json").read_text())
        assert (data["status"], data["verdict"], data["summary"]) == ("complete", "pass", {"seconds": 1})


class TestHtml:
    def test_the_markdown_subset_becomes_html(self) -> None:
        from verispec.report.html import markdown_to_html

        text = "\n".join(
            [
                "# Title <x>",
                "",
                "- verdict: **fail**; see [the matrix](controls/report.html)",
                "- `a|b` and `**not bold**`",
                "",
                "| name | value |",
                "|---|---|",
                "| `p\\|q` | 1 |",
                "",
                "```",
                "<raw> **kept**",
                "```",
                "*greedy* proved; p=0* stays",
                "",
                "two lines",
                "of one paragraph",
            ]
        )
        page = markdown_to_html(text)
        assert "<h1>Title &lt;x&gt;</h1>" in page
        link = '<a href="controls/report.html">the matrix</a>'
        assert f"<li>verdict: <strong>fail</strong>; see {link}</li>" in page
        assert "<code>**not bold**</code>" in page
        assert "<tr><th>name</th><th>value</th></tr><tr><td><code>p|q</code></td><td>1</td></tr>" in page
        assert "<pre>&lt;raw&gt; **kept**</pre>" in page
        assert "<p><em>greedy</em> proved; p=0* stays</p>" in page
        assert "<p>two lines of one paragraph</p>" in page

    def test_the_controls_section_is_rendered_not_dumped(self) -> None:
        from verispec.report.markdown import render

        record = {
            "verdict": "fail",
            "outcomes": {"caught": 57, "escaped": 1},
            "samples_to_detection": {
                "engine_mutants": 30,
                "statistically_caught": 29,
                "median_generate_calls": 18,
                "max_generate_calls": 800,
            },
            "escaped": ["engine:unseeded"],
            "not_run": [],
            "flagged_subjects": [],
            "report": "controls/report.html",
        }
        text = render({"sections": {"controls": [record]}})
        assert "## Negative controls" in text and "- **not caught**: `engine:unseeded`" in text
        assert "median 18, max 800" in text and "[controls/report.html](controls/report.html)" in text
        assert "- detailed reports: [controls](controls/report.html)" in text


def test_a_quick_run_names_what_its_sizes_cannot_see() -> None:
    """A quick run of first-token-law names reused-uniform (only the full sizes see it) in its
    JSON, markdown and HTML; a full run, or a quick run of other checks, names nothing."""
    from verispec.conformance.checks import CheckResult
    from verispec.conformance.render import html, markdown
    from verispec.conformance.runner import ConformanceRun
    from verispec.verdicts import Status

    def run(quick: bool, check: str) -> ConformanceRun:
        r = ConformanceRun("reference", "reference", [], 24, "cpu", 0, 1e-6, quick)
        r.results = [CheckResult(check, Status.PASS, "ok", generate_calls=1)]
        return r

    data = run(True, "first-token-law").to_json()
    assert [b["control"] for b in data["quick_blind_spots"]] == ["engine:reused-uniform"]
    assert "0.050" in data["quick_blind_spots"][0]["why"]
    assert "quick sizes cannot see `engine:reused-uniform` (first-token-law)" in markdown(data)
    assert "quick sizes cannot see" in html(data)
    assert run(False, "first-token-law").blind_spots == []
    assert run(True, "greedy-equivalence").blind_spots == []
