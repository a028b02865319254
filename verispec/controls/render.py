"""Renderings of a controls report: Markdown and one self-contained HTML file.

The HTML's detection matrix is a heat map (controls by checks; no external resources):
a cell is coloured by what the check did to that subject, and every control row carries
its layer, public source, mechanism, samples to detection and reproduction command.
"""

from __future__ import annotations

import html as _html
from collections.abc import Sequence
from typing import Any

from verispec.report.markdown import table
from verispec.verdicts import Outcome, Status, SubjectOutcome

__all__ = ["html", "markdown"]

#: cell key -> (label, background colour)
_LEGEND = {
    "caught": ("caught, through the evidence its record names", "#2e7d32"),
    "other": ("failed, not through the evidence its record names (no catch)", "#9e9d24"),
    "broke": ("the engine crashed, hung or refused (an error, no catch)", "#ef6c00"),
    "missed": ("not caught by this check", "#eeeeee"),
    "skip": ("skipped (capability)", "#ffffff"),
    "error": ("check error", "#6a1b9a"),
    "flagged": ("correct subject flagged", "#c62828"),
    "pass": ("correct subject passes", "#a5d6a7"),
}
_BROKE = ("crash", "misuse")


def _key(cell: dict[str, Any], subject: bool, caught: bool = False) -> str:
    status = cell["status"]
    if status == Status.ERROR:
        return "error"
    if status == Status.SKIP:
        return "skip"
    if subject:
        return "flagged" if status == Status.FAIL else "pass"
    if status != Status.FAIL:
        return "missed"
    if cell.get("failure") in _BROKE:
        return "broke"
    return "caught" if caught else "other"


def _columns(data: dict[str, Any]) -> list[str]:
    seen: list[str] = []
    for record in [*data["controls"], *data["subjects"]]:
        for cell in record["cells"]:
            if cell["check"] not in seen:
                seen.append(cell["check"])
    return seen


def _scope(data: dict[str, Any]) -> str:
    return " (every check)" if data["full_matrix"] else " (the checks declared to catch each control)"


def _samples(control: dict[str, Any]) -> str:
    if control["samples_to_detection"]:
        return str(control["samples_to_detection"])
    if control["layer"] != "engine" and control["outcome"] == Outcome.CAUGHT:
        return "exact" if control["layer"] == "verifier" else "z3"
    return ""


def _cell_text(cell: dict[str, Any]) -> str:
    """A failing cell: what it saw (``statistic p=3e-09``, ``mismatch``) or how the engine broke."""
    if cell["status"] != Status.FAIL:
        return str(cell["status"])
    if cell.get("failure") in _BROKE:
        return str(cell["failure"])
    seen = cell.get("evidence") or "refuted"
    return seen + (f" p={cell['pvalue']:.2g}" if cell["pvalue"] is not None else "")


def _must(control: dict[str, Any]) -> str:
    """What each declared check must fail through: ``sampling-law: statistic``."""
    return "; ".join(f"{check}: {kind}" for check, kind in control.get("evidence", {}).items())


def markdown(data: dict[str, Any]) -> str:
    summary = data["samples_to_detection"]
    partial = "" if data["status"] == "complete" else " (partial: the run has not finished)"
    lines = [
        f"# Negative controls: **{data['verdict']}**{partial}",
        "",
        f"- {len(data['controls'])} controls in layers {', '.join(data['layers'])}; outcomes "
        + ", ".join(f"{k} {v}" for k, v in sorted(data["outcomes"].items())),
        f"- engine checks at family-wise false-alarm rate {data['alpha']:g} per run"
        f"{_scope(data)}; {data['wall_seconds']} s",
        f"- engine mutants: {summary['statistically_caught']} of {summary['engine_mutants']} caught "
        f"statistically or exactly; generate calls to detection: median {summary['median_generate_calls']}, "
        f"max {summary['max_generate_calls']}",
        "",
    ]
    if data["escaped"]:
        lines += ["## Not caught", "", *[f"- `{name}`" for name in data["escaped"]], ""]
    if data["not_run"]:
        lines += ["## Not run in this mode", "", *[f"- `{name}`" for name in data["not_run"]], ""]
    if data.get("left_out"):
        left_out = [f"- {line}" for line in data["left_out"]]
        lines += ["## Left out (optional extra not installed)", "", *left_out, ""]
    if data["flagged_subjects"]:
        lines += [
            "## Correct subjects flagged",
            "",
            *[f"- `{name}`" for name in data["flagged_subjects"]],
            "",
        ]
    columns = _columns(data)
    lines += [
        "## Detection matrix",
        "",
        "A failing cell says what the check saw; `*` marks a check declared to catch the control, "
        "and an engine control is caught only by such a check failing through the evidence its "
        "record names (`caught by`).",
        "",
    ]
    rows = []
    for c in data["controls"]:
        cells = {
            cell["check"]: _cell_text(cell) + ("*" if cell["check"] in c["expected"] else "")
            for cell in c["cells"]
        }
        rows.append(
            [f"`{c['name']}`", f"**{c['outcome']}**", ", ".join(c.get("caught_by", [])), _samples(c)]
            + [cells.get(col, "") for col in columns]
        )
    lines += [table(["control", "outcome", "caught by", "samples", *columns], rows), ""]
    lines += ["## Controls", ""]
    rows = [
        [
            f"`{c['name']}`",
            c["layer"],
            " + ".join(seam for seam in (c.get("hook"), *c.get("alongside", [])) if seam),
            _must(c),
            c["source"],
            c["mechanism"],
            f"`{c['reproduce']}`",
        ]
        for c in data["controls"]
    ]
    header = ["control", "layer", "seam replaced", "must fail through", "source", "mechanism", "reproduce"]
    lines += [table(header, rows), ""]
    lines += ["## Unmutated subjects (false-alarm record)", ""]
    rows = [
        [
            f"`{s['name']}`" + (f" (with fix {', '.join(s['fixes'])})" if s.get("fixes") else ""),
            s["layer"],
            f"**{s['outcome']}**" if s["outcome"] != SubjectOutcome.PASS else SubjectOutcome.PASS,
            ", ".join(f"{cell['check']} {cell['status']}" for cell in s["cells"]),
        ]
        for s in data["subjects"]
    ]
    lines += [table(["subject", "layer", "outcome", "checks"], rows), ""]
    return "\n".join(lines)


_BAD = ' class="bad"'
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th.rot{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
td.h{min-width:58px;text-align:center;color:#fff;font-size:11px;white-space:nowrap}
td.h.decl{outline:2px solid #111;outline-offset:-3px}
td.h.missed,td.h.skip,td.h.pass{color:#555}
.bad{color:#c62828;font-weight:bold}
code{font-size:12px}
"""


def _heat_row(
    name: str,
    cells: list[dict[str, Any]],
    columns: list[str],
    subject: bool,
    declared: Sequence[str] = (),
    caught: Sequence[str] = (),
) -> str:
    by_check = {cell["check"]: cell for cell in cells}
    out = [f"<td><code>{_html.escape(name)}</code></td>"]
    for col in columns:
        cell = by_check.get(col)
        if cell is None:
            out.append('<td class="h" style="background:#fafafa"></td>')
            continue
        key = _key(cell, subject, col in caught)
        decl = " decl" if col in declared else ""
        tip = _html.escape(f"{col}: {cell['status']}; {cell['detail']}", quote=True)
        label = _html.escape(_cell_text(cell) if not subject else cell["status"])
        out.append(
            f'<td class="h {key}{decl}" style="background:{_LEGEND[key][1]}" title="{tip}">{label}</td>'
        )
    return "".join(out)


def html(data: dict[str, Any]) -> str:
    columns = _columns(data)
    summary = data["samples_to_detection"]
    head = "".join(f'<th class="rot">{_html.escape(c)}</th>' for c in columns)
    legend = " ".join(
        f'<span style="background:{colour};padding:2px 8px;border:1px solid #ccc">&nbsp;</span> '
        f"{_html.escape(label)}"
        for label, colour in _LEGEND.values()
    )
    legend += (
        ' <span style="outline:2px solid #111;outline-offset:-3px;padding:2px 8px">&nbsp;</span> '
        "a check declared to catch the control"
    )
    rows = []
    for c in data["controls"]:
        outcome = c["outcome"]
        cls = _BAD if outcome in (Outcome.ESCAPED, Outcome.ERROR) else ""
        rows.append(
            f"<tr>{_heat_row(c['name'], c['cells'], columns, False, c['expected'], c.get('caught_by', []))}"
            f"<td{cls}>{_html.escape(outcome)}</td><td>{_samples(c)}</td></tr>"
        )
    subject_rows = [
        f"<tr>{_heat_row(s['name'], s['cells'], columns, True)}"
        f"<td{'' if s['outcome'] == 'pass' else _BAD}>{_html.escape(s['outcome'])}</td><td></td></tr>"
        for s in data["subjects"]
    ]
    details = "".join(
        "<tr>"
        f"<td><code>{_html.escape(c['name'])}</code></td><td>{c['layer']}</td>"
        f"<td>{_html.escape(c.get('hook') or '')}</td><td>{_html.escape(_must(c))}</td>"
        f"<td>{_html.escape(c['source'])}</td><td>{_html.escape(c['mechanism'])}</td>"
        f"<td><code>{_html.escape(c['reproduce'])}</code></td></tr>"
        for c in data["controls"]
    )
    not_caught = (
        "<p class='bad'>Not caught: " + ", ".join(_html.escape(n) for n in data["escaped"]) + "</p>"
        if data["escaped"]
        else "<p>Every control was caught.</p>"
    )
    flagged = (
        "<p class='bad'>Correct subjects flagged: "
        + ", ".join(_html.escape(n) for n in data["flagged_subjects"])
        + "</p>"
        if data["flagged_subjects"]
        else "<p>No correct subject was flagged.</p>"
    )
    if data["not_run"]:
        not_caught += (
            "<p>Not run in this mode: " + ", ".join(_html.escape(n) for n in data["not_run"]) + "</p>"
        )
    partial = "" if data["status"] == "complete" else " (partial: the run has not finished)"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>verispec negative controls</title>
<style>{_STYLE}</style></head><body>
<h1>Negative controls: {_html.escape(data["verdict"])}{partial}</h1>
<p>{len(data["controls"])} controls ({", ".join(f"{k} {v}" for k, v in sorted(data["outcomes"].items()))});
engine checks at family-wise false-alarm rate {data["alpha"]:g} per run
{_scope(data)}; {data["wall_seconds"]} s.
Engine mutants: generate calls to detection median {summary["median_generate_calls"]},
max {summary["max_generate_calls"]}.</p>
{not_caught}{flagged}
<p>{legend}</p>
<h2>Detection matrix</h2>
<p>Samples: the generate calls a catching engine check used (the fewest over the checks
that caught it); the exact and SMT layers catch with one counterexample.</p>
<table><tr><th>control</th>{head}<th>outcome</th><th>samples</th></tr>
{"".join(rows)}
<tr><th colspan="{len(columns) + 3}">unmutated subjects (false-alarm record)</th></tr>
{"".join(subject_rows)}
</table>
<h2>Controls: sources and reproduction</h2>
<table><tr><th>control</th><th>layer</th><th>seam replaced</th><th>must fail through</th><th>source</th>
<th>mechanism</th><th>reproduce</th></tr>{details}</table>
</body></html>
"""
