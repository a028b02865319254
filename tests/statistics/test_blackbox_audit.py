"""Black-box audits: exact verifiers pass, controls are rejected, bad black boxes are reported.

Each audit declares its family-wise false-alarm rate (the suite's PER_TEST_ALPHA, split over
its instances) and its power (0.99 against TV >= 0.05 per instance); sample sizes are planned;
seeds are fixed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verispec.audits.adapters import black_box
from verispec.audits.runner import audit
from verispec.cli import main
from verispec.errors import UsageError
from verispec.stats.constants import PER_TEST_ALPHA

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _in_repo_root(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)


@pytest.mark.statistical
@pytest.mark.parametrize("name", ["token-level", "block", "sample-and-match", "point-mass"])
def test_exact_chain_verifiers_pass(name: str) -> None:
    result = audit(black_box(name), "chain", alpha=PER_TEST_ALPHA, seed=1)
    assert result.verdict == "pass", result.to_json()


def _largest_exact_tv(name: str, items) -> float:
    from verispec.exact.criterion import check_round
    from verispec.verifiers import registry

    return max(float(check_round(registry.get(name), item.instance).tv_distance) for item in items)


@pytest.mark.statistical
@pytest.mark.parametrize(
    "name",
    ["resample-target", "softmax-residual", "reused-uniform", "bonus-wrong-row", "block-first-failure"],
)
def test_chain_controls_are_rejected(name: str) -> None:
    from verispec.audits.instances import chain_audit_instances

    # the planned power applies: some instance is at least TV 0.05 away from the target
    assert _largest_exact_tv(name, chain_audit_instances(0)) >= 0.05
    result = audit(black_box(name), "chain", alpha=PER_TEST_ALPHA, seed=0)
    assert result.verdict == "fail"


def test_missing_bonus_is_a_contract_error_on_the_full_acceptance_instance() -> None:
    result = audit(black_box("missing-bonus"), "chain", seed=1)
    full = next(r for r in result.instances if r.name.startswith("draft equals target"))
    assert "no bonus token" in full.error


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("name", "law"),
    [
        ("mss", "iid"),
        ("rrs-without-replacement", "wor"),
        ("traversal", "wor"),
        ("k-seq", "iid"),
        ("point-mass-tree", "det"),
    ],
)
def test_exact_tree_verifiers_pass(name: str, law: str) -> None:
    assert audit(black_box(name), "tree", law=law, alpha=PER_TEST_ALPHA, seed=1).verdict == "pass"


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("name", "law"),
    [
        ("mss", "wor"),
        ("mss-merged-duplicates", "iid"),
        ("best-of-rows", "iid"),
        ("typical-acceptance", "det"),
        ("k-seq-rho-one", "iid"),
        ("mss-deterministic-softmax-q", "det"),
    ],
)
def test_tree_controls_are_rejected(name: str, law: str) -> None:
    from verispec.audits.instances import tree_audit_instances

    assert _largest_exact_tv(name, tree_audit_instances(0, law=law)) >= 0.05
    assert audit(black_box(name), "tree", law=law, alpha=PER_TEST_ALPHA, seed=0).verdict == "fail"


class TestThirdPartyBlackBoxesInASubprocess:
    @pytest.mark.statistical
    def test_an_independent_correct_implementation_passes(self) -> None:
        result = audit(
            "tests.fixtures.black_boxes:speculative_sampling", "chain", alpha=PER_TEST_ALPHA, seed=2
        )
        assert result.verdict == "pass"

    @pytest.mark.statistical
    def test_the_seed_bug_is_rejected(self) -> None:
        result = audit("tests.fixtures.black_boxes:resample_on_reject", "chain", alpha=PER_TEST_ALPHA, seed=2)
        assert result.verdict == "fail"
        assert min(r.pvalue for r in result.instances if r.pvalue is not None) <= result.instances[0].alpha

    @pytest.mark.parametrize(
        ("function", "message"),
        [
            ("raises_sometimes", "raised ValueError: kernel launch failed"),
            ("too_many_tokens", "a round commits 1 to 4"),
            ("out_of_vocabulary", "outside the vocabulary 0..3"),
            ("float_tokens", "token ids must be integers"),
            ("empty_block", "returned 0 tokens []"),
        ],
    )
    def test_contract_violations_are_per_instance_errors(self, function: str, message: str) -> None:
        result = audit(f"tests.fixtures.black_boxes:{function}", "chain", seed=3)
        assert result.verdict == "fail"
        assert len(result.instances) == 8  # the audit went on with every instance
        assert any(r.error and message in r.error for r in result.instances)

    def test_a_hanging_black_box_is_stopped_and_the_audit_goes_on(self) -> None:
        result = audit("tests.fixtures.black_boxes:hangs", "chain", seed=3, timeout_s=1.5)
        assert len(result.instances) == 8
        assert all("did not finish within 1.5 s" in r.error for r in result.instances)

    def test_tree_black_box(self) -> None:
        result = audit("tests.fixtures.black_boxes:tree_sample_and_match", "tree", law="det", seed=4)
        assert result.verdict == "pass"

    def test_unimportable_function_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match="cannot import 'no_such_module'"):
            audit("no_such_module:f", "chain")


class TestCli:
    def test_audit_command_writes_json_and_markdown(self, tmp_path, capsys) -> None:
        code = main(
            [
                "audit",
                "--chain",
                "tests.fixtures.black_boxes:resample_on_reject",
                "--out",
                str(tmp_path),
                "--json",
            ]
        )
        assert code == 1
        data = json.loads(capsys.readouterr().out)
        assert data["verdict"] == "fail"
        assert data["reproduce"].startswith(
            "verispec audit --chain tests.fixtures.black_boxes:resample_on_reject"
        )
        assert (tmp_path / "audit.md").read_text().startswith("# Audit of")
        assert json.loads((tmp_path / "audit.json").read_text())["kind"] == "chain"

    def test_plan_command(self, capsys) -> None:
        assert main(["plan", "--null", "0.5,0.3,0.2", "--alternative", "0.4,0.32,0.28", "--json"]) == 0
        designs = {d["design"]: d["samples"] for d in json.loads(capsys.readouterr().out)["designs"]}
        assert designs["neyman-pearson optimum"] == 987
        assert designs["pearson, exact critical value"] == 1090

    def test_bad_values_are_usage_errors(self, capsys) -> None:
        assert main(["plan", "--null", "0.5,0.3,0.2", "--tv", "0.1", "--power", "1.2"]) == 2
        assert "power=1.2 must be in (0, 1)" in capsys.readouterr().err
        assert main(["audit", "--chain", "x:y", "--tv", "0"]) == 2
        assert "tv=0.0 must be in (0, 1)" in capsys.readouterr().err
