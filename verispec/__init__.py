"""verispec: prove and test that speculative decoding keeps the target model's distribution.

The public API is re-exported here; implementation modules live behind it. Importing
verispec loads neither torch, transformers nor z3: heavy parts load where they are used.

>>> import verispec
>>> from fractions import Fraction
>>> inst = verispec.ChainInstance(
...     verispec.FixedModel(["1/2", "3/10", "1/5"]), verispec.FixedModel(["1/5", "1/5", "3/5"]), gamma=1)
>>> verispec.check_round(verispec.get_verifier("token-level"), inst).exact
True
"""

from __future__ import annotations

import importlib
from typing import Any

from verispec._compat import deprecated_name
from verispec._version import __version__

__all__ = [
    "Budget",
    "CertifiedReal",
    "ChainInstance",
    "ChainVerifier",
    "Completion",
    "Counterexample",
    "DraftTree",
    "Engine",
    "ExitCode",
    "FixedModel",
    "InternalError",
    "MissingDependency",
    "Mutant",
    "NonConformance",
    "ProveBudget",
    "ProveResult",
    "Proved",
    "Random",
    "RandomRationalModel",
    "Refuted",
    "Request",
    "RoundStat",
    "RunVerdict",
    "Sampling",
    "SamplingConfig",
    "SeededRandom",
    "Status",
    "TableModel",
    "TreeInstance",
    "TreeVerifier",
    "Unknown",
    "UsageError",
    "__version__",
    "apply_exact",
    "apply_float",
    "as_exact_distribution",
    "as_float_distribution",
    "audit",
    "check_multi_round",
    "check_round",
    "conform",
    "expected_accepted",
    "find_counterexample",
    "get_verifier",
    "optimal_acceptance",
    "output_law",
    "prove",
    "run_controls",
    "run_main_job",
    "run_round",
    "sample_blocks",
    "tv_distance",
    "verifier_names",
]

_LAZY = {
    "Budget": "verispec.stats.multiplicity",
    "ChainInstance": "verispec.verifiers.instance",
    "run_round": "verispec.verifiers.instance",
    "ChainVerifier": "verispec.verifiers.registry",
    "TreeVerifier": "verispec.verifiers.registry",
    "DraftTree": "verispec.verifiers.trees",
    "TreeInstance": "verispec.verifiers.trees",
    "optimal_acceptance": "verispec.exact.optimum",
    "CertifiedReal": "verispec.core.certified",
    "Counterexample": "verispec.exact.search",
    "find_counterexample": "verispec.exact.search",
    "ExitCode": "verispec.errors",
    "InternalError": "verispec.errors",
    "MissingDependency": "verispec.errors",
    "NonConformance": "verispec.errors",
    "UsageError": "verispec.errors",
    "FixedModel": "verispec.core.models",
    "RandomRationalModel": "verispec.core.models",
    "TableModel": "verispec.core.models",
    "ProveBudget": "verispec.exact.prove",
    "ProveResult": "verispec.exact.prove",
    "prove": "verispec.exact.prove",
    "Proved": "verispec.verdicts",
    "Refuted": "verispec.verdicts",
    "Unknown": "verispec.verdicts",
    "RunVerdict": "verispec.verdicts",
    "Status": "verispec.verdicts",
    "Random": "verispec.core.random",
    "SeededRandom": "verispec.core.random",
    "SamplingConfig": "verispec.core.transforms",
    "apply_exact": "verispec.core.transforms",
    "apply_float": "verispec.core.transforms",
    "as_exact_distribution": "verispec.core.distributions",
    "as_float_distribution": "verispec.core.distributions",
    "tv_distance": "verispec.core.distributions",
    "check_round": "verispec.exact.criterion",
    "check_multi_round": "verispec.exact.criterion",
    "expected_accepted": "verispec.exact.criterion",
    "output_law": "verispec.exact.executor",
    "sample_blocks": "verispec.verifiers.float_execution",
    "Engine": "verispec.engines.protocol",
    "Request": "verispec.engines.protocol",
    "Sampling": "verispec.engines.protocol",
    "Completion": "verispec.engines.protocol",
    "RoundStat": "verispec.engines.protocol",
    "conform": "verispec.conformance.runner",
    "audit": "verispec.audits.runner",
    "Mutant": "verispec.controls.mutants",
    "run_controls": "verispec.controls.runner",
    "run_main_job": "verispec.mainjob",
}
_RENAMED = {
    "get_verifier": ("verispec.verifiers.registry", "get"),
    "verifier_names": ("verispec.verifiers.registry", "names"),
}


#: Old public names, kept for one release: ``old -> (module, new name)``.
_DEPRECATED = {
    "run_check": ("verispec.mainjob", "run_main_job"),
}


def __getattr__(name: str) -> Any:
    if name in _DEPRECATED:
        module, new = _DEPRECATED[name]
        deprecated_name(f"verispec.{name}", f"verispec.{new}")
        return getattr(importlib.import_module(module), new)
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _RENAMED:
        module, attr = _RENAMED[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'verispec' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
