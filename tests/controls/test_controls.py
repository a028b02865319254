"""The negative-control catalog and its runner: complete, sourced, and honest about misses."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from verispec.cli import main
from verispec.controls.mutants import Mutant, catalog, find
from verispec.controls.render import html, markdown
from verispec.controls.runner import Cell, ControlResult, ControlsRun, SubjectResult
from verispec.errors import UsageError
from verispec.verdicts import Evidence, Failure, Status

#: The public engine bugs the controls issue names, each reproduced by an engine mutant.
REQUIRED_SOURCES = {
    "vllm-project/vllm #9834",
    "huggingface/transformers #32867",
    "huggingface/transformers PR #28508",
    "huggingface/transformers #47932",
    "vllm-project/vllm #40149",
    "vllm-project/vllm #42744",
    "vllm-project/vllm-ascend #13730",
    "flashinfer-ai/flashinfer PR #424",
    "NVIDIA/TensorRT-LLM #3125",
    "SafeAILab/EAGLE PR #215",
    "vllm-project/vllm #18902",
    "vllm-project/vllm PR #14645",
    "ml-explore/mlx-lm PR #1109",
    "sgl-project/sglang #31599",
    "huggingface/transformers #47912",
    "vllm-project/vllm GHSA-8wr5-jm2h-8r4f",
}
#: and the four mechanisms it names without a public bug
REQUIRED_MUTANTS = {"crop-plus-one", "top-left-mask", "positions-reset", "draft-no-catch-up"}


class TestCatalog:
    def test_every_required_bug_has_an_engine_mutant(self) -> None:
        engine = catalog(("engine",))
        for source in REQUIRED_SOURCES:
            assert any(source in m.source for m in engine), source
        assert {m.subject for m in engine} >= REQUIRED_MUTANTS

    def test_layers_cover_the_registries(self) -> None:
        pytest.importorskip("z3")
        from verispec.smt.catalog import CATALOG
        from verispec.verifiers import registry

        assert {c.subject for c in catalog(("verifier",))} == set(registry.names("control"))
        refuted = {e.name for e in CATALOG if e.expected == "refuted"}
        assert {c.subject for c in catalog(("index",))} == refuted

    def test_every_entry_is_sourced_and_has_a_way_to_be_caught(self) -> None:
        controls = catalog()
        assert len({c.name for c in controls}) == len(controls)
        for c in controls:
            assert c.source and c.mechanism, c.name
            if c.layer == "engine":
                assert c.caught_by, f"{c.name} has no check declared to catch it"
                assert c.hook and len(c.evidence) == len(c.caught_by), c.name
                assert c.reproduce.startswith(f"verispec conform --engine {c.engine} --mutation {c.subject}")

    def test_the_product_cites_no_file_outside_the_repository(self) -> None:
        """Sources name a public repository and issue or PR, a paper, or a file in this repository."""
        import re
        from pathlib import Path

        root = Path(__file__).resolve().parents[2]
        for c in catalog():
            for path in re.findall(r"(?:docs|proofs)/[\w./-]+\.(?:md|py)", c.source):
                assert (root / path).exists(), (c.name, path)
            assert "engines.md" not in c.source and "masks.md" not in c.source, c.name

    def test_find_by_name_or_subject(self) -> None:
        assert "ml-explore/mlx-lm PR #1109" in find("engine:crop-no-op").source
        assert find("crop-no-op").layer == "engine"
        with pytest.raises(UsageError, match="control='crop-no-opp' is not a known name"):
            find("crop-no-opp")

    def test_cli_lists_the_catalog(self, capsys) -> None:
        assert main(["controls", "list", "--layer", "engine", "--json"]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert {c["subject"] for c in listed} == {c.subject for c in catalog(("engine",))}
        assert all(c["reproduce"] for c in listed)


def _control(subject: str) -> Mutant:
    return find(f"engine:{subject}")


class TestOutcomes:
    def test_a_crash_is_an_error_never_a_catch(self) -> None:
        """The engine crashing in the declared check is an error of the control (its tests
        treat it as a miss), whatever the check reports."""
        crashed = Cell("ids-in-vocab", Status.FAIL, None, 8, "engine error: boom", Failure.CRASH)
        crash = ControlResult(_control("vocab-overflow"), [crashed], 1.0)
        assert crash.outcome == "error" and crash.samples_to_detection is None
        refused = Cell("ids-in-vocab", Status.FAIL, None, 8, "engine misuse: no", Failure.MISUSE)
        assert ControlResult(_control("vocab-overflow"), [refused], 1.0).outcome == "error"
        found = Cell(
            "ids-in-vocab", Status.FAIL, None, 4, "bad output: id 24", Failure.BAD_OUTPUT, Evidence.BAD_OUTPUT
        )
        caught = ControlResult(_control("vocab-overflow"), [found], 1.0)
        assert caught.outcome == "caught" and caught.samples_to_detection == 4
        assert caught.to_json()["caught_by"] == ["ids-in-vocab"]

    def test_only_the_named_evidence_catches(self) -> None:
        """resample-target must fail sampling-law through its statistic: the same check failing
        through another evidence, or an undeclared check failing, is no catch."""
        control = _control("resample-target")
        assert control.evidence_for("sampling-law") == Evidence.STATISTIC
        other = Cell(
            "sampling-law",
            Status.FAIL,
            0.0,
            9,
            "emitted 3 impossible",
            Failure.DETECTION,
            Evidence.IMPOSSIBLE,
        )
        undeclared = Cell("determinism", Status.FAIL, None, 2, "differ", Failure.DETECTION, Evidence.MISMATCH)
        assert ControlResult(control, [other, undeclared], 1.0).outcome == "escaped"
        statistic = Cell(
            "sampling-law", Status.FAIL, 1e-9, 9, "rejected", Failure.DETECTION, Evidence.STATISTIC
        )
        assert ControlResult(control, [statistic], 1.0).outcome == "caught"
        text = markdown(
            ControlsRun(True, 1e-6, ("engine",), False, [ControlResult(control, [statistic], 1.0)]).to_json()
        )
        assert "statistic p=1e-09*" in text and "sampling-law: statistic; first-token-law: statistic" in text

    def test_an_error_is_never_a_pass_or_a_detection(self) -> None:
        errored = ControlResult(_control("unseeded"), [Cell("determinism", Status.ERROR, detail="bug")], 1.0)
        missed = ControlResult(_control("unseeded"), [Cell("determinism", Status.PASS)], 1.0)
        flagged = SubjectResult("reference", "engine", [Cell("determinism", Status.FAIL)])
        run = ControlsRun(False, 1e-6, ("engine",), False, [errored, missed], [flagged])
        assert errored.outcome == "error" and missed.outcome == "escaped"
        assert run.verdict == "fail"
        data = run.to_json()
        assert data["escaped"] == ["engine:unseeded", "engine:unseeded"]
        assert data["flagged_subjects"] == ["reference"]
        text = markdown(data)
        assert "## Not caught" in text and "## Correct subjects flagged" in text
        page = html(data)
        assert page.startswith("<!DOCTYPE html>") and "Not caught: engine:unseeded" in page


@pytest.mark.torch
def test_engine_controls_run_end_to_end(tmp_path, monkeypatch) -> None:
    """Two deterministic engine controls, one statistical left out of the smoke run, and the
    unmutated reference: caught, not run, pass; the report folder keeps every result."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import verispec.controls.runner as runner

    chosen = [_control("eos-budget-first"), _control("unseeded"), _control("softmax-residual")]
    monkeypatch.setattr(runner, "catalog", lambda layers: chosen)
    run = runner.run_controls(("engine",), quick=True, statistical=False, out=tmp_path)
    outcomes = {r.control.subject: r.outcome for r in run.controls}
    assert outcomes == {"eos-budget-first": "caught", "unseeded": "caught", "softmax-residual": "not-run"}
    assert [s.outcome for s in run.subjects] == ["pass"]
    assert run.verdict == "pass"
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["status"] == "complete" and data["not_run"] == ["engine:softmax-residual"]
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    page = (tmp_path / "report.html").read_text()
    assert "Detection matrix" in page and "verispec conform --engine reference --mutation unseeded" in page


@pytest.mark.torch
def test_a_bug_that_only_crashes_the_engine_is_an_error_not_a_catch(tmp_path) -> None:
    """An engine defined outside verispec with two planted bugs of its own: one that emits an id
    outside the vocabulary (caught through that bad output) and one that only crashes the
    engine on its fifth request. Both break eos-length's run; only the first is a catch, the
    crash is an error of its control, and the run fails (a miss)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from verispec.controls.runner import run_controls

    factory = "tests.fixtures.my_engine:make_planted"

    def planted(name: str, check: str, evidence: Evidence) -> Mutant:
        return Mutant(name, "engine", name, "tests/fixtures/my_engine.py", factory, (check,), (evidence,))

    mutants = [
        planted("out-of-range", "ids-in-vocab", Evidence.BAD_OUTPUT),
        planted("crash", "eos-length", Evidence.COUNT),
    ]
    run = run_controls(("engine",), quick=True, jobs=1, mutants=mutants, out=tmp_path)
    by_name = {r.control.subject: r for r in run.controls}
    assert by_name["out-of-range"].outcome == "caught"
    crashed = by_name["crash"]
    assert crashed.outcome == "error" and crashed.samples_to_detection is None
    assert crashed.cells[0].failure == "crash" and "illegal memory access" in crashed.cells[0].detail
    assert run.verdict == "fail" and [r.control.subject for r in run.escaped] == ["crash"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcomes"] == {"caught": 1, "error": 1}
    assert [c["caught_by"] for c in report["controls"]] == [["ids-in-vocab"], []]


class TestEscalation:
    """The engine layer's schedule, with a scripted stand-in for the conformance runner:
    quick sizes first, full sizes only for a miss, and the subject on the same tests."""

    def _run(
        self, monkeypatch, caught_quick: dict[str, bool], broken: str | None = None
    ) -> tuple[ControlsRun, list[tuple]]:
        import verispec.controls.runner as runner
        from verispec.conformance.checks import CheckResult

        chosen = [_control("resample-target"), _control("draft-temperature-ignored")]
        calls: list[tuple] = []

        def fake_conform(subject, *, quick, checks, options=None, **kw):
            mutation = (options or {}).get("mutations", [None])[0]
            if broken is not None and mutation == broken:
                raise UsageError(f"engine='reference' could not be built: {mutation}")
            calls.append((mutation, quick, tuple(checks), kw.get("design", "planned")))
            caught = mutation and (caught_quick[mutation] or not quick)
            status, failure = (Status.FAIL, Failure.DETECTION) if caught else (Status.PASS, None)
            evidence = Evidence.STATISTIC if caught else None
            calls_used = 80 if quick else 720
            results = [
                CheckResult(
                    n, status, "", pvalue=1e-9, generate_calls=calls_used, failure=failure, evidence=evidence
                )
                for n in checks
            ]
            return type("Run", (), {"results": results})()

        monkeypatch.setattr(runner, "conform", fake_conform)  # no engine runs
        monkeypatch.setattr(runner, "catalog", lambda layers: chosen)
        monkeypatch.setattr(runner, "_installed", lambda controls: (controls, []))
        return runner.run_controls(("engine",), quick=True, jobs=1), calls

    def test_a_miss_escalates_and_the_subject_follows(self, monkeypatch) -> None:
        run, calls = self._run(monkeypatch, {"resample-target": True, "draft-temperature-ignored": False})
        first, later = run.controls
        assert first.control.subject == "resample-target" and first.samples_to_detection == 80
        assert "--quick --design sequential" in first.to_json()["reproduce"]
        # missed at quick sizes: both runs' samples count, and the reproduction drops --quick
        assert later.outcome == "caught" and later.samples_to_detection == 800
        assert later.to_json()["reproduce"] == (
            "verispec conform --engine reference --mutation draft-temperature-ignored "
            "--design sequential --check sampling-law"
        )
        assert later.cells[0].detail.startswith("at full size, after 80 quick-size samples")
        subject = [c for c in calls if c[0] is None]
        assert subject == [
            (None, True, ("sampling-law", "first-token-law"), "sequential"),
            (None, False, ("sampling-law",), "sequential"),
        ]
        assert run.subjects[0].outcome == "pass"

    def test_no_miss_no_full_size_run(self, monkeypatch) -> None:
        run, calls = self._run(monkeypatch, {"resample-target": True, "draft-temperature-ignored": True})
        assert all(quick for _, quick, _, _ in calls)
        assert run.verdict == "pass" and run.to_json()["full_matrix"] is False

    def test_a_run_that_breaks_is_an_error_and_the_rest_goes_on(self, monkeypatch) -> None:
        run, _ = self._run(monkeypatch, {"resample-target": True}, broken="draft-temperature-ignored")
        outcomes = {r.control.subject: r.outcome for r in run.controls}
        assert outcomes == {"resample-target": "caught", "draft-temperature-ignored": "error"}
        broken = run.controls[1].cells[0]
        assert broken.status == "error" and "could not be built" in broken.detail
        assert run.verdict == "fail" and [s.outcome for s in run.subjects] == ["pass"]


class TestTwoSeamMutant:
    """untruncated-draft, exactly (fractions): vLLM's acceptance rule, the seam it needs
    alongside, keeps the law while the drafts follow q; with drafts from the untruncated law
    the emitted law moves, and verispec's own verifier would have stopped the engine instead."""

    P = (Fraction(1, 2), Fraction(1, 2), Fraction(0))  # the target after truncation: token 2 cut
    Q_TRUNCATED = (Fraction(3, 4), Fraction(1, 4), Fraction(0))  # the declared q
    Q_UNTRUNCATED = (Fraction(3, 5), Fraction(1, 5), Fraction(1, 5))  # what the drafts follow

    def _first_token_law(self, drafts_from: tuple[Fraction, ...]) -> dict:
        from verispec.engines.reference.hooks import _verify_rejecting_impossible_drafts
        from verispec.exact.executor import output_law

        def one_round(rand):
            draft = rand.categorical(drafts_from)
            p_rows, q_rows = [self.P, self.P], [self.Q_TRUNCATED]
            block, _ = _verify_rejecting_impossible_drafts(p_rows, q_rows, [draft], rand, False)
            return block[0]

        return output_law(one_round)

    def test_the_rule_alone_keeps_the_law(self) -> None:
        assert self._first_token_law(self.Q_TRUNCATED) == {0: Fraction(1, 2), 1: Fraction(1, 2)}

    def test_with_untruncated_drafts_the_law_moves(self) -> None:
        # token 0 accepted 3/5 * 2/3; token 1 accepted 1/5 plus the residual after a rejection 2/5
        assert self._first_token_law(self.Q_UNTRUNCATED) == {0: Fraction(2, 5), 1: Fraction(3, 5)}

    def test_verispecs_verifier_refuses_the_impossible_draft(self) -> None:
        from verispec.core.random import SeededRandom
        from verispec.errors import NonConformance
        from verispec.verifiers import registry

        with pytest.raises(NonConformance, match="draft token 2 has probability 0"):
            verify = registry.get_chain("token-level").verify
            verify([self.P, self.P], [self.Q_TRUNCATED], [2], SeededRandom(0))


def test_unmutated_engines_run_with_their_mutants_fixes(monkeypatch) -> None:
    """The false-alarm record of an engine is taken on the engine its mutants were planted in:
    vLLM's subject runs with the cpu-expand fix its mutants carry (without it, vLLM's own CPU
    bug flags it), and says so."""
    import verispec.controls.runner as runner
    from verispec.conformance.checks import CheckResult

    chosen = [_control("vllm-draft/penalty-ignored")]
    seen: list = []

    def fake_conform(subject, *, quick, checks, options=None, **kw):
        seen.append((subject, options))
        planted = bool((options or {}).get("mutations"))
        status, evidence = (Status.FAIL, Evidence.MISMATCH) if planted else (Status.PASS, None)
        results = [CheckResult(n, status, "", generate_calls=6, evidence=evidence) for n in checks]
        return type("Run", (), {"results": results})()

    monkeypatch.setattr(runner, "conform", fake_conform)
    monkeypatch.setattr(runner, "catalog", lambda layers: chosen)
    monkeypatch.setattr(runner, "_installed", lambda controls: (controls, []))  # vLLM need not be
    run = runner.run_controls(("engine",), quick=True, jobs=1)
    assert seen[-1] == ("vllm-draft", {"fixes": ["cpu-expand"]})
    assert run.subjects[0].fixes == ("cpu-expand",) and run.verdict == "pass"
    assert run.to_json()["subjects"][0]["fixes"] == ["cpu-expand"]
    from verispec.report.lines import subject_line

    assert "vllm-draft (with fix cpu-expand): pass" in subject_line(run.subjects[0])
