"""Operations that work on Python ints, z3 terms and torch tensors alike.

Index functions are written once with plain arithmetic and comparison operators plus these
few helpers (a conditional, boolean connectives, floor division, min/max), so the same
function evaluates on Python ints (tests), z3 terms (proofs for all sizes) and torch
tensors (the reference engine builds its masks with it). Nothing here imports z3 or torch:
the kind of each argument is read from its type.
"""

from __future__ import annotations

from typing import Any

__all__ = ["and_", "floordiv", "kind", "maximum", "minimum", "mod", "not_", "or_", "where"]


def kind(*values: Any) -> str:
    """``"z3"``, ``"torch"`` or ``"py"``: the interpretation the arguments call for."""
    found = "py"
    for value in values:
        module = type(value).__module__
        if module.startswith("z3"):
            return "z3"
        if module.startswith("torch"):
            found = "torch"
    return found


def where(cond: Any, then: Any, otherwise: Any) -> Any:
    """``then if cond else otherwise``, elementwise for tensors, symbolic for z3."""
    k = kind(cond, then, otherwise)
    if k == "z3":
        import z3  # deferred: heavy

        return z3.If(cond, then, otherwise)
    if k == "torch":
        import torch  # deferred: heavy

        return torch.where(torch.as_tensor(cond), torch.as_tensor(then), torch.as_tensor(otherwise))
    return then if cond else otherwise


def and_(*conds: Any) -> Any:
    k = kind(*conds)
    if k == "z3":
        import z3  # deferred: heavy

        return z3.And(*conds)
    if k == "torch":
        out = conds[0]
        for c in conds[1:]:
            out = out & c
        return out
    return all(conds)


def or_(*conds: Any) -> Any:
    k = kind(*conds)
    if k == "z3":
        import z3  # deferred: heavy

        return z3.Or(*conds)
    if k == "torch":
        out = conds[0]
        for c in conds[1:]:
            out = out | c
        return out
    return any(conds)


def not_(cond: Any) -> Any:
    k = kind(cond)
    if k == "z3":
        import z3  # deferred: heavy

        return z3.Not(cond)
    if k == "torch":
        return ~cond
    return not cond


def floordiv(a: Any, b: Any) -> Any:
    """Floor division. For z3 this is SMT-LIB ``div``, which agrees with floor division when
    the divisor is positive (every use here asserts ``b >= 1``)."""
    k = kind(a, b)
    if k == "z3":
        return a / b
    if k == "torch":
        import torch  # deferred: heavy

        return torch.div(a, b, rounding_mode="floor")
    return a // b


def mod(a: Any, b: Any) -> Any:
    """Remainder with the sign of the (positive) divisor, in every interpretation."""
    return a % b


def minimum(a: Any, b: Any) -> Any:
    return where(a <= b, a, b)


def maximum(a: Any, b: Any) -> Any:
    return where(a >= b, a, b)
