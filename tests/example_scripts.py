"""Load a script under examples/ as a module, for the tests that exercise it."""

from __future__ import annotations

import importlib.util
import pathlib
import types

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load_example(filename: str) -> types.ModuleType:
    """examples/``filename`` imported as a module; the test is skipped when examples/ is
    not part of this installation (an installed wheel, say)."""
    path = EXAMPLES / filename
    if not path.exists():
        pytest.skip("examples/ is not part of this installation")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
