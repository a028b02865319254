"""Obligations on index functions, proved with z3 for unbounded integers.

Each :class:`Obligation` states, once, what an index function must satisfy, with its
preconditions. :func:`check` hands z3 the preconditions and the *negation* of the
property: ``unsat`` is a proof for all integers, ``sat`` gives a counterexample (minimised
so that it is readable), and a timeout or ``unknown`` is :class:`~verispec.verdicts.Unknown`,
never a pass.

Tree obligations come in two parts: an inductive step proved for all trees with
uninterpreted parent and depth functions, and an exhaustive check over every tree of up to
``N`` nodes (every parent array with ``parents[i] < i``, encoded symbolically so that one
query per ``N`` covers all ``(N-1)!`` trees).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from verispec.smt.smtlib import to_smtlib
from verispec.verdicts import Proved, Refuted, Unknown, Verdict

__all__ = ["OBLIGATIONS", "Obligation", "SmtResult", "SymbolicCallError", "check"]

#: Default solver timeout per query, in milliseconds.
DEFAULT_TIMEOUT_MS = 20_000


@dataclass(frozen=True)
class Query:
    """One z3 query: variables to report, preconditions, and the property that must hold."""

    variables: dict[str, Any]
    preconditions: list[Any]
    prop: Any
    minimize: tuple[str, ...] = ()


@dataclass(frozen=True)
class Obligation:
    """A property every implementation of one index function must have.

    ``build(fn)`` returns the z3 queries that together establish the property for ``fn``
    (one query for chain obligations; one per tree size for bounded tree obligations).
    ``signature`` documents how ``fn`` is called.
    """

    name: str
    statement: str
    signature: str
    build: Callable[[Callable[..., Any]], list[tuple[str, Query]]]
    scope: str = "all integers satisfying the preconditions"


@dataclass
class SmtResult:
    """The outcome of one obligation for one function."""

    obligation: str
    verdict: Verdict
    seconds: float
    counterexample: dict[str, Any] | None = None
    smt2: list[str] = field(default_factory=list)
    #: True when the function could not be evaluated on z3 terms at all.
    not_symbolic: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "obligation": self.obligation,
            "verdict": self.verdict.kind,
            "seconds": round(self.seconds, 4),
        }
        if isinstance(self.verdict, Proved):
            out["scope"] = self.verdict.scope
        if isinstance(self.verdict, Unknown):
            out["reason"] = self.verdict.reason
        if self.counterexample is not None:
            out["counterexample"] = self.counterexample
        return out


def _z3() -> Any:
    import z3  # deferred: heavy

    return z3


class SymbolicCallError(Exception):
    """The function under test cannot be evaluated on z3 terms."""


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn`` on symbolic arguments; explain the usual reasons it cannot be."""
    z3 = _z3()
    name = getattr(fn, "__qualname__", repr(fn))
    try:
        out = fn(*args)
    except z3.Z3Exception as exc:
        raise SymbolicCallError(
            f"{name} cannot be evaluated symbolically: {exc} (use plain operators and "
            "verispec.smt.portable.where/and_/or_ instead of if/and/or on its arguments)"
        ) from exc
    except TypeError as exc:
        raise SymbolicCallError(
            f"{name} uses an operation z3 cannot interpret: {exc} (for example // on z3 integers; "
            "use verispec.smt.portable.floordiv)"
        ) from exc
    return out


def _as_bool(value: Any, name: str) -> Any:
    z3 = _z3()
    if isinstance(value, bool):
        return z3.BoolVal(value)
    if isinstance(value, z3.BoolRef):
        return value
    raise SymbolicCallError(f"{name} returned {type(value).__name__} ({value!r}) where a boolean is required")


def _as_int(value: Any, name: str) -> Any:
    z3 = _z3()
    if isinstance(value, bool):
        raise SymbolicCallError(f"{name} returned a bool where an integer is required")
    if isinstance(value, int):
        return z3.IntVal(value)
    if isinstance(value, z3.ArithRef) and value.is_int():
        return value
    raise SymbolicCallError(
        f"{name} returned {type(value).__name__} ({value!r}) where an integer is required"
    )


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", repr(fn))


def _ints(*names: str) -> dict[str, Any]:
    z3 = _z3()
    return {n: z3.Int(n) for n in names}


# --------------------------------------------------------------------------- chain builders


def _visibility(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    v = _ints("L", "gamma", "row", "key")
    L, gamma, row, key = v["L"], v["gamma"], v["row"], v["key"]
    got = _as_bool(_call(fn, row, key, L, gamma), _name(fn))
    pre = [L >= 1, gamma >= 0, row >= 0, row <= gamma, key >= 0, key < L + gamma]
    # key j holds position j; query row r holds position L - 1 + r
    return [("", Query(v, pre, got == (key <= L - 1 + row), ("L", "gamma", "row", "key")))]


def _stale_tail(stale: bool) -> Callable[[Callable[..., Any]], list[tuple[str, Query]]]:
    def build(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
        z3 = _z3()
        v = _ints("L", "gamma", "row", "key_position", "stale_count")
        L, gamma, row, kp, t = v["L"], v["gamma"], v["row"], v["key_position"], v["stale_count"]
        qpos = L - 1 + row
        pre = [L >= 1, gamma >= 0, row >= 0, row <= gamma]
        if not stale:
            # every key is committed or in the block: positions 0 .. L-1+gamma
            pre += [t == 0, kp >= 0, kp <= L - 1 + gamma]
            prop = _as_bool(_call(fn, kp, qpos), _name(fn)) == (kp <= qpos)
        else:
            # t >= 1 cells left by the previous round's rejected drafts, positions L-1 .. L-2+t;
            # none may be visible to any query
            pre += [t >= 1, kp >= L - 1, kp <= L - 2 + t]
            prop = z3.Not(_as_bool(_call(fn, kp, qpos), _name(fn)))
        return [("", Query(v, pre, prop, ("L", "gamma", "row", "key_position", "stale_count")))]

    return build


def _crop(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    v = _ints("L", "gamma", "accepted")
    L, gamma, a = v["L"], v["gamma"], v["accepted"]
    kept = _as_int(_call(fn, L, gamma, a), _name(fn))
    pre = [L >= 1, gamma >= 0, a >= 0, a <= gamma]
    # keep exactly prefix + pending + accepted: slots [0, L + a); drop the rejected draft
    return [("", Query(v, pre, kept == L + a, ("L", "gamma", "accepted")))]


def _draft_sync(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    v = _ints("L", "gamma", "accepted")
    L, gamma, a = v["L"], v["gamma"], v["accepted"]
    out = _call(fn, L, gamma, a)
    if not isinstance(out, tuple) or len(out) != 2:
        raise SymbolicCallError(f"{_name(fn)} must return (crop_length, catch_up), got {out!r}")
    crop, catch_up = _as_int(out[0], _name(fn)), _as_int(out[1], _name(fn))
    pre = [L >= 1, gamma >= 1, a >= 0, a <= gamma]
    # the draft cache holds L - 1 + gamma entries (d_gamma is never fed); afterwards it must
    # cover exactly the committed tokens that have KV: [0, L + a)
    prop = z3.And(crop >= 0, crop <= L - 1 + gamma, crop <= L + a, catch_up >= 0, crop + catch_up == L + a)
    return [("", Query(v, pre, prop, ("L", "gamma", "accepted")))]


def _positions(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    v = _ints("L", "accepted", "row")
    L, a, row = v["L"], v["accepted"], v["row"]
    # the round after one that committed a + 1 tokens starts at L' = L + a + 1
    got = _as_int(_call(fn, row, L + a + 1), _name(fn))
    pre = [L >= 1, a >= 0, row >= 0]
    return [("", Query(v, pre, got == L + a + row, ("L", "accepted", "row")))]


def _truncation(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    v = _ints("block_len", "eos_index", "budget")
    n, eos, budget = v["block_len"], v["eos_index"], v["budget"]
    got = _as_int(_call(fn, n, eos, budget), _name(fn))
    pre = [n >= 1, eos >= 0, eos <= n, budget >= 1]
    # never past the budget, never past the first EOS, and nothing allowed is dropped
    allowed = z3.If(z3.If(n <= eos + 1, n, eos + 1) <= budget, z3.If(n <= eos + 1, n, eos + 1), budget)
    return [("", Query(v, pre, got == allowed, ("block_len", "eos_index", "budget")))]


def _paged_slots(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    v = _ints("page_size", "pos1", "pos2")
    b, p1, p2 = v["page_size"], v["pos1"], v["pos2"]
    table = z3.Array("block_table", z3.IntSort(), z3.IntSort())
    s1, s2 = _as_int(_call(fn, p1, b, table), _name(fn)), _as_int(_call(fn, p2, b, table), _name(fn))
    pre = [
        b >= 1,
        p1 >= 0,
        p2 >= 0,
        p1 != p2,
        table[p1 / b] >= 0,
        table[p2 / b] >= 0,
        z3.Implies(p1 / b != p2 / b, table[p1 / b] != table[p2 / b]),  # the block table is injective
    ]
    return [("", Query(v, pre, s1 != s2, ("page_size", "pos1", "pos2")))]


def _paged_crop(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    v = _ints("page_size", "kept", "pos")
    b, n, pos = v["page_size"], v["kept"], v["pos"]
    pages = _as_int(_call(fn, n, b), _name(fn))
    pre = [b >= 1, n >= 0, pos >= 0]
    # a kept position lives in a kept page, and a kept page holds at least one kept position
    prop = z3.And(z3.Implies(pos < n, pos / b < pages), z3.Implies(pos / b < pages, pos / b * b < n))
    return [("", Query(v, pre, prop, ("page_size", "kept", "pos")))]


def _batch_offsets(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    v = _ints("offset0", "offset1", "accepted0", "accepted1")
    offsets, accepted = (v["offset0"], v["offset1"]), (v["accepted0"], v["accepted1"])
    out = _call(fn, offsets, accepted)
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise SymbolicCallError(f"{_name(fn)} must return one offset per row, got {out!r}")
    new = [_as_int(o, _name(fn)) for o in out]
    pre = [offsets[0] >= 0, offsets[1] >= 0, accepted[0] >= 0, accepted[1] >= 0]
    prop = z3.And(*(new[i] == offsets[i] + accepted[i] + 1 for i in range(2)))
    return [("", Query(v, pre, prop, tuple(v)))]


def _compaction(order: str) -> Callable[[Callable[..., Any]], list[tuple[str, Query]]]:
    """In-place copy of the accepted path's KV; ``order`` is the order of the copies."""

    def build(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
        z3 = _z3()
        queries = []
        for n in range(1, MAX_PATH + 1):
            v = _ints("L", *(f"r{j}" for j in range(n + 1)))
            L = v["L"]
            rows = [v[f"r{j}"] for j in range(n + 1)]
            plans = [tuple(_as_int(x, _name(fn)) for x in _call(fn, j, rows[j], L)) for j in range(n + 1)]
            pre = [L >= 1, rows[0] == 0, *(rows[j + 1] > rows[j] for j in range(n))]
            copies = list(range(n + 1)) if order == "ascending" else list(range(n, -1, -1))
            safe = []
            for step, j in enumerate(copies):
                src_j = plans[j][0]
                for earlier in copies[:step]:
                    safe.append(plans[earlier][1] != src_j)  # a source is read before it is overwritten
                safe.append(plans[j][1] == L - 1 + j)  # lands at its compacted slot
            queries.append(
                (f"path of {n + 1}", Query(v, pre, z3.And(*safe), ("L", *(f"r{j}" for j in range(n + 1)))))
            )
        return queries

    return build


#: Longest accepted path (nodes after the root) the compaction order is checked for.
MAX_PATH = 8


def _compaction_step(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    """Inductive step: strictly increasing rows with r(0) = 0 satisfy r(j) >= j, so dst <= src."""
    z3 = _z3()
    v = _ints("j", "L")
    j, L = v["j"], v["L"]
    r = z3.Function("r", z3.IntSort(), z3.IntSort())
    src, dst = (_as_int(x, _name(fn)) for x in _call(fn, j + 1, r(j + 1), L))
    pre = [L >= 1, j >= 0, r(j) >= j, r(j + 1) > r(j)]
    return [("", Query(v, pre, z3.And(r(j + 1) >= j + 1, dst <= src), ("j", "L")))]


# ---------------------------------------------------------------------------- tree builders

#: Largest tree (in nodes) the bounded tree obligations enumerate.
MAX_TREE_NODES = 10


def _symbolic_tree(n: int) -> tuple[Any, list[Any], list[Any]]:
    """A z3 array of parents for an ``n``-node tree: ``parents[0] = -1``, ``0 <= parents[i] < i``."""
    z3 = _z3()
    arr = z3.Array(f"parents{n}", z3.IntSort(), z3.IntSort())
    pvars = [z3.Select(arr, i) for i in range(n)]
    pre = [pvars[0] == -1, *(z3.And(pvars[i] >= 0, pvars[i] < i) for i in range(1, n))]
    return arr, pvars, pre


def _ancestors_spec(pvars: list[Any], n: int) -> list[list[Any]]:
    """anc[x][y]: y is x or an ancestor of x, built by dynamic programming over parent < child."""
    z3 = _z3()
    anc: list[list[Any]] = []
    for x in range(n):
        row = []
        for y in range(n):
            if x == 0:
                row.append(z3.BoolVal(y == 0))
            else:
                row.append(z3.Or(z3.BoolVal(x == y), *(z3.And(pvars[x] == k, anc[k][y]) for k in range(x))))
        anc.append(row)
    return anc


def _depth_spec(pvars: list[Any], n: int) -> list[Any]:
    z3 = _z3()
    depth: list[Any] = [z3.IntVal(0)]
    for x in range(1, n):
        expr = depth[0] + 1
        for k in range(1, x):
            expr = z3.If(pvars[x] == k, depth[k] + 1, expr)
        depth.append(expr)
    return depth


def _tree_visibility(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    queries = []
    for n in range(2, MAX_TREE_NODES + 1):
        arr, pvars, pre = _symbolic_tree(n)
        anc = _ancestors_spec(pvars, n)
        eqs = []
        for x in range(n):
            for y in range(n):
                got = _as_bool(_call(fn, arr, z3.IntVal(x), z3.IntVal(y), n - 1), _name(fn))
                eqs.append(got == anc[x][y])
        queries.append((f"{n} nodes", Query({"parents": arr}, pre, z3.And(*eqs))))
    return queries


def _tree_positions(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    z3 = _z3()
    queries = []
    for n in range(2, MAX_TREE_NODES + 1):
        arr, pvars, pre = _symbolic_tree(n)
        L = z3.Int("L")
        depth = _depth_spec(pvars, n)
        eqs = [
            _as_int(_call(fn, arr, z3.IntVal(x), L, n - 1), _name(fn)) == L - 1 + depth[x] for x in range(n)
        ]
        queries.append((f"{n} nodes", Query({"parents": arr, "L": L}, [*pre, L >= 1], z3.And(*eqs))))
    return queries


def _tree_mask_step(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    """Inductive step of the row-OR mask construction (row[x] = row[parent(x)] | {x})."""
    z3 = _z3()
    v = _ints("x", "y")
    x, y = v["x"], v["y"]
    parent = z3.Function("parent", z3.IntSort(), z3.IntSort())
    mask = z3.Function("mask", z3.IntSort(), z3.IntSort(), z3.BoolSort())
    pre = [
        x >= 1,
        parent(x) >= 0,
        parent(x) < x,
        mask(x, y) == z3.Or(y == x, mask(parent(x), y)),  # the construction
        z3.Implies(mask(parent(x), y), z3.And(y >= 0, y <= parent(x))),  # induction hypothesis
    ]
    return [("", Query(v, pre, z3.Implies(mask(x, y), z3.And(y >= 0, y <= x)), ("x", "y")))]


def _tree_position_step(fn: Callable[..., Any]) -> list[tuple[str, Query]]:
    """Inductive step: depth(x) = depth(parent(x)) + 1 puts a child one position after its parent."""
    z3 = _z3()
    v = _ints("x", "L")
    x, L = v["x"], v["L"]
    parent = z3.Function("parent", z3.IntSort(), z3.IntSort())
    depth = z3.Function("depth", z3.IntSort(), z3.IntSort())
    pre = [
        L >= 1,
        x >= 1,
        parent(x) >= 0,
        parent(x) < x,
        depth(x) == depth(parent(x)) + 1,
        depth(parent(x)) >= 0,
    ]
    prop = z3.And(L - 1 + depth(x) == L - 1 + depth(parent(x)) + 1, L - 1 + depth(x) >= L)
    return [("", Query(v, pre, prop, ("x", "L")))]


OBLIGATIONS: dict[str, Obligation] = {
    o.name: o
    for o in [
        Obligation(
            "visibility",
            "In a verify pass (gamma+1 queries, L+gamma keys, contiguous cache) query row r sees key j "
            "exactly when j's position is at most the query's position L-1+r.",
            "visible(row, key, L, gamma) -> bool",
            _visibility,
        ),
        Obligation(
            "position-mask",
            "A position-anchored mask over a cache with no stale tail: a key is visible exactly when its "
            "position is at most the query's.",
            "mask(key_position, query_position) -> bool",
            _stale_tail(False),
        ),
        Obligation(
            "position-mask-stale-tail",
            "A position-anchored mask over a cache still holding t >= 1 cells of the previous round's "
            "rejected drafts (positions L-1 .. L-2+t): no query may see them.",
            "mask(key_position, query_position) -> bool",
            _stale_tail(True),
        ),
        Obligation(
            "crop",
            "After accepting a of gamma drafts the target cache keeps exactly L+a entries: the prefix, the "
            "pending token and the accepted drafts, and not the rejected draft.",
            "crop(L, gamma, accepted) -> kept length",
            _crop,
        ),
        Obligation(
            "draft-sync",
            "The draft cache (L-1+gamma entries: d_gamma is never fed) is cropped and caught up so that it "
            "covers exactly the committed tokens with KV, [0, L+a), including after full acceptance.",
            "draft_sync(L, gamma, accepted) -> (crop_length, catch_up)",
            _draft_sync,
        ),
        Obligation(
            "positions",
            "After a round that committed a+1 tokens, query row r of the next round sits at absolute "
            "position L+a+r (the new pending token at L'-1).",
            "position(row, L) -> int",
            _positions,
        ),
        Obligation(
            "truncation",
            "A committed block is cut after its first EOS and at the remaining token budget, and nothing "
            "allowed is dropped.",
            "committed_count(block_len, eos_index, budget) -> int",
            _truncation,
        ),
        Obligation(
            "paged-slots",
            "With an injective block table, distinct positions map to distinct physical slots "
            "(slot = table[pos // B] * B + pos % B, symbolic page size B).",
            "slot(pos, page_size, block_table) -> int",
            _paged_slots,
        ),
        Obligation(
            "paged-crop",
            "After cropping to n entries, the pages kept hold every kept position, and every page kept "
            "holds a kept position (symbolic page size).",
            "pages(length, page_size) -> int",
            _paged_crop,
        ),
        Obligation(
            "batch-offsets",
            "In a batch with ragged acceptance each row's cache offset advances by its own accepted "
            "count plus one.",
            "next_offsets(offsets, accepted) -> offsets (two rows)",
            _batch_offsets,
        ),
        Obligation(
            "compaction-step",
            "Inductive step: accepted rows r(0)=0 < r(1) < ... satisfy r(j) >= j, so every copy moves KV "
            "down (dst <= src), for paths of any length.",
            "plan(j, row, L) -> (src, dst)",
            _compaction_step,
        ),
        Obligation(
            "compaction-ascending",
            "Copying the accepted path's KV in ascending order reads every source before it is "
            f"overwritten (all accepted paths of up to {MAX_PATH + 1} nodes).",
            "plan(j, row, L) -> (src, dst)",
            _compaction("ascending"),
            scope=f"every accepted path of 2 to {MAX_PATH + 1} nodes, all L and rows",
        ),
        Obligation(
            "compaction-descending",
            "Copying the accepted path's KV in descending order reads every source before it is overwritten.",
            "plan(j, row, L) -> (src, dst)",
            _compaction("descending"),
            scope=f"every accepted path of 2 to {MAX_PATH + 1} nodes, all L and rows",
        ),
        Obligation(
            "tree-visibility",
            "Tree node x sees node y exactly when y is x or an ancestor of x.",
            "tree_visible(parents, x, y, max_depth) -> bool",
            _tree_visibility,
            scope=f"every tree of 2 to {MAX_TREE_NODES} nodes (all parent arrays with parents[i] < i)",
        ),
        Obligation(
            "tree-mask-step",
            "Inductive step: the mask built row by row as row[x] = row[parent(x)] | {x} stays inside the "
            "lower triangle (only earlier nodes are visible), for trees of any size.",
            "(the construction itself)",
            _tree_mask_step,
        ),
        Obligation(
            "tree-positions",
            "Tree node x sits at absolute position L-1+depth(x).",
            "tree_position(parents, x, L, max_depth) -> int",
            _tree_positions,
            scope=f"every tree of 2 to {MAX_TREE_NODES} nodes, all L",
        ),
        Obligation(
            "tree-position-step",
            "Inductive step: depth(x) = depth(parent(x)) + 1 places every node one position after its "
            "parent, so positions are strictly increasing along every path, for trees of any size.",
            "(the construction itself)",
            _tree_position_step,
        ),
    ]
}


def _minimised_model(query: Query, solver_model: Any, timeout_ms: int) -> dict[str, Any]:
    """A small counterexample: minimise the sum of the reported integer variables."""
    z3 = _z3()
    ints = [query.variables[n] for n in query.minimize if n in query.variables]
    model = solver_model
    if ints:
        opt = z3.Optimize()
        opt.set("timeout", timeout_ms)
        opt.add(*query.preconditions, z3.Not(query.prop))
        for var in ints:
            opt.add(var >= -64)
        opt.minimize(z3.Sum([z3.If(var >= 0, var, -var) for var in ints]))
        if opt.check() == z3.sat:
            model = opt.model()
    out: dict[str, Any] = {}
    for name, var in query.variables.items():
        if z3.is_array(var):  # a parent array: the caller trims it to the tree's size
            cells = range(MAX_TREE_NODES)
            out[name] = [model.eval(z3.Select(var, i), model_completion=True).as_long() for i in cells]
        else:
            out[name] = model.eval(var, model_completion=True).as_long()
    return out


def check(
    obligation: Obligation | str, fn: Callable[..., Any], *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> SmtResult:
    """Prove or refute ``obligation`` for ``fn``; a solver ``unknown`` is :class:`Unknown`."""
    z3 = _z3()
    if isinstance(obligation, str):
        obligation = OBLIGATIONS[obligation]
    start = time.perf_counter()
    try:
        queries = obligation.build(fn)
    except SymbolicCallError as exc:
        return SmtResult(obligation.name, Unknown(str(exc)), time.perf_counter() - start, not_symbolic=True)
    texts = []
    for label, query in queries:
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        solver.add(*query.preconditions)
        solver.add(z3.Not(query.prop))
        texts.append(to_smtlib([*query.preconditions, z3.Not(query.prop)]))
        answer = solver.check()
        if answer == z3.sat:
            cx = _minimised_model(query, solver.model(), timeout_ms)
            if label:
                cx = {"case": label, **cx}
            if "parents" in cx:
                size = int(label.split()[0]) if label else len(cx["parents"])
                cx["parents"] = cx["parents"][:size]
            reason = f"z3 found a counterexample to {obligation.name}"
            return SmtResult(obligation.name, Refuted(reason, cx), time.perf_counter() - start, cx, texts)
        if answer != z3.unsat:
            why = solver.reason_unknown()
            return SmtResult(
                obligation.name,
                Unknown(f"z3 answered {answer} ({why}){' on ' + label if label else ''}"),
                time.perf_counter() - start,
                None,
                texts,
            )
    return SmtResult(obligation.name, Proved(obligation.scope), time.perf_counter() - start, None, texts)
