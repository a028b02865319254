"""Deprecated: renamed :mod:`verispec.exact.articles` (it holds the seed *articles'* numbers,
not random seeds), with ``SeedCheck`` as ``ArticleCheck`` and each ``*seed_check*`` function
as ``*article_check*``."""

from __future__ import annotations

import warnings

from verispec._compat import REMOVED_IN
from verispec.exact.articles import (
    ArticleCheck,
    all_article_checks,
    article_check,
    article_check_proofs,
    article_checks,
    assert_reproduced,
    print_article_check,
)

__all__ = [
    "SeedCheck",
    "all_seed_checks",
    "assert_reproduced",
    "print_seed_check",
    "seed_check",
    "seed_check_proofs",
    "seed_checks",
]

warnings.warn(
    "verispec.exact.seeds is deprecated: use verispec.exact.articles (SeedCheck is ArticleCheck, "
    f"seed_check* is article_check*); the old names are removed in verispec {REMOVED_IN}",
    DeprecationWarning,
    stacklevel=2,
)

SeedCheck = ArticleCheck
seed_check = article_check
seed_checks = article_checks
seed_check_proofs = article_check_proofs
all_seed_checks = all_article_checks
print_seed_check = print_article_check
