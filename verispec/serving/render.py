"""The serve report as Markdown, HTML and SVG plots, drawn from its JSON (``ServeResult.to_json()``)."""

from __future__ import annotations

import html as _html
from typing import Any

from verispec.conformance.render import bar_chart
from verispec.report.markdown import table
from verispec.serving.statistics import DECILES, modelled_speedup

__all__ = ["ARTICLE_DRAFT_COSTS", "html", "markdown", "ms", "plots"]

#: Draft costs of the derived article's modelled speedup table (a draft step's time relative
#: to a target step), shown beside the measured speedups at the measured acceptance.
ARTICLE_DRAFT_COSTS = (0.0, 0.05, 0.1, 0.3)


def ms(x: float | None) -> str:
    """A time in seconds as the report prints it: milliseconds to one decimal, ``n/a`` for none."""
    return "n/a" if x is None else f"{x * 1e3:.1f}"


def _stream_table(speed: dict[str, Any]) -> str:
    """Per prompt kind: what a streaming user sees in each arm (or why it was not measured)."""
    if "reason" in speed["all"]["speculative"]["stream"]:
        return f"- stream: {speed['all']['speculative']['stream']['reason']}"

    def pair(arm: dict[str, Any], key: str) -> str:
        return f"{ms(arm.get(key + '_p50_s'))} / {ms(arm.get(key + '_p95_s'))}"

    keys = ("time_to_first_token", "inter_token", "delivery_wait")
    rows = [
        [kind, *[pair(s[arm]["stream"], key) for key in keys for arm in ("speculative", "baseline")]]
        for kind, s in speed.items()
    ]
    return table(
        [
            "prompts",
            "first token p50 / p95 ms, speculative",
            "baseline",
            "inter-token p50 / p95 ms, speculative",
            "baseline",
            "wait between deliveries p50 / p95 ms, speculative",
            "baseline",
        ],
        rows,
    )


def _modelled_table(draft_lengths: list[dict[str, Any]]) -> list[str]:
    """The derived article's modelled speedup ``E[K] / (g c + 1)`` (independent acceptance at
    rate ``a``, a draft step costing ``c`` target steps) at the measured ``a``, for the
    article's draft costs and the implied one, beside the measured speedup."""
    rows = []
    for g in draft_lengths:
        r, s = g["rounds"], g["test"]["all"]
        if not r.get("rounds") or "implied_draft_cost_c" not in r:
            continue
        a, gamma, c = r["acceptance_rate"], g["gamma"], r["implied_draft_cost_c"]
        rows.append(
            [
                gamma,
                f"{s['speedup']:.3f} [{s['speedup_interval'][0]:.3f}, {s['speedup_interval'][1]:.3f}]",
                f"{a:.3f}",
                f"{c:.3f}",
                f"{r['modelled_speedup']:.3f}",
                *[f"{modelled_speedup(a, gamma, cost):.2f}" for cost in ARTICLE_DRAFT_COSTS],
            ]
        )
    if not rows:
        return []
    return [
        "## Measured against the modelled speedup",
        "",
        "The derived article models the speedup as E[K] / (g c + 1), E[K] = (1 - a^(g+1)) / (1 - a) "
        "(its table: a = 0.8, the costs below). Here a is the measured per-position acceptance and c the "
        "draft cost implied by the measured round cost (a round costs g c + 1 baseline tokens); the "
        "article's columns put the measured a beside its costs. A modelled figure far from the measured "
        "one says the model's assumptions (independent acceptance, verification as cheap as one step) "
        "do not hold on this engine.",
        "",
        table(
            [
                "gamma",
                "measured speedup [95%]",
                "a",
                "implied c",
                "modelled at a, c",
                *[f"modelled, c = {cost:g}" for cost in ARTICLE_DRAFT_COSTS],
            ],
            rows,
        ),
        "",
    ]


def markdown(data: dict[str, Any]) -> str:
    lines = [
        f"# Serving measurement of `{data['engine']}` ({data['name']}): **{data['verdict']}**",
        "",
        f"- sampling {data['sampling']}; output budget {data['max_new_tokens']} tokens; seed {data['seed']}; "
        f"reproduce with `{data['reproduce']}`",
        "- times are the engine's own per request (single-request load, speculative and baseline "
        "interleaved, one warm-up request per arm discarded); time per token is cumulative time over "
        "committed tokens; intervals are 95% percentile bootstraps over requests",
        *[f"- **{c}**" for c in data["contract"]],
        *(
            [f"- chosen draft length (tuning requests): {data['chosen_gamma']}"]
            if data["chosen_gamma"]
            else []
        ),
        "",
    ]
    for g in data["draft_lengths"]:
        lines += [f"## gamma {g['gamma']}", ""]
        rows = []
        for kind, s in g["test"].items():
            sp, bs = s["speculative"], s["baseline"]
            rows.append(
                [
                    kind,
                    sp["requests"],
                    f"{sp['time_per_token_s'] * 1e3:.3f} [{sp['time_per_token_interval_s'][0] * 1e3:.3f}, "
                    f"{sp['time_per_token_interval_s'][1] * 1e3:.3f}]",
                    f"{bs['time_per_token_s'] * 1e3:.3f} [{bs['time_per_token_interval_s'][0] * 1e3:.3f}, "
                    f"{bs['time_per_token_interval_s'][1] * 1e3:.3f}]",
                    f"{s['speedup']:.3f} [{s['speedup_interval'][0]:.3f}, {s['speedup_interval'][1]:.3f}]",
                    f"{sp['latency_p50_s'] * 1e3:.1f} / {sp['latency_p95_s'] * 1e3:.1f}",
                    f"{bs['latency_p50_s'] * 1e3:.1f} / {bs['latency_p95_s'] * 1e3:.1f}",
                    f"{sp['committed_tokens']} / {bs['committed_tokens']}",
                    f"{sp['stopped_at_eos']} / {bs['stopped_at_eos']}",
                ]
            )
        lines.append(
            table(
                [
                    "prompts",
                    "requests",
                    "ms per token, speculative",
                    "ms per token, baseline",
                    "speedup",
                    "latency p50 / p95 ms, speculative",
                    "baseline",
                    "committed tokens (spec / base)",
                    "stopped at EOS (spec / base)",
                ],
                rows,
            )
        )
        for s in g["test"].values():
            if s.get("length_disclosure"):
                lines.append(f"\n- disclosure: {s['length_disclosure']}")
                break
        lines += ["", _stream_table(g["test"])]
        r = g["rounds"]
        if r.get("rounds"):
            survival = ", ".join(f"{v:.3f}" for v in r["survival"])
            lines += [
                "",
                f"- rounds {r['rounds']}; survival P(A >= j), j = 1..{r['gamma']}: {survival}",
                f"- committed tokens per round: measured {r['committed_per_round']:.3f}; tail-sum identity "
                f"{r['tail_sum']:.3f} ({r['rounds_cut_short']} rounds cut short by EOS or the budget); "
                f"independent-acceptance formula {r['independent_formula']:.3f} at a = "
                f"{r['acceptance_rate']:.3f}",
                *(
                    [
                        "- by prompt kind, committed tokens per round (acceptance rate): "
                        + "; ".join(
                            f"{kind} {v['committed_per_round']:.3f} ({v['acceptance_rate']:.3f}, "
                            f"{v['rounds']} rounds)"
                            for kind, v in r["by_kind"].items()
                        )
                    ]
                    if r.get("by_kind")
                    else []
                ),
                f"- steps without drafts (one token each; the model covers rounds with drafts only): "
                f"{r['steps_without_drafts']}",
                f"- mean cost per step {r['round_cost_s'] * 1e3:.3f} ms; implied draft cost c = "
                f"{r['implied_draft_cost_c']:.3f} of a baseline token; modelled speedup "
                f"E[K] / (g c + 1) = {r['modelled_speedup']:.3f} against the measured "
                f"{g['test']['all']['speedup']:.3f}",
            ]
        else:
            lines += ["", f"- rounds: {r.get('reason', 'none reported')}"]
        c = g.get("concurrent", {})
        if "speedup_of_medians" in c:
            lines.append(
                f"- concurrent load ({c['requests']} requests in one batch, {c['repeats']} times per arm): "
                f"speedup of the medians {c['speedup_of_medians']:.3f}; ms per token speculative "
                f"{', '.join(f'{v * 1e3:.3f}' for v in c['time_per_token_s']['speculative'])}, baseline "
                f"{', '.join(f'{v * 1e3:.3f}' for v in c['time_per_token_s']['baseline'])}"
            )
            for arm in ("speculative", "baseline"):
                if arm in c:
                    st = c[arm]["stream"]
                    lines.append(
                        f"  - {arm} in the batch: latency p50 / p95 {ms(c[arm]['latency_p50_s'])} / "
                        f"{ms(c[arm]['latency_p95_s'])} ms; time to first token p50 / p95 "
                        f"{ms(st.get('time_to_first_token_p50_s'))} / "
                        f"{ms(st.get('time_to_first_token_p95_s'))} ms; inter-token p50 / p95 "
                        f"{ms(st.get('inter_token_p50_s'))} / "
                        f"{ms(st.get('inter_token_p95_s'))} ms"
                    )
        else:
            lines.append(f"- concurrent load: {c.get('reason', 'not measured')}")
        lines.append("")
    lines += _modelled_table(data["draft_lengths"])
    if data["length_rule"]:
        lines += ["## Draft-length rule (tuning requests)", ""]
        rows = [
            [
                f"{r['from']} -> {r['to']}",
                f"{r['dC'] * 1e3:.3f} [{r['dC_interval'][0] * 1e3:.3f}, {r['dC_interval'][1] * 1e3:.3f}]",
                f"{r['dK']:.3f} [{r['dK_interval'][0]:.3f}, {r['dK_interval'][1]:.3f}]",
                "" if r["dC_over_dK"] is None else f"{r['dC_over_dK'] * 1e3:.3f}",
                f"{r['C_over_K'] * 1e3:.3f}",
                r["decision"],
            ]
            if "dC" in r
            else [f"{r['from']} -> {r['to']}", "", "", "", "", f"{r['decision']}: {r.get('reason', '')}"]
            for r in data["length_rule"]
        ]
        lines.append(
            table(["gamma", "dC ms [95%]", "dK tokens [95%]", "dC / dK ms", "C / K ms", "decision"], rows)
        )
        lines.append(
            "\nworthwhile only where dC / dK < C / K, decided where the change in time per token "
            "has a 95% interval that excludes 0"
        )
    return "\n".join(lines) + "\n"


def plots(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's figures as ``(name, svg)``: per draft length the survival of the accepted
    length (measured beside independent acceptance), the request-latency deciles and the
    inter-token deciles of both arms."""
    out = []
    labels = [f"{q:.0%}" for q in DECILES]
    for g in data["draft_lengths"]:
        gamma, r, s = g["gamma"], g["rounds"], g["test"]["all"]
        if r.get("rounds"):
            a = r["acceptance_rate"]
            out.append(
                (
                    f"survival-gamma{gamma}",
                    bar_chart(
                        r["survival"],
                        [f"A>={j + 1}" for j in range(len(r["survival"]))],
                        f"gamma {gamma}: survival of the accepted length over {r['rounds']} rounds, "
                        "measured (blue) and under independent acceptance at the fitted rate (orange)",
                        second=[a ** (j + 1) for j in range(len(r["survival"]))],
                    ),
                )
            )
        out.append(
            (
                f"latency-gamma{gamma}",
                bar_chart(
                    [v * 1e3 for v in s["speculative"]["latency_deciles_s"]],
                    labels,
                    f"gamma {gamma}: request latency deciles in ms, speculative (blue) and baseline (orange)",
                    second=[v * 1e3 for v in s["baseline"]["latency_deciles_s"]],
                ),
            )
        )
        sp, bs = s["speculative"]["stream"], s["baseline"]["stream"]
        if sp.get("inter_token_deciles_s") and bs.get("inter_token_deciles_s"):
            out.append(
                (
                    f"inter-token-gamma{gamma}",
                    bar_chart(
                        [v * 1e3 for v in sp["inter_token_deciles_s"]],
                        labels,
                        f"gamma {gamma}: inter-token time deciles in ms (tokens of one delivery arrive "
                        "0 ms apart), speculative (blue) and baseline (orange)",
                        second=[v * 1e3 for v in bs["inter_token_deciles_s"]],
                    ),
                )
            )
    return out


def html(data: dict[str, Any]) -> str:
    body = _html.escape(markdown(data))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>verispec serve</title></head><body>"
        + "".join(svg for _, svg in plots(data))
        + f"<pre>{body}</pre></body></html>\n"
    )
