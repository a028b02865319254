"""Audit mode: prove or refute someone else's index function against an obligation.

``verispec smt --visible mypkg.masks:visible`` loads the function in a **separate process**
with a time limit (third-party code never runs inside verispec's own process and cannot
hang it), evaluates it on z3 terms and checks the obligation for all sizes. A function that
cannot be evaluated symbolically (Python ``if`` on its arguments, ``//`` on z3 integers)
is checked instead on every small case with Python ints: that can refute it with a concrete
counterexample but never proves it, so its verdict is then ``unknown`` with the bound stated.

Signatures (also in ``docs/reference/smt.md``):

* ``visible(row, key, L, gamma) -> bool``
* ``crop(L, gamma, accepted) -> int`` (entries kept)
* ``draft_sync(L, gamma, accepted) -> (crop_length, catch_up)``
* ``position(row, L) -> int``
* ``tree_visible(parents, x, y, max_depth) -> bool``
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from verispec.errors import UsageError
from verispec.isolation import RemoteError, Worker, WorkerCrashed, WorkerTimeout, load_function
from verispec.smt.obligations import DEFAULT_TIMEOUT_MS, OBLIGATIONS, SmtResult, check
from verispec.verdicts import Proved, Refuted, Unknown, VerdictKind

__all__ = ["AUDIT_OPTIONS", "audit"]

#: Command-line option -> obligation.
AUDIT_OPTIONS = {
    "visible": "visibility",
    "crop": "crop",
    "draft_sync": "draft-sync",
    "positions": "positions",
    "tree_visible": "tree-visibility",
}

#: Bounds of the concrete fallback check.
SMALL_L, SMALL_GAMMA, SMALL_TREE = 8, 6, 7


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


Case = tuple[dict[str, Any], Callable[[Callable[..., Any]], bool]]


def _visibility_cases() -> Iterator[Case]:
    for L in range(1, SMALL_L + 1):
        for gamma in range(SMALL_GAMMA + 1):
            for row in range(gamma + 1):
                for key in range(L + gamma):

                    def ok(
                        fn: Callable[..., Any], L: int = L, g: int = gamma, r: int = row, k: int = key
                    ) -> bool:
                        return _boolean(fn(r, k, L, g), fn) == (k <= L - 1 + r)

                    yield {"L": L, "gamma": gamma, "row": row, "key": key}, ok


def _crop_cases() -> Iterator[Case]:
    for L in range(1, SMALL_L + 1):
        for gamma in range(SMALL_GAMMA + 1):
            for a in range(gamma + 1):

                def ok(fn: Callable[..., Any], L: int = L, g: int = gamma, a: int = a) -> bool:
                    return bool(fn(L, g, a) == L + a)

                yield {"L": L, "gamma": gamma, "accepted": a}, ok


def _draft_sync_cases() -> Iterator[Case]:
    for L in range(1, SMALL_L + 1):
        for gamma in range(1, SMALL_GAMMA + 1):
            for a in range(gamma + 1):

                def ok(fn: Callable[..., Any], L: int = L, g: int = gamma, a: int = a) -> bool:
                    crop, catch_up = fn(L, g, a)
                    return bool(
                        0 <= crop <= min(L - 1 + g, L + a) and catch_up >= 0 and crop + catch_up == L + a
                    )

                yield {"L": L, "gamma": gamma, "accepted": a}, ok


def _position_cases() -> Iterator[Case]:
    for L in range(1, SMALL_L + 1):
        for a in range(SMALL_GAMMA + 1):
            for row in range(SMALL_GAMMA + 1):

                def ok(fn: Callable[..., Any], L: int = L, a: int = a, r: int = row) -> bool:
                    return bool(fn(r, L + a + 1) == L + a + r)

                yield {"L": L, "accepted": a, "row": row}, ok


def _tree_cases() -> Iterator[Case]:
    for n in range(2, SMALL_TREE + 1):
        for choice in itertools.product(*(range(i) for i in range(1, n))):
            parents = [-1, *choice]
            for x in range(n):
                for y in range(n):

                    def ok(
                        fn: Callable[..., Any], p: list[int] = parents, x: int = x, y: int = y, n: int = n
                    ) -> bool:
                        return _boolean(fn(p, x, y, n - 1), fn) == _ancestor(p, x, y)

                    yield {"parents": parents, "x": x, "y": y}, ok


_CASES: dict[str, Callable[[], Iterator[Case]]] = {
    "visibility": _visibility_cases,
    "crop": _crop_cases,
    "draft-sync": _draft_sync_cases,
    "positions": _position_cases,
    "tree-visibility": _tree_cases,
}


def _ancestor(parents: list[int], x: int, y: int) -> bool:
    while True:
        if x == y:
            return True
        if x <= 0:
            return False
        x = parents[x]


def _boolean(value: Any, fn: Callable[..., Any]) -> bool:
    if not _is_bool(value):
        name = getattr(fn, "__qualname__", fn)
        raise UsageError(f"{name} returned {type(value).__name__} ({value!r}) where a boolean is required")
    return bool(value)


def _bounded(obligation: str, fn: Callable[..., Any], why: str) -> SmtResult:
    count = 0
    for inputs, ok in _CASES.get(obligation, lambda: iter(()))():
        count += 1
        if not ok(fn):
            cx = {**inputs, "checked": "concretely (the function is not symbolic)"}
            return SmtResult(obligation, Refuted(f"counterexample to {obligation}", cx), 0.0, cx)
    if count == 0:
        return SmtResult(obligation, Unknown(why), 0.0)
    return SmtResult(
        obligation,
        Unknown(f"{why}; checked concretely on {count} small cases without a counterexample (not a proof)"),
        0.0,
    )


def audit_in_process(
    obligation: str, fn: Callable[..., Any], solver_timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> SmtResult:
    """Check ``fn`` here (no isolation): symbolic first, then concrete small cases."""
    result = check(obligation, fn, timeout_ms=solver_timeout_ms)
    if result.not_symbolic and isinstance(result.verdict, Unknown):
        return _bounded(obligation, fn, result.verdict.reason)
    return result


def audit(
    obligation: str, spec: str, *, timeout_s: float = 120.0, solver_timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> SmtResult:
    """Audit ``module:function`` against ``obligation`` in a worker process
    (:mod:`verispec.isolation`): loading it and checking it share one time limit."""
    if obligation not in OBLIGATIONS:
        raise UsageError(f"obligation={obligation!r} is not one of {', '.join(OBLIGATIONS)}")
    started = time.perf_counter()
    with Worker("verispec.smt.audit", {"function": spec}, startup_timeout_s=timeout_s) as worker:
        try:
            worker.start()
            left = max(timeout_s - (time.perf_counter() - started), 0.001)
            data = worker.ask({"obligation": obligation, "timeout_ms": solver_timeout_ms}, left)
        except WorkerTimeout:
            return SmtResult(
                obligation, Unknown(f"{spec} did not finish within {timeout_s:g} s (time limit)"), timeout_s
            )
        except WorkerCrashed as exc:
            return SmtResult(obligation, Unknown(f"{spec} crashed the audit process: {exc}"), 0.0)
        except RemoteError as exc:
            if exc.kind == "usage":
                raise UsageError(exc.message) from None
            where = f" at {exc.where}" if exc.where else ""
            return SmtResult(obligation, Unknown(f"{spec} raised {exc}{where}"), 0.0)
    verdict: Any
    if data["verdict"] == VerdictKind.PROVED:
        verdict = Proved(data.get("scope", ""))
    elif data["verdict"] == VerdictKind.REFUTED:
        verdict = Refuted(f"counterexample to {obligation}", data.get("counterexample"))
    else:
        verdict = Unknown(data.get("reason", "unknown"))
    return SmtResult(obligation, verdict, data.get("seconds", 0.0), data.get("counterexample"))


def _handler(config: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    fn = load_function(config["function"])

    def handle(message: dict[str, Any]) -> dict[str, Any]:
        result = audit_in_process(message["obligation"], fn, int(message["timeout_ms"]))
        return result.to_json()

    return handle


if __name__ == "__main__":
    from verispec.isolation import serve

    sys.exit(serve(_handler))
