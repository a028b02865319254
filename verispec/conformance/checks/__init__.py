"""The conformance checks, one module per family, each check declared on its function.

* :mod:`~verispec.conformance.checks.invariance`: greedy equivalence, determinism,
  penalties, ragged batches;
* :mod:`~verispec.conformance.checks.sampling_law`: the sampling law (randomized PIT);
* :mod:`~verispec.conformance.checks.first_token`: the first token's exact law;
* :mod:`~verispec.conformance.checks.cache_rollback`: the law after forced rejections;
* :mod:`~verispec.conformance.checks.length_ids`: stops, budgets and ids;
* :mod:`~verispec.conformance.checks.accounting`: acceptance against the models.

:mod:`~verispec.conformance.checks.registry` holds the decorator and the registry,
:mod:`~verispec.conformance.checks.context` what a running check is handed (the engine,
its budget, the one seed scheme, the baseline).
"""

from verispec.conformance.checks.registry import (
    POWER,
    Check,
    CheckResult,
    Effect,
    check,
    checks,
    get,
    names,
    select,
)

__all__ = ["POWER", "Check", "CheckResult", "Effect", "check", "checks", "get", "names", "select"]
