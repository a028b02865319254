"""The main report as one self-contained HTML page.

The page is the report's Markdown (:mod:`verispec.report.markdown`) turned into HTML by a
converter for the subset that renderer writes: headings, paragraphs, bullet lists, fenced
code, pipe tables, and inline code, bold, italics and links. It has no external resources; links to
the conformance and controls sub-reports are relative, so the folder can be moved whole.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from verispec.report.markdown import render as markdown

__all__ = ["markdown_to_html", "render"]

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:12px}
code{font-size:12px}
"""

#: outside code spans: bold, italics and links
_INLINE = [
    (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"\*([^*\s][^*]*)\*"), r"<em>\1</em>"),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r'<a href="\2">\1</a>'),
]


def _inline(text: str) -> str:
    out = _html.escape(text, quote=True)
    # code spans first, and nothing inside them is formatted
    pieces = re.split(r"(`[^`]+`)", out)
    for i, piece in enumerate(pieces):
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            pieces[i] = f"<code>{piece[1:-1]}</code>"
        else:
            for pattern, replacement in _INLINE:
                piece = pattern.sub(replacement, piece)
            pieces[i] = piece
    return "".join(pieces)


def _row(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def markdown_to_html(text: str) -> str:
    """HTML for the Markdown subset verispec's reports use."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + _html.escape("\n".join(lines[i + 1 : j])) + "</pre>")
            i = j + 1
            continue
        heading = re.match(r"(#{1,6}) (.*)", line)
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"\|(-+\|)+$", lines[i + 1]):
            head = "".join(f"<th>{_inline(c)}</th>" for c in _row(line))
            body = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                body.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in _row(lines[i])) + "</tr>")
                i += 1
            out.append(f"<table><tr>{head}</tr>{''.join(body)}</table>")
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append(f"<ul>{''.join(items)}</ul>")
            continue
        elif line.strip():
            paragraph = [line]
            while i + 1 < len(lines) and lines[i + 1].strip() and not _starts_block(lines[i + 1]):
                i += 1
                paragraph.append(lines[i])
            out.append(f"<p>{_inline(' '.join(paragraph))}</p>")
        i += 1
    return "\n".join(out)


def _starts_block(line: str) -> bool:
    return line.startswith(("#", "|", "- ", "```"))


def render(data: dict[str, Any]) -> str:
    """The whole report (the same document as ``report.md``) as one HTML page."""
    verdict = data.get("verdict") or "running"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>verispec report: {_html.escape(str(verdict))}</title>
<style>{_STYLE}</style></head><body>
{markdown_to_html(markdown(data))}
</body></html>
"""
