"""Index functions: one definition, three interpretations that agree."""

from __future__ import annotations

import itertools

import pytest

from verispec.smt import index as ix


class TestIntInterpretation:
    def test_verify_pass_mask_matches_the_flash_attention_readme(self) -> None:
        """FlashAttention >= 2.1 README: seqlen_q=2, seqlen_k=5 gives rows 11110 / 11111."""
        L, gamma = 4, 1  # Sq = gamma + 1 = 2, Sk = L + gamma = 5
        rows = ["".join("1" if ix.visible(r, j, L, gamma) else "0" for j in range(5)) for r in range(2)]
        assert rows == ["11110", "11111"]
        top_left = [
            "".join("1" if ix.wrong_visible_top_left(r, j, L, gamma) else "0" for j in range(5))
            for r in range(2)
        ]
        assert top_left == ["10000", "11000"]

    def test_draft_sync_catches_up_only_after_full_acceptance(self) -> None:
        assert ix.draft_sync(5, 3, 1) == (6, 0)
        assert ix.draft_sync(5, 3, 3) == (7, 1)

    def test_tree_helpers_on_eagle_example(self) -> None:
        parents = [-1, 0, 0, 1]  # depths 0, 1, 1, 2
        assert [ix.tree_depth(parents, x, 3) for x in range(4)] == [0, 1, 1, 2]
        assert [ix.tree_position(parents, x, 8, 3) for x in range(4)] == [7, 8, 8, 9]  # SGLang comment
        assert [ix.tree_visible(parents, 3, y, 3) for y in range(4)] == [True, True, False, True]

    def test_python_slice_length(self) -> None:
        for n in range(6):
            for stop in range(-8, 8):
                assert ix.python_slice_length(n, stop) == len(list(range(n))[:stop])


@pytest.mark.torch
class TestTorchAgreesWithInts:
    """The reference engine builds masks with the torch interpretation: it must equal the ints."""

    def test_chain_mask_positions_and_crops(self) -> None:
        torch = pytest.importorskip("torch")
        for L in range(1, 9):
            for gamma in range(0, 7):
                rows = torch.arange(gamma + 1)[:, None]
                keys = torch.arange(L + gamma)[None, :]
                mask = ix.visible(rows, keys, L, gamma)
                expected = [[ix.visible(r, j, L, gamma) for j in range(L + gamma)] for r in range(gamma + 1)]
                assert mask.tolist() == expected
                accepted = torch.arange(gamma + 1)
                assert ix.target_crop_length(L, accepted).tolist() == [L + a for a in range(gamma + 1)]
                if gamma >= 1:
                    crop, catch = ix.draft_sync(torch.tensor(L), torch.tensor(gamma), accepted)
                    assert list(zip(crop.tolist(), catch.tolist(), strict=True)) == [
                        ix.draft_sync(L, gamma, a) for a in range(gamma + 1)
                    ]
                assert ix.query_position(rows[:, 0], L).tolist() == [
                    ix.query_position(r, L) for r in range(gamma + 1)
                ]

    def test_paged_slots(self) -> None:
        torch = pytest.importorskip("torch")
        table = [3, 0, 2, 1]
        positions = torch.arange(16)
        for page in (1, 2, 4):
            got = ix.slot(positions, page, torch.tensor(table * 4))
            assert got.tolist() == [ix.slot(p, page, table * 4) for p in range(16)]
            assert ix.pages_needed(positions, page).tolist() == [ix.pages_needed(p, page) for p in range(16)]

    def test_tree_mask_and_positions_on_every_small_tree(self) -> None:
        torch = pytest.importorskip("torch")
        for n in range(2, 7):
            for choice in itertools.product(*(range(i) for i in range(1, n))):
                parents = [-1, *choice]
                pt = torch.tensor(parents)
                xs = torch.arange(n)[:, None].expand(n, n)
                ys = torch.arange(n)[None, :].expand(n, n)
                mask = ix.tree_visible(pt, xs, ys, n - 1)
                assert mask.tolist() == [
                    [ix.tree_visible(parents, x, y, n - 1) for y in range(n)] for x in range(n)
                ]
                pos = ix.tree_position(pt, torch.arange(n), 5, n - 1)
                assert pos.tolist() == [ix.tree_position(parents, x, 5, n - 1) for x in range(n)]
