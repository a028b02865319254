"""The Python examples in the docs run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [
    ROOT / "README.md",
    ROOT / "docs/tutorial/first-proof.md",
    ROOT / "docs/how-to/check-your-own-verifier.md",
]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_python_blocks_run(path: Path) -> None:
    namespace: dict = {}
    for block in re.findall(r"```python\n(.*?)```", path.read_text(), re.S):
        if "@given" in block:
            continue  # a test to copy, not a statement to run
        exec(compile(block, str(path), "exec"), namespace)


class TestReadmeFigures:
    """The README's counts of planted bugs, verifiers, conventions and checks are the
    registries' (a figure that changes with the code is checked here, never retyped)."""

    README = (ROOT / "README.md").read_text()

    def _number(self, pattern: str) -> int:
        """The number ``pattern`` captures, across the README's line breaks."""
        match = re.search(pattern.replace(" ", r"\s+"), self.README)
        assert match, f"README.md no longer says {pattern!r}"
        return int(match.group(1))

    def test_the_catalog_of_planted_bugs(self) -> None:
        from collections import Counter

        from verispec.controls.mutants import catalog

        controls = catalog()
        engines = Counter(
            "reference" if m.engine in ("reference", "reference-tree") else m.engine for m in controls
        )
        assert self._number(r"catalog of (\d+) planted bugs") == len(controls)
        assert self._number(r"the (\d+) control verifiers") == sum(m.layer == "verifier" for m in controls)
        assert self._number(r"(\d+) reference-engine mutants") == engines["reference"]
        assert self._number(r"(\d+) patches of transformers") == engines["hf-assisted"]
        assert self._number(r"(\d+) of vLLM") == engines["vllm-draft"] + engines["vllm-draft-probs"]
        assert self._number(r"(\d+) of llama\.cpp") == engines["llamacpp-lookup"]
        assert self._number(r"the (\d+) refuted index conventions") == sum(
            m.layer == "index" for m in controls
        )

    def test_the_main_job_transcript(self) -> None:
        """The example run of ``verispec check`` (set up as the README's first command says:
        no vLLM, so vLLM's planted bugs are left out)."""
        from verispec.controls.mutants import catalog
        from verispec.engines import registry as engines
        from verispec.exact.articles import article_checks
        from verispec.mainjob import CHECK_ENGINES
        from verispec.smt.catalog import CATALOG
        from verispec.verifiers import registry

        assert self._number(r"\[1/6\] the seed articles' numbers \((\d+) checks\)") == len(article_checks())
        assert self._number(r"\[3/6\] SMT: (\d+) ") == len(CATALOG)
        assert self._number(r"\[4/6\] (\d+) verifiers") == len(registry.names())
        main_job = [
            m
            for m in catalog()
            if m.layer != "engine" or engines.get(str(m.engine)).extra in (None, "torch", "transformers")
        ]
        expected = {
            "exact proved": len(registry.names("exact")),
            "controls refuted": len(registry.names("control")),
            "article numbers": len(article_checks()),
            "smt conventions": len(CATALOG),
            "engines conforming": len(CHECK_ENGINES),
            "controls caught": len(main_job),
        }
        for label, count in expected.items():
            assert self._number(rf"{label} (\d+)/") == count, label
            assert self._number(rf"{label} \d+/(\d+)") == count, label
