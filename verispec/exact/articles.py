"""Every number of the two seed articles, recomputed by verispec.

Each function returns a :class:`ArticleCheck`: the statement in words, the numbers the
article prints (``expected``, as the article writes them) and the numbers verispec computes
(``computed``, formatted the same way). Where the article's number comes from a
distribution, verispec computes the distribution with the registered verifier code and the
exact executor, not with a separate formula. Where the article prints a simulation, the
simulation is rerun with the article's own seed and calls and must print the same digits.

Sources: "Why speculative decoding preserves distributions but may not be faster"
(the *audit* article) and "Speculative Decoding, Derived" (the *derived* article).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from verispec.core.models import FixedModel
from verispec.exact.criterion import check_round, expected_accepted, round_law
from verispec.verifiers import registry
from verispec.verifiers.instance import ChainInstance

__all__ = [
    "ArticleCheck",
    "all_article_checks",
    "article_check",
    "article_check_proofs",
    "article_checks",
    "assert_reproduced",
    "print_article_check",
]


@dataclass(frozen=True)
class ArticleCheck:
    """One published number (or table), its statement, and verispec's recomputation."""

    name: str
    source: str
    statement: str
    expected: dict[str, str]
    computed: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.expected == self.computed

    def mismatches(self) -> list[str]:
        return [
            f"{k}: article {self.expected[k]!r}, verispec {self.computed.get(k)!r}"
            for k in self.expected
            if self.computed.get(k) != self.expected[k]
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "statement": self.statement,
            "ok": self.ok,
            "expected": self.expected,
            "computed": self.computed,
        }


#: Every article check, in the order declared: (the check, the file in ``proofs/`` that states it).
_ARTICLE_CHECKS: list[tuple[Callable[[], ArticleCheck], str]] = []


def article_check(*, proof: str) -> Callable[[Callable[[], ArticleCheck]], Callable[[], ArticleCheck]]:
    """Register the decorated function as an article check; ``proof`` is the ``proofs/`` file
    that states the numbers in words and asserts them."""

    def register(fn: Callable[[], ArticleCheck]) -> Callable[[], ArticleCheck]:
        _ARTICLE_CHECKS.append((fn, proof))
        return fn

    return register


def article_checks() -> list[Callable[[], ArticleCheck]]:
    """The registered article checks, in declaration order."""
    return [fn for fn, _ in _ARTICLE_CHECKS]


def article_check_proofs() -> list[tuple[str, str]]:
    """``(check name, proofs/ file)`` for every registered article check."""
    return [(fn.__name__, proof) for fn, proof in _ARTICLE_CHECKS]


def _frac(values: Sequence[str]) -> tuple[Fraction, ...]:
    return tuple(Fraction(v) for v in values)


def _row(values: Sequence[Any], digits: int | None = None) -> str:
    if digits is None:
        return "(" + ", ".join(str(v) for v in values) + ")"
    return "(" + ", ".join(f"{float(v):.{digits}f}" for v in values) + ")"


def _first_token_law(name: str, target: Sequence[Fraction], draft: Sequence[Fraction]) -> list[Fraction]:
    instance = ChainInstance(FixedModel(target), FixedModel(draft), gamma=1)
    out = [Fraction(0)] * len(target)
    for block, w in round_law(registry.get(name), instance).items():
        out[block[0]] += w
    return out


def _exact_decimal(value: Fraction) -> str:
    """The exact decimal expansion of ``value`` if it terminates, else the fraction."""
    den = value.denominator
    for prime in (2, 5):
        while den % prime == 0:
            den //= prime
    if den != 1:
        return str(value)
    with localcontext() as ctx:
        ctx.prec = 50
        return str((Decimal(value.numerator) / Decimal(value.denominator)).normalize())


def _tokens_per_round(alpha: Fraction, gamma: int) -> Fraction:
    return sum((alpha**i for i in range(gamma + 1)), Fraction(0))


@article_check(proof="thm_three_token_example.py")
def three_token_example() -> ArticleCheck:
    p, q = _frac(["0.5", "0.3", "0.2"]), _frac(["0.2", "0.2", "0.6"])
    accept = [min(Fraction(1), px / qx) for px, qx in zip(p, q, strict=True)]
    accepted_mass = [min(px, qx) for px, qx in zip(p, q, strict=True)]
    alpha = sum(accepted_mass, Fraction(0))
    positive = [max(px - qx, Fraction(0)) for px, qx in zip(p, q, strict=True)]
    residual = [r / sum(positive) for r in positive]
    added = [(1 - alpha) * r for r in residual]
    return ArticleCheck(
        "three-token example",
        "audit article, section 3",
        "With p = (0.5, 0.3, 0.2) and q = (0.2, 0.2, 0.6): a(x) = (1, 1, 1/3), each token "
        "contributes 0.2 of accepted mass, alpha = 0.6, rejection has probability 0.4, the "
        "residual is (0.75, 0.25, 0), the mass added after rejection is (0.3, 0.1, 0), "
        "token-level speculative sampling outputs p exactly, and resampling from p after a "
        "rejection outputs (0.4, 0.32, 0.28).",
        expected={
            "acceptance a(x)": "(1, 1, 1/3)",
            "directly accepted mass": "(0.2, 0.2, 0.2)",
            "alpha": "0.6",
            "rejection probability": "0.4",
            "residual": "(0.75, 0.25, 0)",
            "mass added after rejection": "(0.3, 0.1, 0)",
            "token-level output": "(0.5, 0.3, 0.2)",
            "resample-target output": "(0.4, 0.32, 0.28)",
        },
        computed={
            "acceptance a(x)": _row(accept),
            "directly accepted mass": _row([float(v) for v in accepted_mass]),
            "alpha": str(float(alpha)),
            "rejection probability": str(float(1 - alpha)),
            "residual": _row([float(v) if v else 0 for v in residual]),
            "mass added after rejection": _row([float(v) if v else 0 for v in added]),
            "token-level output": _row([float(v) for v in _first_token_law("token-level", p, q)]),
            "resample-target output": _row([float(v) for v in _first_token_law("resample-target", p, q)]),
        },
    )


@article_check(proof="thm_expected_tokens.py")
def expected_tokens_example() -> ArticleCheck:
    value = _tokens_per_round(Fraction(3, 5), 3)
    return ArticleCheck(
        "E[K] at alpha = 0.6, gamma = 3",
        "audit article, section 4",
        "Under independent acceptance with alpha = 0.6 and gamma = 3 drafts, a round commits "
        "E[K] = (1 - alpha^4) / (1 - alpha) = 2.176 tokens, not four.",
        expected={"E[K]": "2.176"},
        computed={"E[K]": _exact_decimal(value)},
    )


def _article_simulation() -> tuple[list[float], float, dict[tuple[float, int], float]]:
    """The derived article's sampling code, rerun with its seed and call order."""
    import numpy as np  # deferred: heavy

    rng = np.random.default_rng(0)
    p = np.array([0.40, 0.25, 0.15, 0.10, 0.07, 0.03])
    q = np.array([0.10, 0.10, 0.30, 0.30, 0.10, 0.10])
    n = 1_000_000
    x = rng.choice(6, n, p=q)
    accept = rng.random(n) < np.minimum(1, p[x] / q[x])
    resid = np.maximum(p - q, 0)
    resid /= resid.sum()
    x = np.where(accept, x, rng.choice(6, n, p=resid))
    freqs = (np.bincount(x, minlength=6) / n).tolist()

    def simulate(alpha: float, k: int, steps: int = 200_000) -> float:
        acc = rng.random((steps, k)) < alpha
        run = np.where(acc.all(1), k, acc.argmin(1))
        return float((run + 1).mean())

    sims = {(a, k): simulate(a, k) for a in (0.6, 0.8, 0.9) for k in (2, 4, 8)}
    return freqs, float(accept.mean()), sims


@article_check(proof="thm_six_token_example.py")
def six_token_example() -> ArticleCheck:
    p = _frac(["0.40", "0.25", "0.15", "0.10", "0.07", "0.03"])
    q = _frac(["0.10", "0.10", "0.30", "0.30", "0.10", "0.10"])
    instance = ChainInstance(FixedModel(p), FixedModel(q), gamma=1)
    check = check_round(registry.get("token-level"), instance)
    law = _first_token_law("token-level", p, q)
    acceptance = sum((min(a, b) for a, b in zip(p, q, strict=True)), Fraction(0))
    freqs, acc_rate, _ = _article_simulation()
    return ArticleCheck(
        "six-token exactness example",
        "derived article, 'The acceptance rule, and why it is exact'",
        "With the deliberately bad draft q = (0.1, 0.1, 0.3, 0.3, 0.1, 0.1) for p = (0.4, 0.25, "
        "0.15, 0.1, 0.07, 0.03), speculative sampling outputs exactly p (exact enumeration, "
        "round criterion) and accepts with probability sum min(p, q) = 0.55; the article's "
        "million-sample run (seed 0) prints the same frequencies and acceptance rate 0.550.",
        expected={
            "exact output law": "(0.4, 0.25, 0.15, 0.1, 0.07, 0.03)",
            "round exact": "True",
            "acceptance": "0.550",
            "sampled frequencies": "(0.400, 0.250, 0.150, 0.100, 0.070, 0.030)",
            "sampled acceptance rate": "0.550",
        },
        computed={
            "exact output law": _row([float(v) for v in law]),
            "round exact": str(check.exact),
            "acceptance": f"{float(acceptance):.3f}",
            "sampled frequencies": _row(freqs, 3),
            "sampled acceptance rate": f"{acc_rate:.3f}",
        },
    )


_FORMULA_TABLE = {
    (0.6, 2): ("1.96", "1.96"),
    (0.6, 4): ("2.31", "2.31"),
    (0.6, 8): ("2.47", "2.48"),
    (0.8, 2): ("2.44", "2.44"),
    (0.8, 4): ("3.36", "3.36"),
    (0.8, 8): ("4.33", "4.32"),
    (0.9, 2): ("2.71", "2.71"),
    (0.9, 4): ("4.10", "4.10"),
    (0.9, 8): ("6.13", "6.13"),
}


@article_check(proof="thm_formula_table.py")
def formula_table() -> ArticleCheck:
    _, _, sims = _article_simulation()
    expected: dict[str, str] = {}
    computed: dict[str, str] = {}
    for (alpha, k), (formula, simulated) in _FORMULA_TABLE.items():
        exact = _tokens_per_round(Fraction(str(alpha)), k)
        expected[f"alpha={alpha} k={k} formula"] = formula
        computed[f"alpha={alpha} k={k} formula"] = f"{float(exact):.2f}"
        expected[f"alpha={alpha} k={k} simulated"] = simulated
        computed[f"alpha={alpha} k={k} simulated"] = f"{sims[(alpha, k)]:.2f}"
    return ArticleCheck(
        "tokens-per-step formula table",
        "derived article, 'How many tokens a step yields'",
        "With independent acceptance alpha and k drafts, a step yields (1 - alpha^(k+1)) / "
        "(1 - alpha) tokens; the article's table of the formula and of its simulation "
        "(200,000 steps each, seed 0) for alpha in (0.6, 0.8, 0.9) and k in (2, 4, 8).",
        expected,
        computed,
    )


_SPEEDUP_TABLE = {
    1: ("1.80", "1.71", "1.64", "1.38"),
    2: ("2.44", "2.22", "2.03", "1.52"),
    4: ("3.36", "2.80", "2.40", "1.53"),
    8: ("4.33", "3.09", "2.40", "1.27"),
    16: ("4.89", "2.72", "1.88", "0.84"),
}
_DRAFT_COSTS = ("0", "0.05", "0.1", "0.3")


@article_check(proof="thm_speedup_table.py")
def speedup_table() -> ArticleCheck:
    expected: dict[str, str] = {}
    computed: dict[str, str] = {}
    alpha = Fraction(4, 5)
    for k, row in _SPEEDUP_TABLE.items():
        tokens = _tokens_per_round(alpha, k)
        for c, printed in zip(_DRAFT_COSTS, row, strict=True):
            speedup = tokens / (k * Fraction(c) + 1)
            expected[f"k={k} c={c}"] = printed
            computed[f"k={k} c={c}"] = f"{float(speedup):.2f}"
    return ArticleCheck(
        "draft-cost speedup table",
        "derived article, 'How many tokens a step yields'",
        "At alpha = 0.8, with a draft step costing c of a target step, speculative decoding "
        "with k drafts speeds decoding up by ((1 - alpha^(k+1)) / (1 - alpha)) / (k c + 1).",
        expected,
        computed,
    )


@article_check(proof="thm_derived_arithmetic.py")
def derived_numbers() -> ArticleCheck:
    """The remaining arithmetic of the derived article."""
    pair = {k: _tokens_per_round(Fraction(3, 4), k) / (k * Fraction(32, 100) + 1) for k in range(1, 9)}
    best_k = max(pair, key=lambda k: pair[k])
    measured = {
        "rewrite k=4": (Fraction("0.787"), 4, "3.28"),
        "rewrite k=8": (Fraction("0.787"), 8, "4.15"),
        "open k=4": (Fraction("0.718"), 4, "2.87"),
        "open k=8": (Fraction("0.718"), 8, "3.37"),
    }
    expected = {
        "8B weight read at 3.35 TB/s (ms)": "4.8",
        "16 GFLOP at 989 TFLOPS (us)": "16",
        "compute-bound batch (flop per byte)": "295",
        "best k for alpha=0.75, c=0.32": "2",
        "peak speedup for alpha=0.75, c=0.32": "1.4",
    }
    computed = {
        "8B weight read at 3.35 TB/s (ms)": f"{16e9 / 3.35e12 * 1e3:.1f}",
        "16 GFLOP at 989 TFLOPS (us)": f"{16e9 / 989e12 * 1e6:.0f}",
        "compute-bound batch (flop per byte)": f"{989 / 3.35:.0f}",
        "best k for alpha=0.75, c=0.32": str(best_k),
        "peak speedup for alpha=0.75, c=0.32": f"{float(pair[best_k]):.1f}",
    }
    for label, (alpha, k, printed) in measured.items():
        expected[f"iid formula, {label}"] = printed
        computed[f"iid formula, {label}"] = f"{float(_tokens_per_round(alpha, k)):.2f}"
    return ArticleCheck(
        "derived article arithmetic",
        "derived article, 'Why verification is nearly free' and 'Measured acceptance'",
        "The article's arithmetic: an 8B model's 16 GB of weights take 4.8 ms at 3.35 TB/s "
        "while 16 GFLOP take about 16 us at 989 TFLOPS (compute-bound from about 295 flop per "
        "byte); the i.i.d. formula at the measured acceptances 0.787 and 0.718 gives 3.28 and "
        "4.15, 2.87 and 3.37 tokens per step at k = 4 and 8; a draft costing c = 0.32 with "
        "alpha = 0.75 peaks at about 1.4 times at k = 2.",
        expected,
        computed,
    )


def _over_ninths(value: Fraction) -> str:
    """Write ``value`` as the paper does, in ninths, when it is a whole number of them."""
    ninths = value * 9
    return f"{ninths.numerator}/9" if ninths.denominator == 1 else str(value)


@article_check(proof="thm_block_toy_example.py")
def block_toy_example() -> ArticleCheck:
    target, draft = _frac(["1/3", "2/3"]), _frac(["2/3", "1/3"])
    instance = ChainInstance(FixedModel(target), FixedModel(draft), gamma=2)
    token = expected_accepted(registry.get("token-level"), instance)
    block = expected_accepted(registry.get("block"), instance)
    block_law = check_round(registry.get("block"), instance)
    joint = Fraction(0)
    for i in (1, 2):
        for xs in itertools.product(range(2), repeat=i):
            ps = qs = Fraction(1)
            for x in xs:
                ps *= target[x]
                qs *= draft[x]
            joint += min(ps, qs)
    return ArticleCheck(
        "block verification toy example",
        "Sun et al., Block Verification Accelerates Speculative Decoding, ICLR 2025, Section 2",
        "Context-free M_b = (1/3, 2/3), M_s = (2/3, 1/3), gamma = 2: the expected number of "
        "accepted drafts is 10/9 for token-level verification, 11/9 for block verification "
        "(which is also round-exact), and the unattainable joint bound is 12/9.",
        expected={"token-level": "10/9", "block": "11/9", "joint bound": "12/9", "block exact": "True"},
        computed={
            "token-level": _over_ninths(token),
            "block": _over_ninths(block),
            "joint bound": _over_ninths(joint),
            "block exact": str(block_law.exact),
        },
    )


@article_check(proof="thm_argmax_softmax_q.py")
def known_bug_examples() -> ArticleCheck:
    hf = _first_token_law("greedy-draft-softmax-q", _frac(["0.6", "0.4"]), _frac(["0.8", "0.2"]))
    jaymody = _first_token_law(
        "greedy-draft-softmax-q", _frac(["1/6", "1/3", "1/2"]), _frac(["1/2", "1/3", "1/6"])
    )
    return ArticleCheck(
        "argmax drafting with a softmax q",
        "huggingface/transformers #32867; jaymody/speculative-sampling #3",
        "Greedy drafting while the ratio uses the softmax q turns p = (0.6, 0.4), q = (0.8, 0.2) "
        "into (0.75, 0.25), and p = (1/6, 1/3, 1/2), q = (1/2, 1/3, 1/6) into (1/3, 0, 2/3).",
        expected={"transformers #32867": "(0.75, 0.25)", "jaymody #3": "(1/3, 0, 2/3)"},
        computed={"transformers #32867": _row([float(v) for v in hf]), "jaymody #3": _row(jaymody)},
    )


def assert_reproduced(result: ArticleCheck) -> None:
    """Fail with every mismatch listed unless ``result`` reproduces the article."""
    assert result.ok, result.mismatches()


def print_article_check(result: ArticleCheck) -> None:
    """Print an article check for a person: statement, each number beside the article's, verdict."""
    print(result.statement)
    for key, value in result.computed.items():
        print(f"  {key}: {value} (article: {result.expected.get(key)})")
    print("reproduced" if result.ok else "MISMATCH")


def all_article_checks() -> list[ArticleCheck]:
    """Run every article check."""
    return [check() for check in article_checks()]
