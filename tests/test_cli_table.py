"""The command line's one table helper (``cli.output.aligned``), which the query and
gap tables print through."""

from __future__ import annotations

import pytest


def test_aligned_pads_each_column_to_its_widest_cell():
    from accounting.cli.output import aligned
    rows = [("name", "x", "y"), ("gaussian", "1.5", "2")]
    assert aligned(rows, "lrl") == ["  name        x  y", "  gaussian  1.5  2"]
    assert aligned([], "l") == []
    with pytest.raises(ValueError, match="align"):
        aligned(rows, "lr")
    with pytest.raises(ValueError, match="align"):
        aligned(rows, "lrc")
