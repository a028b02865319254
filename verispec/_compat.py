"""Old names kept for one release, each with a :class:`DeprecationWarning` naming the new one.

A renamed module leaves a shim at its old path::

    sys.modules[__name__] = moved(__name__, "verispec.engines.model_pairs")

so ``import verispec.engines.models`` still works, warns once, and hands back the new module.
"""

from __future__ import annotations

import importlib
import warnings
from types import ModuleType

__all__ = ["MOVED_MODULES", "REMOVED_IN", "deprecated_name", "moved"]

#: The release that removes the old names.
REMOVED_IN = "0.2"
#: Every module left at an old path, and its new path.
MOVED_MODULES = {
    "verispec.conformance.pytest_plugin": "verispec.conformance.pytest_suite",
    "verispec.engines.models": "verispec.engines.model_pairs",
    "verispec.exact.seeds": "verispec.exact.articles",
    "verispec.sampling": "verispec.verifiers.float_execution",
}


def deprecated_name(old: str, new: str) -> None:
    """Warn that ``old`` is deprecated in favour of ``new``."""
    warnings.warn(
        f"{old} is deprecated: use {new} ({old} is removed in verispec {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=3,
    )


def moved(old: str, new: str) -> ModuleType:
    """The module ``new``, after warning that it used to be ``old``."""
    deprecated_name(old, new)
    return importlib.import_module(new)
