"""verispec's conformance checks inside an engine's own pytest suite.

In the engine's tests::

    from verispec.conformance.pytest_plugin import conformance_suite

    test_verispec_conformance = conformance_suite("mypkg.spec:make_engine", quick=True)

This yields one pytest test per check. The conformance run starts lazily, once, when the
first of them runs; a check the engine cannot run is reported as skipped with its reason,
never as passed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["conformance_suite"]


def conformance_suite(
    engine: str,
    *,
    quick: bool = True,
    device: str = "cpu",
    seed: int = 0,
    alpha: float = 1e-6,
    **options: Any,
) -> Callable[[str], None]:
    """A test function parametrized over every check (see the module docstring)."""
    import pytest

    from verispec.conformance.checks import CHECKS

    cache: dict[str, Any] = {}

    @pytest.mark.parametrize("check", [c.name for c in CHECKS])
    def test(check: str) -> None:
        if "run" not in cache:
            from verispec.conformance.runner import conform

            cache["run"] = conform(
                engine, device=device, quick=quick, seed=seed, alpha=alpha, options=options
            )
        result = next(r for r in cache["run"].results if r.name == check)
        if result.status == "skip":
            pytest.skip(result.reason)
        assert result.status == "pass", (
            f"{check}: {result.reason} (reproduce: {cache['run'].to_json()['reproduce']})"
        )

    return test
