"""Renderings of a conformance report: Markdown, JUnit XML, and one self-contained HTML file.

The HTML has no external resources: its plots are inline SVG (p-values per check, PIT
histograms per sampling setting, and the survival curve of the accepted length).
"""

from __future__ import annotations

import html as _html
import math
from typing import Any
from xml.sax.saxutils import escape

from verispec.report.markdown import table

__all__ = ["html", "junit", "markdown"]


def _survival(data: dict[str, Any]) -> dict[str, Any]:
    """The accepted-length survival recorded by the acceptance-accounting check, if any."""
    for c in data["checks"]:
        survival = (c.get("details") or {}).get("survival")
        if survival and survival.get("measured"):
            return survival  # type: ignore[no-any-return]
    return {}


def _reason(c: dict[str, Any]) -> str:
    """A check's reason, with the manifest's reason for an expected failure."""
    expected = c.get("expected_failure")
    return f"expected failure ({expected}): {c['reason']}" if expected else str(c["reason"])


def markdown(data: dict[str, Any]) -> str:
    perf = data["performance"]
    lines = [
        f"# Conformance of `{data['engine']}` ({data['name']}): **{data['verdict']}**"
        + ("" if data.get("status", "complete") == "complete" else " (partial: the run has not finished)"),
        "",
        f"- capabilities: {', '.join(data['capabilities']) or 'none'}; vocabulary {data['vocab_size']}; "
        f"device {data['device']}",
        f"- family-wise false-alarm rate {data['alpha']:g}, split over the statistical checks; "
        f"power {data['power']:g}",
        f"- seed {data['seed']}{' (quick)' if data['quick'] else ''}; reproduce with `{data['reproduce']}`",
        f"- {perf['generate_calls']} generate calls, {perf['tokens']} tokens in {perf['wall_seconds']} s; "
        f"engine start-up {perf['startup_seconds']} s; harness share of the rest {perf['harness_share']}",
        *([f"- **inconclusive**: {data['inconclusive']}"] if data.get("inconclusive") else []),
        *[f"- engine: {n}" for n in data.get("engine_notes", [])],
        *[f"- warning: {w}" for w in data.get("warnings", [])],
        *[
            f"- quick sizes cannot see `{b['control']}` ({b['checks']}): {b['why']}; run without --quick"
            for b in data.get("quick_blind_spots", [])
        ],
        "",
    ]
    rows = []
    for c in data["checks"]:
        p = "" if c["pvalue"] is None else f"{c['pvalue']:.3g}"
        a = "" if c["alpha"] is None or c["effect"] is None else f"{c['alpha']:.3g}"
        status = c["status"] if c["status"] in ("pass", "skip") else f"**{c['status']}**"
        rows.append(
            [c["check"], status, a, c["effect"] or "", p, c["samples"], c["generate_calls"], _reason(c)]
        )
    lines.append(
        table(
            ["check", "status", "alpha", "effect (power 0.99)", "p-value", "samples", "calls", "reason"], rows
        )
    )
    survival = _survival(data)
    if survival:
        lines += [
            "",
            f"Survival of the accepted length over {survival['rounds']} rounds at T=1 "
            "(measured; predicted from the models along the same drafts):",
            "",
            table(
                ["j", "measured P(K >= j)", "predicted"],
                [
                    [j + 1, f"{m:.3f}", f"{p:.3f}"]
                    for j, (m, p) in enumerate(zip(survival["measured"], survival["predicted"], strict=True))
                ],
            ),
        ]
    return "\n".join(lines) + "\n"


def junit(data: dict[str, Any]) -> str:
    checks = data["checks"]
    failures = sum(c["status"] == "fail" for c in checks)
    errors = sum(c["status"] == "error" for c in checks)
    skipped = sum(c["status"] in ("skip", "xfail") for c in checks)
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        f'<testsuite name="verispec conformance {escape(data["engine"])}" tests="{len(checks)}" '
        f'failures="{failures}" errors="{errors}" skipped="{skipped}">',
    ]
    for c in checks:
        out.append(
            f'  <testcase classname="verispec.conformance" name="{escape(c["check"])}" time="{c["seconds"]}">'
        )
        message = escape(_reason(c), {'"': "&quot;"})
        if c["status"] == "fail":
            out.append(f'    <failure message="{message}"/>')
        elif c["status"] == "error":
            out.append(f'    <error message="{message}"/>')
        elif c["status"] in ("skip", "xfail"):
            out.append(f'    <skipped message="{message}"/>')
        out.append("  </testcase>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"


def bar_chart(
    values: list[float],
    labels: list[str],
    title: str,
    *,
    width: int = 520,
    height: int = 160,
    reference: float | None = None,
    second: list[float] | None = None,
) -> str:
    """A bar chart; ``second`` draws a second series (orange) beside the first (blue)."""
    if not values:
        return ""
    top = max([*values, *(second or []), reference or 0, 1e-9])
    bw = width / len(values)
    parts = [
        f'<svg width="{width}" height="{height + 40}" role="img" aria-label="{_html.escape(title)}">',
        f'<text x="0" y="12" font-size="12">{_html.escape(title)}</text>',
    ]
    series = [(values, "#4a7ab5")] + ([(second, "#e08a2c")] if second else [])
    slot = (bw - 4) / len(series)
    for i, label in enumerate(labels):
        for s_index, (vals, colour) in enumerate(series):
            v = vals[i]
            h = height * v / top
            parts.append(
                f'<rect x="{i * bw + 2 + s_index * slot:.1f}" y="{20 + height - h:.1f}" '
                f'width="{slot:.1f}" height="{h:.1f}" fill="{colour}">'
                f"<title>{_html.escape(label)}: {v:.4g}</title></rect>"
            )
        parts.append(
            f'<text x="{i * bw + bw / 2:.1f}" y="{height + 34}" font-size="9" text-anchor="middle">'
            f"{_html.escape(label[:14])}</text>"
        )
    if reference is not None:
        y = 20 + height - height * reference / top
        parts.append(
            f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#c33" stroke-dasharray="4"/>'
        )
    parts.append("</svg>")
    return "".join(parts)


def html(data: dict[str, Any]) -> str:
    checks = data["checks"]
    colors = {
        "pass": "#2a7",
        "fail": "#c33",
        "skip": "#999",
        "error": "#d80",
        "xfail": "#a6a",
        "inconclusive": "#d80",
    }

    def row(c: dict[str, Any]) -> str:
        pvalue = "" if c["pvalue"] is None else f"{c['pvalue']:.3g}"
        color = colors.get(c["status"], "#000")
        return (
            f"<tr><td>{_html.escape(c['check'])}</td><td style='color:{color}'><b>{c['status']}</b></td>"
            f"<td>{pvalue}</td><td>{c['samples']}</td><td>{c['generate_calls']}</td>"
            f"<td>{_html.escape(_reason(c))}</td></tr>"
        )

    rows = "".join(row(c) for c in checks)
    stat = [c for c in checks if c["pvalue"] is not None]
    pplot = bar_chart(
        [-math.log10(max(c["pvalue"], 1e-300)) for c in stat],
        [c["check"] for c in stat],
        "-log10 p-value per check (dashed: the check's alpha)",
        reference=-math.log10(min((c["alpha"] for c in stat if c["alpha"]), default=1e-6)),
    )
    hists = ""
    for c in checks:
        for setting, counts in (c.get("details") or {}).get("pit_histograms", {}).items():
            if counts:
                expected = sum(counts) / len(counts)
                hists += bar_chart(
                    [float(v) for v in counts],
                    [f"{i / 10:.1f}" for i in range(len(counts))],
                    f"{c['check']}: PIT histogram at {setting} (dashed: uniform)",
                    reference=expected,
                )
    survival = _survival(data)
    splot = (
        bar_chart(
            survival["measured"],
            [f"K>={i + 1}" for i in range(len(survival["measured"]))],
            f"survival of the accepted length P(K >= j) over {survival['rounds']} rounds: "
            "measured (blue), predicted from the models (orange)",
            second=survival["predicted"],
        )
        if survival
        else ""
    )
    perf = data["performance"]
    notes = "".join(
        f"<p><b>{_html.escape(label)}</b>: {_html.escape(text)}</p>"
        for label, text in [("inconclusive", data.get("inconclusive") or "")]
        + [("warning", w) for w in data.get("warnings", [])]
        + [
            ("quick sizes cannot see", f"{b['control']} ({b['checks']}): {b['why']}; run without --quick")
            for b in data.get("quick_blind_spots", [])
        ]
        if text
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>verispec conformance: {_html.escape(data["engine"])}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;font-size:13px;vertical-align:top}}</style></head><body>
<h1>Conformance of <code>{_html.escape(data["engine"])}</code>: <span style="color:{colors.get(data["verdict"], "#000")}">{data["verdict"]}</span></h1>
<p>{_html.escape(data["name"])}; capabilities {_html.escape(", ".join(data["capabilities"]))}; device {_html.escape(data["device"])};
seed {data["seed"]}; family-wise alpha {data["alpha"]:g}; power {data["power"]:g}.
{perf["generate_calls"]} generate calls, {perf["tokens"]} tokens, {perf["wall_seconds"]} s
(harness share {perf["harness_share"]}). Reproduce: <code>{_html.escape(data["reproduce"])}</code></p>
{notes}
<table><tr><th>check</th><th>status</th><th>p-value</th><th>samples</th><th>calls</th><th>reason</th></tr>{rows}</table>
<h2>Plots</h2>{pplot}{splot}{hists}
</body></html>
"""
