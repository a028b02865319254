"""Markdown rendering of a report document (see :mod:`verispec.report`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from verispec.verdicts import RunVerdict, Status

__all__ = ["render", "table"]


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _prove(records: list[dict[str, Any]]) -> str:
    out = ["## Verifiers: proofs and refutations", ""]
    out.append(
        "Each exact verifier must be `proved` and each control `refuted`. `proof` says whether "
        "the proof covers every vocabulary size (`symbolic`) or the enumerated instances "
        "(`bounded`)."
    )
    out.append("")
    rows = [
        [
            r["name"],
            r["kind"],
            ("**" + r["verdict"] + "**") if not r.get("ok") else r["verdict"],
            r.get("proof", ""),
            r["instances"],
            r.get("multi_round_instances", ""),
            r.get("tv_distance", ""),
            f"{r['seconds']:.1f} s",
            r["source"],
        ]
        for r in records
    ]
    out.append(
        table(
            ["verifier", "kind", "verdict", "proof", "instances", "multi-round", "TV", "time", "source"], rows
        )
    )
    trees = [r for r in records if r.get("laws")]
    if trees:
        laws = list(trees[0]["laws"])
        out += ["", "### Tree verifiers: exactness by candidate law", ""]
        out.append(
            "Each exact tree verifier run on a sweep of every candidate law: `exact`, `not exact` "
            "(largest TV found) or `invalid` (the law breaks the verifier's contract). Bold marks "
            "the laws it is meant for."
        )
        out.append("")
        matrix_rows = []
        for r in trees:
            cells = []
            for law in laws:
                cell = r["laws"][law]
                text = cell["status"] + (f" (TV {cell['max_tv']:.3f})" if cell.get("max_tv") else "")
                cells.append(f"**{text}**" if cell["meant_for"] else text)
            matrix_rows.append([r["name"], *cells])
        out.append(table(["verifier", *laws], matrix_rows))
    for r in records:
        if r.get("counterexample_text") or r.get("reason"):
            out += ["", f"### {r['name']} ({r['kind']}, {r['verdict']})", ""]
            out.append(f"{r['summary']}. Source: {r['source']}.")
            if r.get("reason"):
                out += ["", f"Reason: {r['reason']}."]
            if r.get("counterexample_text"):
                out += ["", "```", r["counterexample_text"], "```"]
        if r.get("scope"):
            out += ["", f"*{r['name']}* proved on: {r['scope']}."]
    return "\n".join(out)


def _theorems(records: list[dict[str, Any]]) -> str:
    out = ["## Symbolic theorems", ""]
    rows = [
        [
            r["name"],
            r["prover"],
            r["verdict"],
            "yes" if r.get("general") else "",
            f"{r['seconds']:.2f} s",
            r["statement"],
        ]
        for r in records
    ]
    out.append(table(["theorem", "prover", "verdict", "all V", "time", "statement"], rows))
    return "\n".join(out)


def _articles(records: list[dict[str, Any]]) -> str:
    out = ["## The seed articles' numbers", ""]
    for r in records:
        mark = "reproduced" if r["ok"] else "**MISMATCH**"
        out += [f"### {r['name']}: {mark}", "", f"{r['statement']} ({r['source']})", ""]
        rows = [[k, r["expected"][k], r["computed"].get(k)] for k in r["expected"]]
        out += [table(["quantity", "article", "verispec"], rows), ""]
    return "\n".join(out)


def _lengths(records: list[dict[str, Any]]) -> str:
    out = ["## Expected accepted length per round", ""]
    out.append(
        "`E[K]` from the enumerated block law, checked against the tail-sum identity over each "
        "verifier's closed-form acceptance profile."
    )
    out.append("")
    rows = [
        [
            r["instance"],
            r["verifier"],
            r["expected_accepted"],
            f"{r['expected_accepted_float']:.4f}",
            "yes" if r["agrees"] else "**NO**",
        ]
        for r in records
    ]
    out.append(table(["instance", "verifier", "E[K] exact", "E[K]", "tail sum agrees"], rows))
    return "\n".join(out)


def _optimum(records: list[dict[str, Any]]) -> str:
    out = ["## One-node acceptance against the optimum", ""]
    out.append(
        "The probability that the first committed token is a draft, for a node with k children, "
        "against alpha* = max over lossless couplings (closed form, checked by scipy's LP)."
    )
    out.append("")
    rows = [
        [
            r["instance"],
            r["law"],
            r["k"],
            r["verifier"],
            r["acceptance"],
            f"{r['acceptance_float']:.4f}",
            r["optimum"],
            f"{r['gap']:.4f}",
        ]
        for r in records
    ]
    out.append(table(["instance", "law", "k", "verifier", "acceptance", "≈", "alpha*", "gap"], rows))
    return "\n".join(out)


def _smt(records: list[dict[str, Any]]) -> str:
    out = ["## SMT: masks, positions, crops and trees", ""]
    out.append(
        "Each convention checked by z3 against its obligation for all sizes (trees: an inductive step "
        "plus every tree up to the stated size). Certificates replayable with any SMT solver are in "
        "`proofs/smt/`."
    )
    out.append("")
    rows = [
        [
            r["name"],
            r["obligation"],
            r["convention"],
            ("**" + r["verdict"] + "**") if not r["ok"] else r["verdict"],
            r["expected"],
            f"{r['seconds'] * 1000:.1f} ms",
            r.get("counterexample", ""),
        ]
        for r in records
    ]
    out.append(
        table(["entry", "obligation", "convention", "verdict", "expected", "time", "counterexample"], rows)
    )
    return "\n".join(out)


def _conformance(records: list[dict[str, Any]]) -> str:
    out = ["## Conformance of the built-in engines (tiny seeded models)", ""]
    rows = []
    for r in records:
        checks = r.get("checks") or {}
        detail = ", ".join(f"{k} {v}" for k, v in checks.items()) if checks else r.get("reason", "")
        verdict = r["verdict"] if r["verdict"] in (RunVerdict.PASS, Status.SKIP) else f"**{r['verdict']}**"
        link = f"[report]({r['report']})" if r.get("report") else ""
        rows.append([r["engine"], verdict, r.get("wall_seconds", ""), detail, link])
    out.append(table(["engine", "verdict", "seconds", "checks", "details"], rows))
    return "\n".join(out)


def _controls(records: list[dict[str, Any]]) -> str:
    out = ["## Negative controls", ""]
    for r in records:
        detection = r.get("samples_to_detection") or {}
        verdict = r["verdict"] if r["verdict"] == RunVerdict.PASS else f"**{r['verdict']}**"
        outcomes = ", ".join(f"{k} {v}" for k, v in r["outcomes"].items())
        out.append(f"- verdict: {verdict}; outcomes: {outcomes}")
        if detection.get("engine_mutants"):
            out.append(
                f"- engine mutants: {detection['statistically_caught']} of {detection['engine_mutants']} "
                f"caught by a check (not by a crash); generate calls to detection: median "
                f"{detection['median_generate_calls']}, max {detection['max_generate_calls']}"
            )
        for key, label in (("escaped", "not caught"), ("flagged_subjects", "correct subjects flagged")):
            if r.get(key):
                out.append(f"- **{label}**: " + ", ".join(f"`{n}`" for n in r[key]))
        if r.get("not_run"):
            out.append(f"- not run in this mode: {len(r['not_run'])} (listed in the controls report)")
        if r.get("report"):
            out.append(f"- detection matrix: [{r['report']}]({r['report']})")
    return "\n".join(out)


def _generic(name: str, records: list[dict[str, Any]]) -> str:
    out = [f"## {name}", ""]
    for r in records:
        out.append(f"- `{r}`")
    return "\n".join(out)


_RENDERERS: dict[str, Callable[[list[dict[str, Any]]], str]] = {
    "prove": _prove,
    "smt": _smt,
    "theorems": _theorems,
    "articles": _articles,
    "lengths": _lengths,
    "optimum": _optimum,
    "conformance": _conformance,
    "controls": _controls,
}


def render(data: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    env = data.get("environment", {})
    status = data.get("status")
    verdict = data.get("verdict")
    head = [
        "# verispec report",
        "",
        f"- status: **{status}**"
        + (f", verdict: **{verdict}**" if verdict else " (partial: the run has not finished)"),
        f"- command: `{' '.join(data.get('command', []))}`",
        f"- started: {data.get('started')}"
        + (f", finished: {data['finished']}" if data.get("finished") else ""),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in env.items() if v and k not in ("platform",)),
        f"- platform: {env.get('platform')}",
        f"- settings: `{data.get('settings')}`",
    ]
    summary = data.get("summary")
    if summary:
        head.append("- summary: " + ", ".join(f"{k}: {v}" for k, v in summary.items()))
    sections = data.get("sections", {})
    links = [
        f"[{name}: {r['engine']}]({r['report']})" if "engine" in r else f"[{name}]({r['report']})"
        for name in ("controls", "conformance")
        for r in sections.get(name, [])
        if r.get("report")
    ]
    if links:
        head.append("- detailed reports: " + ", ".join(links))
    parts = ["\n".join(head)]
    ordered = [n for n in _RENDERERS if n in sections] + [n for n in sections if n not in _RENDERERS]
    for name in ordered:
        records = sections[name]
        renderer = _RENDERERS.get(name)
        parts.append(renderer(records) if renderer else _generic(name, records))
    return "\n\n".join(parts) + "\n"
