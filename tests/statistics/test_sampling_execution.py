"""The sampling executor runs the same verifier code as the exact executor.

Design (per test): Pearson's chi-square of sampled blocks against the exact block law,
cells pooled from the exact law before sampling. False-alarm rate PER_TEST_ALPHA; power
1 - PER_TEST_ALPHA against an effect of Cohen's w = EFFECT_W; the sample size is computed
from those three numbers; seeds are fixed. The mutant test shows the design bites: the
resample-target control, whose exact effect is at least EFFECT_W, is rejected.
"""

from __future__ import annotations

import pytest

from verispec.core.models import RandomRationalModel
from verispec.core.transforms import SamplingConfig
from verispec.exact.criterion import round_law
from verispec.stats.constants import PER_TEST_ALPHA
from verispec.stats.gof import pearson_test, pooled_cells
from verispec.stats.plan import chi_square_sample_size, cohen_w
from verispec.verifiers import registry
from verispec.verifiers.float_execution import sample_blocks
from verispec.verifiers.instance import ChainInstance
from verispec.verifiers.trees import TreeInstance

#: Declared effect size (Cohen's w) the tests must detect.
EFFECT_W = 0.3
SEED = 20261202


def _instance(name: str) -> ChainInstance:
    config = SamplingConfig(temperature=0) if name == "greedy" else SamplingConfig(top_k=3)
    return ChainInstance(RandomRationalModel(4, seed=1), RandomRationalModel(4, seed=2), 2, config)


def _design(law) -> tuple[int, list]:
    # plan with the unpooled df as an upper bound, then pool for that n
    n = chi_square_sample_size(EFFECT_W, max(len(law) - 1, 1), alpha=PER_TEST_ALPHA, power=1 - PER_TEST_ALPHA)
    return n, pooled_cells(law, n)


@pytest.mark.statistical
@pytest.mark.parametrize("name", registry.names("exact", "chain"))
def test_sampled_blocks_follow_the_exact_law(name: str) -> None:
    entry, instance = registry.get(name), _instance(name)
    law = round_law(entry, instance)
    n, cells = _design(law)
    result = pearson_test(sample_blocks(entry, instance, n, seed=SEED), law, cells)
    assert result.pvalue > PER_TEST_ALPHA, (name, n, result)


def _tree_instance(name: str) -> TreeInstance:
    entry = registry.get(name)
    config = SamplingConfig(temperature=0) if name == "greedy-tree" else SamplingConfig()
    return TreeInstance(
        RandomRationalModel(3, seed=1), RandomRationalModel(3, seed=2), (2, 1), entry.laws[0], config
    )


@pytest.mark.statistical
@pytest.mark.parametrize("name", registry.names("exact", "tree"))
def test_sampled_tree_blocks_follow_the_exact_law(name: str) -> None:
    entry, instance = registry.get(name), _tree_instance(name)
    law = round_law(entry, instance)
    n, cells = _design(law)
    result = pearson_test(sample_blocks(entry, instance, n, seed=SEED), law, cells)
    assert result.pvalue > PER_TEST_ALPHA, (name, n, result)


@pytest.mark.statistical
def test_design_detects_resample_target() -> None:
    instance = _instance("token-level")
    reference = round_law(registry.get("token-level"), instance)
    mutant = registry.get("resample-target")
    mutant_law = round_law(mutant, instance)
    keys = sorted(set(reference) | set(mutant_law))
    w = cohen_w([float(reference.get(k, 0)) for k in keys], [float(mutant_law.get(k, 0)) for k in keys])
    assert w >= EFFECT_W  # so the planned power applies
    n, cells = _design(reference)
    result = pearson_test(sample_blocks(mutant, instance, n, seed=SEED), reference, cells)
    assert result.pvalue <= PER_TEST_ALPHA, (n, result)
