"""The reference engine: speculative decoding in plain torch, built on proved index functions.

It runs a draft and a target :class:`~verispec.engines.torchlm.TorchLM` with their own KV
caches, verifies with the float execution of a registered chain verifier, and takes every
mask, position, crop, draft-sync and truncation from :mod:`verispec.smt.index`.

* :mod:`~verispec.engines.reference.hooks`: the seams of a round (:class:`Hooks`), their
  correct versions, and the planted bugs, each declared on the function that replaces one seam;
* :mod:`~verispec.engines.reference.engine`: the rounds (:class:`ReferenceEngine`) and the
  built-in engines ``reference``, ``reference-paged`` and ``reference-tree``.
"""

from __future__ import annotations

from verispec.engines.reference.engine import ReferenceEngine, make_reference
from verispec.engines.reference.hooks import Hooks, planted_hooks, probs, verify_correctly, with_hooks

__all__ = [
    "Hooks",
    "ReferenceEngine",
    "make_reference",
    "planted_hooks",
    "probs",
    "verify_correctly",
    "with_hooks",
]
