"""The docs tables that list registered things are generated from the registries and current."""

from __future__ import annotations

import pytest

from verispec.docgen import BLOCKS, render, stale


def test_no_generated_block_is_stale() -> None:
    found = stale()
    assert not found, f"stale generated docs blocks {found}: run python -m verispec.docgen"


def test_a_stale_block_is_found() -> None:
    _, name, renderer = BLOCKS[0]
    text = (
        f"<!-- BEGIN GENERATED: {name} (python -m verispec.docgen) -->\nold\n<!-- END GENERATED: {name} -->\n"
    )
    assert render(text, name, renderer()) != text
    assert render(render(text, name, renderer()), name, renderer()) == render(text, name, renderer())


def test_a_page_without_its_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="has no generated block 'checks'"):
        render("no markers here", "checks", "")
