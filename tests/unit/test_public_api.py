"""The public API: every name in __all__ imports from its public path; imports stay light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import verispec
from verispec.errors import UsageError


def test_every_public_name_resolves() -> None:
    for name in verispec.__all__:
        assert getattr(verispec, name) is not None, name


@pytest.mark.parametrize("module", ["verispec", "verispec.cli"])
def test_import_does_not_load_heavy_dependencies(module: str) -> None:
    """Neither the package nor the command line (its imports at module top) loads a heavy
    dependency: each loads where it is used."""
    code = (
        f"import sys, {module}; "
        "names = ('torch', 'transformers', 'z3', 'sympy', 'scipy', 'hypothesis'); "
        "heavy = [m for m in names if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_strategies_is_public() -> None:
    from verispec import strategies

    assert set(strategies.__all__) >= {"chain_instances", "conditional_models", "distributions"}


#: The public API, pinned: a name added or removed here is a decision, with a CHANGELOG entry.
PUBLIC_API = {
    "Budget", "CertifiedReal", "ChainInstance", "ChainVerifier", "Completion", "Counterexample",
    "DraftTree", "Engine", "ExitCode", "FixedModel", "InternalError", "MissingDependency", "Mutant",
    "NonConformance", "ProveBudget", "ProveResult", "Proved", "Random", "RandomRationalModel",
    "Refuted", "Request", "RoundStat", "RunVerdict", "Sampling", "SamplingConfig", "SeededRandom",
    "Status", "TableModel", "TreeInstance", "TreeVerifier", "Unknown", "UsageError", "__version__",
    "apply_exact", "apply_float", "as_exact_distribution", "as_float_distribution", "audit",
    "check_multi_round", "check_round", "conform", "expected_accepted", "find_counterexample",
    "get_verifier", "optimal_acceptance", "output_law", "prove", "run_controls", "run_main_job",
    "run_round", "sample_blocks", "tv_distance", "verifier_names",
}  # fmt: skip


def test_the_public_api_is_pinned() -> None:
    assert set(verispec.__all__) == PUBLIC_API
    assert sorted(dir(verispec)) == sorted(PUBLIC_API)


def test_public_names_are_the_objects_of_their_modules() -> None:
    """``verispec.conform`` is the runner's function and ``verispec.audit`` the auditor's (the
    audits live in ``verispec.audits``, so no subpackage shadows the function)."""
    from verispec.audits.runner import audit
    from verispec.conformance.runner import conform
    from verispec.engines.protocol import Engine, Request

    assert verispec.conform is conform and verispec.audit is audit
    assert verispec.Engine is Engine and verispec.Request is Request
    assert callable(verispec.audit)


def test_doctests_run() -> None:
    """Every docstring example in the package runs as written."""
    import doctest
    import importlib
    import pkgutil

    from verispec._compat import MOVED_MODULES

    failures = []
    tried = 0
    modules = ["verispec"] + [info.name for info in pkgutil.walk_packages(verispec.__path__, "verispec.")]
    for name in modules:
        if name.endswith("__main__") or name in MOVED_MODULES:  # a shim warns on import
            continue
        module = importlib.import_module(name)
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        tried += result.attempted
        if result.failed:
            failures.append(name)
    assert not failures, failures
    assert tried >= 10


class TestDeprecatedNames:
    """Names renamed in this release still work for one release, each with a warning naming the
    new one (the suite turns warnings into errors, so nothing of verispec's own uses them)."""

    def test_run_check_is_run_main_job(self) -> None:
        import pytest

        with pytest.warns(
            DeprecationWarning, match=r"verispec\.run_check is deprecated: use verispec\.run_main_job"
        ):
            old = verispec.run_check
        assert old is verispec.run_main_job
        from verispec import mainjob

        with pytest.warns(DeprecationWarning, match=r"verispec\.mainjob\.CheckJob is deprecated"):
            assert mainjob.CheckJob is mainjob.MainJob

    def test_the_controls_catalog_names_of_the_last_release(self) -> None:
        """ENGINE_MUTANTS, plant and quick_blind_spots of verispec.controls.mutants: the bugs
        are declared in the engine adapters now, and read through the engine registry."""
        from verispec.controls import mutants

        with pytest.warns(DeprecationWarning, match=r"mutants\.ENGINE_MUTANTS is deprecated"):
            assert tuple(mutants.engine_mutants()) == mutants.ENGINE_MUTANTS
        with pytest.warns(DeprecationWarning, match=r"mutants\.quick_blind_spots is deprecated"):
            blind = mutants.quick_blind_spots(["first-token-law"])
        assert [m.name for m in blind] == ["engine:reused-uniform"]
        with pytest.warns(DeprecationWarning, match=r"mutants\.plant is deprecated"):
            plant = mutants.plant
        with pytest.raises(UsageError, match="mutation='nope' is not a known name"):
            plant("reference", ["nope"])

    def test_renamed_modules_warn_naming_the_new_ones(self) -> None:
        """Each renamed module, imported afresh in a subprocess (the warning fires on first
        import), warns naming its new path."""
        from verispec._compat import MOVED_MODULES

        code = (
            "import sys, warnings\n"
            "warnings.simplefilter('error')\n"
            "try:\n"
            "    __import__(sys.argv[1])\n"
            "except DeprecationWarning as w:\n"
            "    print(w)\n"
        )
        for old, new in MOVED_MODULES.items():
            run = subprocess.run(
                [sys.executable, "-c", code, old], capture_output=True, text=True, check=True
            )
            assert f"{old} is deprecated: use {new}" in run.stdout, run.stdout + run.stderr

    def test_renamed_modules_hand_back_the_same_objects(self) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from verispec.engines import model_pairs, models
            from verispec.exact import articles, seeds

        assert models.load_pair is model_pairs.load_pair
        assert seeds.SeedCheck is articles.ArticleCheck and seeds.seed_checks is articles.article_checks
