"""verispec's conformance checks inside an engine's own pytest suite.

In the engine's tests::

    from verispec.conformance.pytest_suite import conformance_suite

    test_verispec_conformance = conformance_suite("mypkg.spec:make_engine", quick=True)

This yields one pytest item per check (``test_verispec_conformance[first-token-law]``), so
``pytest -k first-token-law`` runs that check alone. The conformance run starts lazily, once,
when the first selected item runs, with exactly the checks pytest selected (the false-alarm
budget is split over them); a check the engine cannot run is reported as skipped with its
reason, never as passed, and a failure listed in ``expected_failures`` as an expected failure.
The run is kept on the test function as ``conformance_run`` (its report, seeds and reproduction
command).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from verispec.conformance.checks import names
from verispec.conformance.runner import conform
from verispec.verdicts import Status

__all__ = ["conformance_suite"]


def conformance_suite(
    engine: str,
    *,
    quick: bool = True,
    device: str = "cpu",
    seed: int = 0,
    alpha: float = 1e-6,
    expected_failures: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Callable[..., None]:
    """A test function parametrized over every check (see the module docstring)."""
    import pytest  # deferred: optional

    cache: dict[str, Any] = {}

    def selected(request: Any) -> list[str]:
        """The checks of this suite that pytest collected and kept (``-k``, ``--deselect``)."""
        mine = [
            item.callspec.params["check"]
            for item in request.session.items
            if getattr(item, "function", None) is test and hasattr(item, "callspec")
        ]
        return mine or [request.node.callspec.params["check"]]

    @pytest.mark.parametrize("check", names())
    def test(check: str, request: Any) -> None:
        if "run" not in cache:
            cache["run"] = conform(
                engine,
                device=device,
                quick=quick,
                seed=seed,
                alpha=alpha,
                checks=selected(request),
                options=options,
                expected_failures=expected_failures,
            )
            test.conformance_run = cache["run"]
        run = cache["run"]
        result = next((r for r in run.results if r.name == check), None)
        assert result is not None, (
            f"{check}: not in the conformance run (it ran {[r.name for r in run.results]})"
        )
        if result.status == Status.SKIP:
            pytest.skip(result.reason)
        if result.status == Status.XFAIL:
            pytest.xfail(f"{result.expected}: {result.reason}")
        assert result.status == Status.PASS, f"{check}: {result.reason} (reproduce: {run.reproduce})"

    suite: Callable[..., None] = test
    return suite
