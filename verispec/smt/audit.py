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

import importlib
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from verispec.errors import UsageError
from verispec.smt.obligations import DEFAULT_TIMEOUT_MS, OBLIGATIONS, SmtResult, check
from verispec.verdicts import Refuted, Unknown

__all__ = ["AUDIT_OPTIONS", "audit", "load_function"]

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


def load_function(spec: str) -> Callable[..., Any]:
    """Import ``module:function``; errors name the spec."""
    if spec.count(":") != 1 or not all(spec.split(":")):
        raise UsageError(f"function={spec!r} must be written module:function")
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"function={spec!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise UsageError(f"function={spec!r}: {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise UsageError(f"function={spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


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
    """Audit ``module:function`` against ``obligation`` in a subprocess with a time limit."""
    if obligation not in OBLIGATIONS:
        raise UsageError(f"obligation={obligation!r} is not one of {', '.join(OBLIGATIONS)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = [sys.executable, "-m", "verispec.smt.audit", obligation, spec, str(solver_timeout_ms)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except subprocess.TimeoutExpired:
        return SmtResult(
            obligation, Unknown(f"{spec} did not finish within {timeout_s:g} s (time limit)"), timeout_s
        )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return SmtResult(obligation, Unknown(f"{spec} crashed the audit process: {' | '.join(tail)}"), 0.0)
    data = json.loads(lines[-1])
    if data.get("usage_error"):
        raise UsageError(data["usage_error"])
    verdict: Any
    if data["verdict"] == "proved":
        from verispec.verdicts import Proved

        verdict = Proved(data.get("scope", ""))
    elif data["verdict"] == "refuted":
        verdict = Refuted(f"counterexample to {obligation}", data.get("counterexample"))
    else:
        verdict = Unknown(data.get("reason", "unknown"))
    return SmtResult(obligation, verdict, data.get("seconds", 0.0), data.get("counterexample"))


def _worker(argv: list[str]) -> int:
    obligation, spec, timeout_ms = argv[0], argv[1], int(argv[2])
    sys.path.insert(0, os.getcwd())
    try:
        fn = load_function(spec)
        result = audit_in_process(obligation, fn, timeout_ms)
    except UsageError as exc:
        print(json.dumps({"usage_error": str(exc)}))
        return 0
    except Exception as exc:
        result = SmtResult(obligation, Unknown(f"{spec} raised {type(exc).__name__}: {exc}"), 0.0)
    print(json.dumps(result.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
