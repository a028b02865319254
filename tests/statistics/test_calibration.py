"""A bounded calibration run: the false-alarm rate of the audit's test holds on exact verifiers.

Design: 2000 null repetitions at alpha = 0.01 per verifier. A correct test rejects Bin(2000, 0.01)
times; the assertion fails only above the count whose upper-tail probability is below
PER_TEST_ALPHA, so a calibrated test fails it with probability at most PER_TEST_ALPHA. The full
calibration (20,000 repetitions, alpha 0.01 and 0.001, power on controls) is the slow
`python -m verispec.audits.calibration`, whose tables are in docs/reference/calibration.md.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from verispec.audits.calibration import calibrate, sequential_false_alarms
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.stats.vectorised import token_level_rounds

REPS, ALPHA = 2000, 0.01
LIMIT = int(stats.binom.isf(PER_TEST_ALPHA, REPS, ALPHA))


@pytest.mark.statistical
def test_false_alarms_of_the_audit_test_stay_within_alpha() -> None:
    for row in calibrate(["token-level", "block", "mss", "traversal"], alpha=ALPHA, reps=REPS):
        assert row.rejections <= LIMIT, row.to_json()


@pytest.mark.statistical
def test_sequential_designs_keep_their_rate_under_the_null() -> None:
    seq = sequential_false_alarms(
        [0.5, 0.3, 0.2], [0.4, 0.32, 0.28], alpha=ALPHA, reps=REPS, cap=2000, seed=9
    )
    assert seq["sprt_rejections"] <= LIMIT and seq["eprocess_rejections"] <= LIMIT


@pytest.mark.statistical
def test_vectorised_sampler_matches_the_exact_executor() -> None:
    """The numpy token-level sampler against the exact law of the registered verifier."""
    from fractions import Fraction

    from verispec.core.models import TableModel
    from verispec.exact.criterion import round_law
    from verispec.stats.gof import g_test, pooled_cells
    from verispec.verifiers import registry
    from verispec.verifiers.instance import ChainInstance

    rng = np.random.default_rng(17)
    vocab, gamma = 4, 2
    weights = rng.integers(0, 5, size=(2 * gamma + 1, vocab)) + np.array([1, 0, 0, 0])
    rows = [tuple(Fraction(int(w), int(r.sum())) for w in r) for r in weights]
    target_rows, draft_rows = rows[: gamma + 1], rows[gamma + 1 :]

    def by_depth(table):
        return TableModel({p: table[len(p)] for n in range(len(table)) for p in np.ndindex(*(vocab,) * n)})

    instance = ChainInstance(by_depth(target_rows), by_depth(draft_rows), gamma)
    law = {" ".join(map(str, b)): w for b, w in round_law(registry.get("token-level"), instance).items()}
    n = 50_000
    lengths, tokens = token_level_rounds(np.array(target_rows, float), np.array(draft_rows, float), n, rng)
    counts: dict[str, int] = {}
    for length, row in zip(lengths, tokens, strict=True):
        key = " ".join(map(str, row[:length]))
        counts[key] = counts.get(key, 0) + 1
    assert g_test(counts, law, pooled_cells(law, n), exact="never").pvalue > PER_TEST_ALPHA
