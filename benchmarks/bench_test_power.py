"""Which test of an audit instance is most powerful against the catalog's chain controls?
Prints figures; asserts nothing; exact (no sampling).

    python benchmarks/bench_test_power.py      # about a minute

For every control and every instance of the chain audit battery, the exact law ``F`` of an
audited sample ("one round of the control, then target sampling", as the audit worker draws
it) is computed with fractions and compared with the target's law ``p`` on four views of the
same sample:

* ``full``: the whole sequence (the audit's G-test);
* ``first``: the first token;
* ``prefix-2``: the first two tokens;
* ``best position``: the single position j whose marginal law moves most (chosen after the
  fact, so it is the best a per-position test could do, not a test one could plan blind).

Each view's effect is Cohen's ``w^2 = sum (F - p)^2 / p`` over its cells, and its sample size
is the smallest ``n`` at which Pearson's test (noncentral chi-square, the audit's planning
approximation, without the pooling of small cells) has power 0.99 at the instance's rate
(1e-6 over 8 instances). Every view is a valid test under the null (each marginal of the
target's law is known exactly). The acceptance-length law is not: lossless verifiers differ
in it, so it is left out. A cell with ``F > 0`` and ``p = 0`` (an impossible sequence) makes
the effect infinite and the view detects the control at the first such sample.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

CONTROLS = [
    "resample-target",
    "softmax-residual",
    "reused-uniform",
    "bonus-wrong-row",
    "block-first-failure",
    "damped ratio",
]
ALPHA, POWER = 1e-6 / 8, 0.99


def _samples(effect: tuple[float, float, int], alpha: float = ALPHA) -> float:
    """The smallest n with power POWER at ``alpha`` for ``(w^2, impossible mass, df)``: the
    chi-square test's n on the possible cells, or the n at which an impossible sequence
    shows up with probability POWER, whichever is smaller (inf when neither moves)."""
    from verispec.stats.plan import chi_square_power

    w2, impossible, df = effect
    n_impossible = math.ceil(math.log(1 - POWER) / math.log1p(-impossible)) if impossible > 0 else math.inf
    if w2 < 1e-18:  # float noise of an unchanged law
        return n_impossible
    w, hi = math.sqrt(w2), 1
    while chi_square_power(hi, w, max(df, 1), alpha) < POWER:
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if chi_square_power(mid, w, max(df, 1), alpha) < POWER else (lo, mid)
    return min(hi, n_impossible)


def _effect(f: dict, p: dict) -> tuple[float, float, int]:
    """Cohen's w^2 of law ``f`` against ``p`` on the cells ``p`` can emit, the mass ``f`` puts
    on cells ``p`` cannot, and the cells' df."""
    w2, impossible = 0.0, 0.0
    for key in set(f) | set(p):
        fk, pk = f.get(key, 0.0), p.get(key, 0.0)
        if pk == 0:
            impossible += fk
            continue
        w2 += (fk - pk) ** 2 / pk
    return w2, impossible, sum(1 for v in p.values() if v > 0) - 1


def _marginal(law: dict, pick) -> dict:
    out: dict = defaultdict(float)
    for s, v in law.items():
        out[pick(s)] += v
    return dict(out)


def damped_ratio() -> object:
    """The fixture ``damped_ratio`` in fractions, unregistered: Algorithm 1 with the acceptance
    ratio damped to 19/20 of itself where p < q (the residual and bonus unchanged)."""
    from verispec.verifiers.chain import acceptance_ratio
    from verispec.verifiers.controls import _residual, _token_level_with
    from verispec.verifiers.registry import ChainVerifier

    def damped(p, q, x):  # type: ignore[no-untyped-def]
        ratio = acceptance_ratio(p, q, x)
        return ratio * Fraction(19, 20) if ratio < 1 else ratio

    def verify(target_probs, draft_probs, draft_tokens, rand):  # type: ignore[no-untyped-def]
        return _token_level_with(
            target_probs,
            draft_probs,
            draft_tokens,
            rand,
            correction=_residual,
            bonus_row=len(draft_tokens),
            ratio=damped,
        )

    return ChainVerifier("damped-ratio", "control", verify, "sample", "damped ratio", "tests/fixtures")


def views(control: str, item) -> dict[str, float]:
    from verispec.exact.criterion import _walk, round_law
    from verispec.verifiers import registry

    entry = damped_ratio() if control == "damped ratio" else registry.get_chain(control)
    law = round_law(entry, item.instance)
    triples = list(_walk(item.instance, law, item.length))
    # a control's law can hold certified reals (softmax-residual's exp): compared as floats
    f = {s: float(fs) for s, fs, _ in triples if float(fs) != 0}
    p = {s: float(ps) for s, _, ps in triples if ps != 0}
    effects = {"full": _effect(f, p)}
    for name, pick in (("first", lambda s: s[0]), ("prefix-2", lambda s: s[:2])):
        effects[name] = _effect(_marginal(f, pick), _marginal(p, pick))
    for j in range(item.length):

        def at(s: tuple[int, ...], j: int = j) -> int:
            return s[j]

        effects[f"position {j}"] = _effect(_marginal(f, at), _marginal(p, at))
    out = {name: _samples(effects[name]) for name in ("full", "first", "prefix-2")}
    out["best position"] = min(_samples(e) for k, e in effects.items() if k.startswith("position"))
    # the full-cell test and every position marginal, Bonferroni at ALPHA / (1 + length)
    split = ALPHA / (1 + item.length)
    out["full + positions"] = min(
        _samples(e, split) for k, e in effects.items() if k == "full" or k.startswith("position")
    )
    return out


def main() -> None:
    from verispec.audits.instances import chain_audit_instances

    items = chain_audit_instances(0)
    names = ["full", "first", "prefix-2", "best position", "full + positions"]
    print("Samples for power 0.99 at 1e-6/8 on the most sensitive instance of each control")
    print(f"| control | {' | '.join(names)} | instance (full) |")
    print(f"|---|{'---|' * len(names)}---|")
    for control in CONTROLS:
        table = {item.name: views(control, item) for item in items}
        best = {name: min(row[name] for row in table.values()) for name in names}
        where = min(table, key=lambda k: table[k]["full"])
        cells = ["never" if math.isinf(best[n]) else f"{best[n]:,.0f}" for n in names]
        print(f"| {control} | {' | '.join(cells)} | {where} |")


if __name__ == "__main__":
    main()
