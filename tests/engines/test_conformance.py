"""The conformance suite: built-in engines pass, planted bugs are caught, bad engines reported.

Statistical checks run at the suite's PER_TEST_ALPHA (split inside the run over its
statistical checks) with the quick design; seeds are fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.cli import main
from verispec.conformance.checks import CHECKS, dkw_sample_size
from verispec.conformance.runner import conform
from verispec.errors import UsageError
from verispec.stats.constants import PER_TEST_ALPHA

pytestmark = pytest.mark.torch
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)


def test_dkw_plan_matches_tfp() -> None:
    """TensorFlow Probability's min_num_samples_for_dkwm_cdf_test(0.1, 1e-6, 0.01) is 2902."""
    assert dkw_sample_size(0.1, 1e-6, 0.99) == 2902


@pytest.mark.statistical
@pytest.mark.parametrize("engine", ["reference", "reference-tree", "hf-assisted"])
def test_builtin_engines_pass(engine: str, tmp_path) -> None:
    run = conform(engine, quick=True, alpha=PER_TEST_ALPHA, out=tmp_path)
    assert run.verdict == "pass", [r.to_json() for r in run.results if r.status not in ("pass", "skip")]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "complete" and report["verdict"] == "pass"
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()


#: (mutation, the check that must catch it). Each check has at least one mutant it catches.
CAUGHT = [
    ("top-left-mask", "greedy-equivalence"),
    ("positions-reset", "greedy-equivalence"),
    ("crop-plus-one", "cache-rollback"),
    ("resample-target", "sampling-law"),
    ("softmax-residual", "sampling-law"),
    ("softmax-residual", "first-token-law"),
    ("no-eos-crop", "eos-length"),
    ("eos-budget-first", "eos-length"),
    ("vocab-overflow", "ids-in-vocab"),
    ("missing-bonus", "acceptance-accounting"),
    ("draft-no-catch-up", "acceptance-accounting"),
    ("draft-probs-none", "acceptance-accounting"),
    ("target-default-params", "sampling-law"),
    ("greedy-draft-softmax-q", "sampling-law"),
    ("always-accept", "sampling-law"),
    ("unnormalised-draft", "sampling-law"),
    ("min-p-verify-ignored", "sampling-law"),
    ("raw-q-processed-draft", "first-token-law"),
    ("reused-uniform", "first-token-law"),
    ("bonus-untruncated", "cache-rollback"),
    ("crop-no-op", "greedy-equivalence"),
    ("penalty-ignored", "penalties"),
    ("unseeded", "determinism"),
    ("ragged-shared-offset", "ragged-batch"),
    ("batch-order-by-length", "ragged-batch"),
]


TREE_MUTANTS = ["tree-sibling-visible", "tree-depth-mask", "tree-positions-by-row", "tree-no-compaction"]


@pytest.mark.parametrize("mutation", TREE_MUTANTS)
def test_tree_mutants_are_caught_by_greedy_equivalence(mutation: str) -> None:
    run = conform(
        "reference-tree", quick=True, checks=["greedy-equivalence"], options={"mutations": [mutation]}
    )
    assert run.results[0].status == "fail", run.results[0].to_json()


#: Patches of transformers' assisted generation: the real engine, with a real bug put back.
HF_CAUGHT = [("softmax-residual", "first-token-law"), ("greedy-draft-softmax-q", "sampling-law")]


@pytest.mark.statistical
@pytest.mark.parametrize(("mutation", "check"), HF_CAUGHT)
def test_transformers_patches_are_caught(mutation: str, check: str) -> None:
    """The first-token test asks for gamma + 1 tokens: on one-token requests transformers
    never drafts, and the softmax residual went unseen (1,024 requests, p = 1)."""
    run = conform(
        "hf-assisted", quick=True, alpha=PER_TEST_ALPHA, checks=[check], options={"mutations": [mutation]}
    )
    assert run.results[0].status == "fail", run.results[0].to_json()
    assert run.name == f"hf-assisted[{mutation}]"


def test_an_unknown_transformers_patch_is_named() -> None:
    with pytest.raises(UsageError, match="mutation"):
        conform("hf-assisted", quick=True, checks=["ids-in-vocab"], options={"mutations": ["nope"]})


def test_every_check_has_a_mutant() -> None:
    from verispec.engines.reference import MUTATIONS

    assert {c.name for c in CHECKS} == {check for _, check in CAUGHT}
    declared = {(m, c.name) for c in CHECKS for m in c.mutants}
    assert set(CAUGHT) <= declared and {m for m, _ in declared} <= set(MUTATIONS)
    assert {(m, "greedy-equivalence") for m in TREE_MUTANTS} <= declared


@pytest.mark.statistical
@pytest.mark.parametrize(("mutation", "check"), CAUGHT)
def test_mutants_are_caught(mutation: str, check: str) -> None:
    run = conform(
        "reference", quick=True, alpha=PER_TEST_ALPHA, checks=[check], options={"mutations": [mutation]}
    )
    assert run.results[0].status == "fail", run.results[0].to_json()


class TestEnginesDefinedElsewhere:
    def test_a_correct_engine_passes_and_missing_capabilities_are_skipped(self) -> None:
        run = conform(
            "tests.fixtures.my_engine:make_plain",
            quick=True,
            alpha=PER_TEST_ALPHA,
            checks=["greedy-equivalence", "eos-length", "cache-rollback", "determinism"],
        )
        statuses = {r.name: r.status for r in run.results}
        assert statuses == {
            "greedy-equivalence": "pass",
            "eos-length": "pass",
            "cache-rollback": "skip",
            "determinism": "pass",
        }
        skipped = next(r for r in run.results if r.status == "skip")
        assert skipped.reason == "the engine lacks the capability scripted-drafts"

    @pytest.mark.parametrize(
        ("factory", "message"),
        [
            ("make_crashing", "engine error: RuntimeError: CUDA error"),
            ("make_out_of_range", "outside the vocabulary 0..23"),
            ("make_too_many", "tokens for max_new_tokens="),
            (
                "make_vocab_mismatch",
                "vocabulary mismatch: the engine declares vocab_size=24 but its target's baseline "
                "has 25 logits",
            ),
        ],
    )
    def test_misbehaving_engines_fail_with_the_reason_and_the_run_goes_on(
        self, factory: str, message: str
    ) -> None:
        run = conform(
            f"tests.fixtures.my_engine:{factory}",
            quick=True,
            checks=["greedy-equivalence", "eos-length", "determinism"],
        )
        assert len(run.results) == 3
        assert any(message in r.reason for r in run.results if r.status == "fail")

    def test_batches_are_compared_with_single_requests(self) -> None:
        good = conform("tests.fixtures.my_engine:make_batch", quick=True, checks=["ragged-batch"])
        assert good.results[0].status == "pass", good.results[0].to_json()
        # no round statistics: raggedness cannot be shown, and the reason says so
        assert "an unknown number of ragged rounds" in good.results[0].reason
        short = conform("tests.fixtures.my_engine:make_short_batch", quick=True, checks=["ragged-batch"])
        assert short.results[0].status == "fail"
        assert "answered 5 completions for a batch of 6 requests" in short.results[0].reason

    def test_a_hanging_engine_hits_the_time_limit(self) -> None:
        run = conform(
            "tests.fixtures.my_engine:make_hanging", quick=True, checks=["determinism"], timeout_s=5
        )
        assert run.results[0].status == "fail"
        assert "no answer within 5 s (time limit)" in run.results[0].reason

    def test_factory_that_does_not_import_names_module_and_attribute(self) -> None:
        with pytest.raises(UsageError, match=r"cannot import 'no_such_pkg\.spec': ModuleNotFoundError"):
            conform("no_such_pkg.spec:make_engine", quick=True)
        with pytest.raises(UsageError, match="has no attribute 'nope'"):
            conform("tests.fixtures.my_engine:nope", quick=True)


@pytest.mark.statistical
def test_the_sequential_design_stops_at_the_first_evidence() -> None:
    """softmax-residual: the planned first-token test spends its whole plan; the e-process
    stops far sooner, and both reject."""
    runs = {
        design: conform(
            "reference",
            quick=True,
            alpha=PER_TEST_ALPHA,
            checks=["first-token-law"],
            options={"mutations": ["softmax-residual"]},
            design=design,
        ).results[0]
        for design in ("planned", "sequential")
    }
    assert all(r.status == "fail" for r in runs.values())
    assert runs["sequential"].samples < runs["planned"].samples / 2


@pytest.mark.statistical
def test_report_shows_measured_and_predicted_survival(tmp_path) -> None:
    run = conform(
        "reference", quick=True, alpha=PER_TEST_ALPHA, checks=["acceptance-accounting"], out=tmp_path
    )
    survival = run.results[0].details["survival"]
    assert survival["rounds"] == 100 and len(survival["measured"]) == len(survival["predicted"]) == 3
    # both decrease in j; over 100 rounds the measured survival's standard error is at most
    # 0.05, so 0.25 is five of them
    assert survival["predicted"] == sorted(survival["predicted"], reverse=True)
    assert all(abs(m - p) < 0.25 for m, p in zip(survival["measured"], survival["predicted"], strict=True))
    assert "predicted" in (tmp_path / "report.md").read_text()
    assert "predicted from the models (orange)" in (tmp_path / "report.html").read_text()


def test_cli_conform_json(capsys) -> None:
    code = main(["conform", "--engine", "reference", "--quick", "--check", "determinism", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "pass" and data["checks"][0]["check"] == "determinism"
    assert data["reproduce"].startswith("verispec conform --engine reference")


def test_pytest_plugin_builds_one_test_per_check() -> None:
    from verispec.conformance.pytest_plugin import conformance_suite

    test = conformance_suite("reference")
    marks = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    assert marks and list(marks[0].args[1]) == [c.name for c in CHECKS]
