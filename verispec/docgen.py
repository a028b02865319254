"""The docs tables that list registered things, generated from the registries.

Each table sits in a docs page between two markers::

    <!-- BEGIN GENERATED: checks (python -m verispec.docgen) -->
    ...
    <!-- END GENERATED: checks -->

``python -m verispec.docgen`` rewrites every block; ``python -m verispec.docgen --check``
(and a test) fails when one is stale, naming the file and the block. The prose around the
blocks is written by hand.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from verispec.conformance.checks import checks as all_checks
from verispec.controls.mutants import api_controls as api_control_records
from verispec.controls.mutants import catalog
from verispec.engines import registry as engine_registry
from verispec.engines.protocol import CAPABILITIES
from verispec.exact.symbolic import theorems
from verispec.report.markdown import table
from verispec.verifiers import registry

__all__ = ["BLOCKS", "main", "render", "stale"]

ROOT = Path(__file__).resolve().parents[1]


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    return str(table(list(header), [[str(c) for c in row] for row in rows]))


def _code(text: str) -> str:
    return f"`{text}`"


def _theorem_proofs() -> dict[str, list[str]]:
    by_verifier: dict[str, list[str]] = {}
    for t in theorems():
        for name in t.verifiers:
            by_verifier.setdefault(name, [])
            if t.proof not in by_verifier[name]:
                by_verifier[name].append(t.proof)
    return by_verifier


def _proof(name: str, proofs: dict[str, list[str]]) -> str:
    files = proofs.get(name)
    return "symbolic (" + ", ".join(f"`proofs/{f}`" for f in files) + ")" if files else "bounded"


def _settings(entry: object) -> str:
    return "; ".join(s.describe() for s in entry.settings)  # type: ignore[attr-defined]


def chain_verifiers() -> str:
    proofs = _theorem_proofs()
    rows = [
        [_code(v.name), v.drafter, v.summary, v.source, _proof(v.name, proofs), _settings(v)]  # type: ignore[union-attr]
        for v in registry.verifiers("exact", "chain")
    ]
    return _table(["name", "drafter", "what it does", "source", "proof", "checked under"], rows)


def chain_controls() -> str:
    rows = [
        [_code(v.name), v.drafter, v.summary, v.source, _settings(v)]  # type: ignore[union-attr]
        for v in registry.verifiers("control", "chain")
    ]
    return _table(["name", "drafter", "mechanism", "source", "refuted under"], rows)


def tree_verifiers() -> str:
    proofs = _theorem_proofs()
    rows = [
        [_code(v.name), ", ".join(v.laws), v.summary, v.source, _proof(v.name, proofs)]  # type: ignore[union-attr]
        for v in registry.verifiers("exact", "tree")
    ]
    return _table(["name", "meant for", "what it does", "source", "proof"], rows)


def tree_controls() -> str:
    rows = [
        [_code(v.name), ", ".join(v.laws), v.summary, v.source]  # type: ignore[union-attr]
        for v in registry.verifiers("control", "tree")
    ]
    return _table(["name", "wrong under", "mechanism", "source"], rows)


def checks() -> str:
    rows = [
        [
            c.name,
            c.family,
            c.description,
            ", ".join([*sorted(c.needs), *([" or ".join(sorted(c.needs_one_of))] if c.needs_one_of else [])])
            or "none",
            "yes" if c.statistical else "no",
            c.effect.describe(),
            ", ".join(_code(m.split(":", 1)[1]) for m in c.mutants),
        ]
        for c in all_checks()
    ]
    return _table(
        [
            "check",
            "family",
            "what it tests",
            "needs",
            "statistical",
            "declared effect",
            "planted bugs it must catch",
        ],
        rows,
    )


def capabilities() -> str:
    rows = [
        [_code(name), promise, ", ".join(c.name for c in all_checks() if name in c.needs | c.needs_one_of)]
        for name, promise in CAPABILITIES.items()
    ]
    return _table(["capability", "what the engine promises", "checks that need it"], rows)


def engines() -> str:
    rows = [
        [
            _code(e.name),
            e.summary,
            e.install if e.extra in engine_registry.EXTRA_INSTALL else f"`{e.install}`" if e.install else "",
            ", ".join(sorted(e.capabilities)),
            len(e.mutants),
        ]
        for e in engine_registry.engines()
    ]
    return _table(["engine", "what it is", "needs", "capabilities", "planted bugs (--mutation)"], rows)


def controls() -> str:
    rows = [
        [
            _code(m.name),
            m.mechanism,
            m.source,
            ", ".join(f"{c} ({m.evidence_for(c)})" for c in m.caught_by)
            if m.layer == "engine"
            else "exact checker"
            if m.layer == "verifier"
            else "z3",
            " + ".join(seam for seam in (m.hook, *m.alongside) if seam),
        ]
        for m in catalog()
    ]
    return _table(["control", "mechanism", "source", "caught by (through)", "seam replaced"], rows)


def api_controls() -> str:
    rows = [
        [_code(m.name), ", ".join(f"{c} ({m.evidence_for(c)})" for c in seen) or f"not seen: {why}"]
        for m, seen, why in api_control_records()
    ]
    return _table(["control", "caught through the API by (through)"], rows)


#: (file, block name, renderer) for every generated block.
BLOCKS: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("docs/reference/verifiers.md", "chain-verifiers", chain_verifiers),
    ("docs/reference/verifiers.md", "chain-controls", chain_controls),
    ("docs/reference/verifiers.md", "tree-verifiers", tree_verifiers),
    ("docs/reference/verifiers.md", "tree-controls", tree_controls),
    ("docs/explanation/conformance.md", "checks", checks),
    ("docs/reference/engine-protocol.md", "engines", engines),
    ("docs/reference/engine-protocol.md", "capabilities", capabilities),
    ("docs/reference/controls.md", "controls", controls),
    ("docs/reference/controls.md", "api-controls", api_controls),
)


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- BEGIN GENERATED: {re.escape(name)} \(python -m verispec.docgen\) -->\n)(.*?)"
        rf"(<!-- END GENERATED: {re.escape(name)} -->)",
        re.S,
    )


def render(text: str, name: str, body: str, path: str = "") -> str:
    """``text`` with block ``name`` replaced by ``body``; a missing block is an error."""
    pattern = _pattern(name)
    if not pattern.search(text):
        raise ValueError(f"{path or 'the page'} has no generated block {name!r}")
    return pattern.sub(lambda m: m.group(1) + body.rstrip() + "\n" + m.group(3), text)


def stale(root: Path = ROOT) -> list[str]:
    """``file: block`` for every generated block that differs from the registries."""
    out = []
    for path, name, renderer in BLOCKS:
        text = (root / path).read_text(encoding="utf-8")
        if render(text, name, renderer(), path) != text:
            out.append(f"{path}: {name}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--check"]:
        found = stale()
        for item in found:
            print(f"stale generated block: {item} (run python -m verispec.docgen)")
        return 1 if found else 0
    for path, name, renderer in BLOCKS:
        page = ROOT / path
        page.write_text(render(page.read_text(encoding="utf-8"), name, renderer(), path), encoding="utf-8")
    print(f"wrote {len(BLOCKS)} generated blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
