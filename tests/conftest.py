"""Shared fixtures for verispec's tests."""

from __future__ import annotations

from fractions import Fraction

import pytest

from verispec.core.models import FixedModel
from verispec.verifiers.instance import ChainInstance

pytest_plugins = ["pytester"]


@pytest.fixture
def article_instance() -> ChainInstance:
    """The audit article's three-token example: p=(0.5, 0.3, 0.2), q=(0.2, 0.2, 0.6), gamma=1."""
    return ChainInstance(FixedModel(["1/2", "3/10", "1/5"]), FixedModel(["1/5", "1/5", "3/5"]), gamma=1)


def F(text: str) -> Fraction:
    return Fraction(text)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse to run more statistical tests than the false-alarm budget was split for."""
    from verispec.stats.constants import MAX_STATISTICAL_TESTS

    statistical = [item for item in items if item.get_closest_marker("statistical")]
    if len(statistical) > MAX_STATISTICAL_TESTS:
        raise pytest.UsageError(
            f"{len(statistical)} statistical tests exceed MAX_STATISTICAL_TESTS={MAX_STATISTICAL_TESTS}: "
            "raise the budget split in verispec/stats/constants.py"
        )
