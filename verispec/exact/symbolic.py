"""Symbolic theorems (sympy) and an independent second prover (z3 over the reals).

Each theorem is a function returning a :class:`TheoremResult` whose verdict is
``Proved`` only if the prover established the statement; any failure to simplify is
``Unknown``, never a pass.

Theorems:

* :func:`token_level_lemma`: for any vocabulary size, speculative sampling at one position
  outputs ``x`` with probability ``p(x)`` (the acceptance mass is kept abstract).
* :func:`token_level_case_split`: the same, fully case-split over which tokens have
  ``p >= q``, with symbolic rows, for one vocabulary size ``V``.
* :func:`token_level_z3`: the same statement for ``V`` tokens, proved by z3 (nonlinear
  real arithmetic), independently of sympy.
* :func:`point_mass_lemma`: point-mass verification outputs ``p``, for any ``V``.
* :func:`geometric_identity`, :func:`tail_sum_identity`: the expected-length identities.

From the one-position lemma, round exactness follows by induction over positions: each
committed token, given everything before it, has the target's conditional law (the
correction by the lemma, an accepted draft by the same computation restricted to
acceptance, the bonus by construction), so the block followed by target sampling has the
target's law (the chain rule).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verispec.verdicts import Proved, Unknown, Verdict

__all__ = [
    "Theorem",
    "TheoremResult",
    "geometric_identity",
    "point_mass_lemma",
    "rrs_node_lemma",
    "tail_sum_identity",
    "theorem",
    "theorems",
    "theorems_for",
    "token_level_case_split",
    "token_level_lemma",
    "token_level_z3",
]


@dataclass(frozen=True)
class TheoremResult:
    """A theorem, the prover that checked it, and the verdict."""

    name: str
    statement: str
    prover: str
    verdict: Verdict
    seconds: float
    #: True when the statement holds for every vocabulary size, not one fixed ``V``.
    general: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "statement": self.statement,
            "prover": self.prover,
            "general": self.general,
            "seconds": round(self.seconds, 3),
            **self.verdict.to_json(),
        }


@dataclass(frozen=True)
class Theorem:
    """A registered theorem: the call that checks it, the verifiers whose proof it extends
    to every vocabulary size (none: a general identity), and its ``proofs/`` file."""

    name: str
    run: Callable[[], TheoremResult]
    verifiers: tuple[str, ...]
    proof: str


_THEOREMS: list[Theorem] = []

#: Vocabulary sizes of the case-split and z3 proofs.
CASE_SPLIT_VOCABS = (2, 3, 4, 5)
Z3_VOCABS = (2, 3, 4)


def theorem(
    *, proof: str, verifiers: tuple[str, ...] = (), cases: tuple[Any, ...] | None = None
) -> Callable[[Callable[..., TheoremResult]], Callable[..., TheoremResult]]:
    """Register the decorated theorem (once per case of ``cases``, its first argument)."""

    def register(fn: Callable[..., TheoremResult]) -> Callable[..., TheoremResult]:
        if cases is None:
            _THEOREMS.append(Theorem(fn.__name__, fn, verifiers, proof))
        for case in cases or ():
            _THEOREMS.append(Theorem(f"{fn.__name__}({case})", functools.partial(fn, case), verifiers, proof))
        return fn

    return register


def _timed(
    name: str, statement: str, prover: str, body: Callable[[], Verdict], *, general: bool = False
) -> TheoremResult:
    start = time.perf_counter()
    try:
        verdict = body()
    except Exception as exc:  # a prover crash is "unknown", never a pass
        verdict = Unknown(f"{prover} failed: {type(exc).__name__}: {exc}")
    return TheoremResult(name, statement, prover, verdict, time.perf_counter() - start, general)


@theorem(verifiers=("token-level",), proof="thm_token_level_lemma.py")
def token_level_lemma() -> TheoremResult:
    """One position of speculative sampling outputs ``p``, for any vocabulary size."""
    statement = (
        "For any vocabulary size V and any target p and draft q, speculative sampling at one "
        "position outputs token x with probability min(p_x, q_x) + (1 - beta) * "
        "max(p_x - q_x, 0) / R = p_x, where beta = sum_y min(p_y, q_y) and R = sum_y max(p_y - q_y, 0)."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        p = sp.Symbol("p", nonnegative=True)
        d = sp.Symbol("d", nonnegative=True)
        e = sp.Symbol("e", positive=True)
        # Step 1: min(p, q) + max(p - q, 0) == p, split on the sign of p - q.
        case_ge = sp.simplify(sp.Min(p, p - d) + sp.Max(d, 0) - p)  # q = p - d <= p
        case_lt = sp.simplify(sp.Min(p, p + e) + sp.Max(-e, 0) - p)  # q = p + e > p
        if case_ge != 0 or case_lt != 0:
            return Unknown(f"pointwise identity did not simplify to 0: {case_ge}, {case_lt}")
        # Step 2: summing step 1 over an abstract vocabulary of n tokens: R == 1 - beta.
        i, n = sp.symbols("i n", integer=True, positive=True)
        pv, qv = sp.IndexedBase("p"), sp.IndexedBase("q")
        beta = sp.Symbol("beta")
        residual_mass = sp.Sum(pv[i] - sp.Min(pv[i], qv[i]), (i, 1, n)).expand()
        residual_mass = residual_mass.subs(sp.Sum(pv[i], (i, 1, n)), 1)
        residual_mass = residual_mass.subs(sp.Sum(-sp.Min(pv[i], qv[i]), (i, 1, n)), -beta)
        if sp.simplify(residual_mass - (1 - beta)) != 0:
            return Unknown(f"residual mass is {residual_mass}, not 1 - beta")
        # Step 3: the output probability, with R = 1 - beta > 0 (a rejection is possible).
        beta_lt_1 = sp.Symbol("b", positive=True)  # 1 - beta
        for q in (p - d, p + e):
            out = sp.Min(p, q) + beta_lt_1 * sp.Max(p - q, 0) / beta_lt_1
            if sp.simplify(out - p) != 0:
                return Unknown(f"output probability {out} did not simplify to p")
        # beta == 1: R == 0 forces max(p_y - q_y, 0) == 0 for all y, so p <= q everywhere and,
        # both summing to one, p == q: the draft is always accepted and output is q == p.
        return Proved("any vocabulary size (acceptance mass abstracted), sympy")

    return _timed("token-level lemma (any V)", statement, "sympy", body, general=True)


def _token_level_output(mins: Any, maxs: Any, beta: Any, r: Any, p: Any, k: int) -> Any:
    """Token-level output probability of token k: accepted mass plus the residual's share."""
    return mins[k] + (1 - beta) * maxs[k] / r


@theorem(verifiers=("token-level",), proof="thm_token_level_lemma.py", cases=CASE_SPLIT_VOCABS)
def token_level_case_split(
    vocab_size: int, *, output: Callable[..., Any] = _token_level_output
) -> TheoremResult:
    """The one-position lemma with symbolic rows, case-split over the sign pattern of p - q.

    ``output(mins, maxs, beta, r, p, k)`` is the output probability under test; the default
    is token-level's. Tests pass wrong formulas to show that the prover refutes them.
    """
    statement = (
        f"For V = {vocab_size}, every p and q in the simplex and every token x, speculative "
        "sampling at one position outputs x with probability p_x (all 2^V sign patterns of p - q)."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        v = vocab_size
        ps = list(sp.symbols(f"p0:{v - 1}", nonnegative=True))
        qs = list(sp.symbols(f"q0:{v - 1}", nonnegative=True))
        ps.append(1 - sum(ps))
        qs.append(1 - sum(qs))
        cases = 0
        for pattern in itertools.product((True, False), repeat=v):
            above = [k for k in range(v) if pattern[k]]  # tokens with p >= q
            if not above:
                continue  # infeasible: p < q everywhere contradicts sum p == sum q == 1
            mins = [qs[k] if pattern[k] else ps[k] for k in range(v)]
            maxs = [ps[k] - qs[k] if pattern[k] else sp.Integer(0) for k in range(v)]
            beta = sum(mins)
            r = sum(maxs)
            if sp.simplify(r - (1 - beta)) != 0:
                return Unknown(f"pattern {pattern}: residual mass {r} is not 1 - beta")
            cases += 1
            if len(above) == v:
                # p >= q everywhere with equal sums: r == 0 and so p == q; output is q == p.
                if sp.simplify(r) != 0:
                    return Unknown(f"pattern {pattern}: sum of p - q is {r}, not 0")
                continue
            for k in range(v):
                out = output(mins, maxs, beta, r, ps, k)
                if sp.simplify(sp.together(out - ps[k])) != 0:
                    return Unknown(f"pattern {pattern}, token {k}: output {out} is not p")
        return Proved(f"V={v}, {cases} feasible sign patterns, sympy")

    return _timed(f"token-level lemma (V={vocab_size}, case split)", statement, "sympy", body)


def _token_level_output_times_r(mins: Any, maxs: Any, beta: Any, r: Any, p: Any, k: int) -> Any:
    """Token-level output probability of token k, multiplied by the residual mass r."""
    return mins[k] * r + (1 - beta) * maxs[k]


@theorem(verifiers=("token-level",), proof="thm_token_level_lemma.py", cases=Z3_VOCABS)
def token_level_z3(
    vocab_size: int,
    *,
    timeout_ms: int = 60_000,
    output_times_r: Callable[..., Any] = _token_level_output_times_r,
) -> TheoremResult:
    """The one-position lemma for ``V`` tokens, proved by z3 over the reals.

    ``output_times_r`` is the formula under test (times ``r``, to stay polynomial).
    """
    statement = (
        f"For V = {vocab_size} over the reals: for all p, q in the simplex and every x, "
        "q_x * min(1, p_x/q_x) + (1 - beta) * max(p_x - q_x, 0) / R == p_x when R > 0, and "
        "R == 0 implies p == q."
    )

    def body() -> Verdict:
        import z3  # deferred: heavy

        v = vocab_size
        p = [z3.Real(f"p{k}") for k in range(v)]
        q = [z3.Real(f"q{k}") for k in range(v)]
        solver = z3.Solver()
        solver.set("timeout", timeout_ms)
        for k in range(v):
            solver.add(p[k] >= 0, q[k] >= 0)
        solver.add(z3.Sum(p) == 1, z3.Sum(q) == 1)
        mins = [z3.If(p[k] <= q[k], p[k], q[k]) for k in range(v)]
        maxs = [z3.If(p[k] >= q[k], p[k] - q[k], 0) for k in range(v)]
        beta = z3.Sum(mins)
        r = z3.Sum(maxs)
        # accepted mass of x is q_x * min(1, p_x/q_x) == min(p_x, q_x) (0 when q_x == 0)
        wrong = []
        for k in range(v):
            out_times_r = output_times_r(mins, maxs, beta, r, p, k)
            wrong.append(z3.And(r > 0, out_times_r != p[k] * r))
            wrong.append(z3.And(r == 0, p[k] != q[k]))
        solver.add(z3.Or(wrong))
        result = solver.check()
        if result == z3.unsat:
            return Proved(f"V={v}, z3 {z3.get_version_string()} (unsat negation)")
        if result == z3.sat:
            return Unknown(f"z3 found a model of the negation: {solver.model()}")
        return Unknown(f"z3 answered {result}: {solver.reason_unknown()}")

    return _timed(f"token-level lemma (V={vocab_size}, z3)", statement, "z3", body)


@theorem(verifiers=("point-mass", "point-mass-tree"), proof="thm_point_mass_lemma.py")
def point_mass_lemma() -> TheoremResult:
    """Point-mass verification at one position outputs ``p``, for any vocabulary size."""
    statement = (
        "For any V, target p and draft token x with p_x < 1: accepting x with probability p_x "
        "and otherwise sampling p with x removed outputs y with probability p_y; with p_x = 1 "
        "the draft is always accepted."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        px = sp.Symbol("p_x", nonnegative=True)
        py = sp.Symbol("p_y", nonnegative=True)
        out_x = px  # accepted; the residual puts no mass on x
        out_y = (1 - px) * py / (1 - px)  # y != x: rejected, then p without x, normalised
        if sp.simplify(out_x - px) != 0 or sp.simplify(out_y - py) != 0:
            return Unknown("point-mass output did not simplify to p")
        return Proved("any vocabulary size, sympy")

    return _timed("point-mass lemma (any V)", statement, "sympy", body, general=True)


@theorem(verifiers=("mss", "rrs-without-replacement", "point-mass-tree"), proof="thm_rrs_node_lemma.py")
def rrs_node_lemma() -> TheoremResult:
    """Recursive rejection at one tree node outputs the target law, with or without replacement."""
    statement = (
        "At a tree node with target P and m candidates, recursive rejection sampling (try the "
        "j-th candidate with min(1, P_j(x)/q_j(x)), P_{j+1} = norm([P_j - q_j]_+), emit a sample "
        "of P_{m+1} if all are rejected) outputs y with probability P(y) for any vocabulary size "
        "and any m, whenever q_j is the law of the j-th candidate given the earlier ones: with "
        "replacement (q_j = q), without replacement (q_j = q without the earlier tokens, "
        "renormalised) and for point masses (q_j = delta). Induction on m: m = 0 emits a sample of "
        "P; for m >= 1, averaging over the first candidate a ~ q_1, the node outputs "
        "q_1(y) min(1, P(y)/q_1(y)) + P'(y) sum_a q_1(a) (1 - min(1, P(a)/q_1(a))) with P' the law "
        "the remaining m - 1 candidates output (P' = norm([P - q_1]_+) by the induction hypothesis, "
        "whatever a was), and this equals P(y)."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        i, n = sp.symbols("i n", integer=True, positive=True)
        pv, qv = sp.IndexedBase("P"), sp.IndexedBase("q")
        # (a) q * min(1, P/q) == min(P, q) for q > 0, split on the sign of P - q
        q = sp.Symbol("q", positive=True)
        d = sp.Symbol("d", nonnegative=True)
        e = sp.Symbol("e", positive=True)
        for big_p in (q + d, q - e):  # P >= q, P < q (with P = q - e >= 0 implicit)
            if sp.simplify(q * sp.Min(1, big_p / q) - sp.Min(big_p, q)) != 0:
                return Unknown(f"q min(1, P/q) != min(P, q) at P = {big_p}")
        # (b) the rejection mass sum_a q(a) (1 - min(1, P(a)/q(a))) == 1 - beta == R
        rejection = sp.Sum(qv[i] - sp.Min(pv[i], qv[i]), (i, 1, n)).expand()
        beta = sp.Symbol("beta")
        rejection = rejection.subs(sp.Sum(qv[i], (i, 1, n)), 1).subs(
            sp.Sum(-sp.Min(pv[i], qv[i]), (i, 1, n)), -beta
        )
        residual_mass = sp.Sum(pv[i] - sp.Min(pv[i], qv[i]), (i, 1, n)).expand()
        residual_mass = residual_mass.subs(sp.Sum(pv[i], (i, 1, n)), 1).subs(
            sp.Sum(-sp.Min(pv[i], qv[i]), (i, 1, n)), -beta
        )
        if sp.simplify(rejection - residual_mass) != 0:
            return Unknown(f"rejection mass {rejection} differs from the residual mass {residual_mass}")
        # (c) the induction step: min(P, q) + R * [P - q]_+ / R == P (both signs of P - q)
        r = sp.Symbol("R", positive=True)
        p_sym = sp.Symbol("P", nonnegative=True)
        for q_case in (p_sym - d, p_sym + e):
            out = sp.Min(p_sym, q_case) + r * sp.Max(p_sym - q_case, 0) / r
            if sp.simplify(out - p_sym) != 0:
                return Unknown(f"induction step gives {out}, not P")
        # (d) point masses: q_j = delta_x gives min(P(x), 1) = P(x) and [P - delta_x]_+ = P without x
        f = sp.Symbol("f", nonnegative=True)  # P(x) = 1 - f <= 1
        if sp.simplify(sp.Min(1 - f, 1) - (1 - f)) != 0:
            return Unknown("point-mass acceptance min(P(x), 1) is not P(x)")
        return Proved("any vocabulary size and any number of siblings (induction), sympy")

    return _timed("recursive rejection node lemma (any V, any m)", statement, "sympy", body, general=True)


@theorem(proof="thm_expected_length_identities.py")
def geometric_identity() -> TheoremResult:
    """Expected tokens per round under i.i.d. acceptance ``alpha``: ``(1 - alpha^(g+1)) / (1 - alpha)``."""
    statement = (
        "If each draft is accepted independently with probability alpha < 1, a round of gamma "
        "drafts commits E[K] + 1 = sum_{i=0}^{gamma} alpha^i = (1 - alpha^(gamma+1)) / (1 - alpha) "
        "tokens, and E[K] = alpha (1 - alpha^gamma) / (1 - alpha); at alpha = 1 it is gamma + 1."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        alpha = sp.Symbol("alpha", positive=True)
        gamma = sp.Symbol("gamma", integer=True, nonnegative=True)
        i = sp.Symbol("i", integer=True, nonnegative=True)
        tokens = sp.summation(alpha**i, (i, 0, gamma))
        closed = (1 - alpha ** (gamma + 1)) / (1 - alpha)
        generic = tokens.args[-1][0] if isinstance(tokens, sp.Piecewise) else tokens
        if sp.simplify(generic - closed) != 0:
            return Unknown(f"sum is {tokens}")
        if sp.simplify(tokens.subs(alpha, 1) - (gamma + 1)) != 0:
            return Unknown("alpha = 1 case is not gamma + 1")
        accepted = sp.summation(alpha**i, (i, 1, gamma))
        generic_k = accepted.args[-1][0] if isinstance(accepted, sp.Piecewise) else accepted
        if sp.simplify(generic_k - alpha * (1 - alpha**gamma) / (1 - alpha)) != 0:
            return Unknown(f"E[K] is {accepted}")
        return Proved("symbolic alpha and gamma, sympy")

    return _timed("geometric identity", statement, "sympy", body)


@theorem(proof="thm_expected_length_identities.py")
def tail_sum_identity(max_gamma: int = 16) -> TheoremResult:
    """``E[K] = sum_{i=1}^{gamma} Pr(K >= i)`` for ``K`` in ``0..gamma``, any law of ``K``."""
    statement = (
        "For K in {0, ..., gamma} with any law pi, E[K] = sum_k k pi_k = sum_{i=1}^{gamma} "
        f"Pr(K >= i); checked with symbolic pi for every gamma up to {max_gamma}. No "
        "independence between positions is assumed."
    )

    def body() -> Verdict:
        import sympy as sp  # deferred: heavy

        for gamma in range(1, max_gamma + 1):
            pi = sp.symbols(f"pi0:{gamma + 1}")
            mean = sum(k * pi[k] for k in range(gamma + 1))
            tails = sum(sum(pi[k] for k in range(i, gamma + 1)) for i in range(1, gamma + 1))
            if sp.expand(mean - tails) != 0:
                return Unknown(f"identity fails at gamma={gamma}")
        return Proved(f"gamma = 1..{max_gamma}, symbolic law of K, sympy")

    return _timed("tail-sum identity", statement, "sympy", body)


def theorems_for(name: str | None) -> list[Callable[[], TheoremResult]]:
    """The symbolic theorems backing verifier ``name``; ``None`` gives the general identities
    (those declared for no verifier)."""
    return [t.run for t in _THEOREMS if (name in t.verifiers if name is not None else not t.verifiers)]


def theorems() -> list[Theorem]:
    """Every registered theorem (one per case of a parametrised one), in declaration order."""
    return list(_THEOREMS)
