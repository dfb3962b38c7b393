"""The committed figures of the docs are what ``docs/make_figures.py`` draws now
(issue 28): regenerated here, each matches its PNG in ``docs/img/``, and drawing
twice gives the same bytes (no dates, no randomness). Skipped without matplotlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
from matplotlib import image  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
SCRIPT = ROOT / "docs" / "make_figures.py"

#: largest mean absolute difference per pixel channel (in [0, 1]) between a committed
#: figure and a redrawn one: a newer matplotlib or FreeType may move text by a pixel
#: without the figure being stale; a changed curve or legend moves far more
TOLERANCE = 0.02


def _draw(out: Path, only: str | None = None) -> list[Path]:
    args = [sys.executable, str(SCRIPT), "--out", str(out)] + (["--only", only] if only else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return sorted(out.glob("*.png"))


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _draw(tmp_path_factory.mktemp("figures"))


def test_every_drawn_figure_is_committed_and_matches(drawn: list[Path]) -> None:
    assert len(drawn) >= 10
    for path in drawn:
        committed = IMG / path.name
        assert committed.exists(), f"docs/img/{path.name} is not committed"
        a, b = image.imread(committed), image.imread(path)
        assert a.shape == b.shape, f"{path.name}: size {a.shape} committed, {b.shape} drawn"
        diff = float(np.mean(np.abs(a.astype(float) - b.astype(float))))
        assert diff <= TOLERANCE, (f"docs/img/{path.name} is stale (mean difference {diff:.4f}): "
                                   f"run python docs/make_figures.py")


def test_drawing_twice_gives_the_same_bytes(drawn: list[Path], tmp_path: Path) -> None:
    again = {p.name: p for p in _draw(tmp_path, only="curves")}
    assert again
    for path in drawn:
        if path.name in again:
            assert path.read_bytes() == again[path.name].read_bytes(), path.name
