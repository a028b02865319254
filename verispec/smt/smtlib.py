"""A deterministic SMT-LIB 2 printer for the z3 queries of the obligations.

z3's own printer introduces ``let`` bindings for subterms that are shared anywhere in the
process, so its output depends on what else was built before. This printer depends only on
the query: shared subterms (within the query) become ``define-fun`` definitions numbered in
depth-first order, so the same query always prints the same text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_smtlib"]

_OPS = {"if": "ite", "=>": "=>", "iff": "=", "implies": "=>"}


def _sort(sort: Any) -> str:
    import z3  # deferred: heavy

    if sort.kind() == z3.Z3_ARRAY_SORT:
        return f"(Array {_sort(sort.domain())} {_sort(sort.range())})"
    return str(sort.sexpr())


def to_smtlib(assertions: list[Any], *, status: str = "unknown") -> str:
    """The SMT-LIB 2 script that asserts ``assertions`` and checks satisfiability."""
    import z3  # deferred: heavy

    counts: dict[int, int] = {}
    order: list[Any] = []
    decls: dict[str, str] = {}

    def visit(e: Any) -> None:
        key = e.get_id()
        counts[key] = counts.get(key, 0) + 1
        if counts[key] > 1:
            return
        if z3.is_const(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            decls.setdefault(e.decl().name(), f"(declare-fun {e.decl().name()} () {_sort(e.sort())})")
            return
        if z3.is_app(e) and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            d = e.decl()
            domain = " ".join(_sort(d.domain(i)) for i in range(d.arity()))
            decls.setdefault(d.name(), f"(declare-fun {d.name()} ({domain}) {_sort(d.range())})")
        for child in e.children():
            visit(child)
        order.append(e)

    for a in assertions:
        visit(a)
    names: dict[int, str] = {}
    defines: list[str] = []

    def show(e: Any) -> str:
        key = e.get_id()
        if key in names:
            return names[key]
        if z3.is_int_value(e):
            value = e.as_long()
            return str(value) if value >= 0 else f"(- {-value})"
        if z3.is_true(e):
            return "true"
        if z3.is_false(e):
            return "false"
        if z3.is_const(e):
            return str(e.decl().name())
        op = e.decl().name()
        op = _OPS.get(op, op)
        return f"({op} {' '.join(show(c) for c in e.children())})"

    for e in order:
        if counts[e.get_id()] > 1 and e.num_args() > 0:
            text = show(e)
            name = f"t{len(defines) + 1}"
            defines.append(f"(define-fun {name} () {_sort(e.sort())} {text})")
            names[e.get_id()] = name
    lines = [f"(set-info :status {status})", *decls.values(), *defines]
    lines += [f"(assert {show(a)})" for a in assertions]
    lines.append("(check-sat)")
    return "\n".join(lines) + "\n"
