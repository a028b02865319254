"""Statistical constants, each with its derivation. Tests import these; never retype them.

The suite's family-wise false-alarm rate is bounded by Bonferroni: at most
:data:`MAX_STATISTICAL_TESTS` tests (marked ``statistical``; the test session refuses to
run more) each get :data:`PER_TEST_ALPHA`, so the probability that any correct sampler is
flagged in one CI run is at most :data:`SUITE_ALPHA`. Tests that show a check *detects* a
mutant use the same rate for a miss, so a CI run is flaky with probability at most
``2 * SUITE_ALPHA`` in all.
"""

#: Family-wise false-alarm rate of verispec's own test suite (one CI run).
SUITE_ALPHA = 1e-6

#: The most statistical tests the suite may hold; the budget is split evenly among them.
MAX_STATISTICAL_TESTS = 200

#: Per-test false-alarm rate (and miss rate for detection tests): SUITE_ALPHA / MAX_STATISTICAL_TESTS.
PER_TEST_ALPHA = SUITE_ALPHA / MAX_STATISTICAL_TESTS

#: Smallest expected count a cell may have before it is pooled. Pooling is decided from the
#: exact law and the planned n before any sample is drawn, never from observed counts.
MIN_EXPECTED_COUNT = 5.0
