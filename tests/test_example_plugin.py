"""The example plugin package under examples/ installs and passes its own tests.

It is installed with pip into a temporary directory (not into the running
environment), and its tests and the command line run in subprocesses that see it on
``PYTHONPATH``: the entry point is found through its installed metadata, exactly as
for a user's ``pip install``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "accounting-logistic"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    target = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", "--target", str(target),
                           str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        if "Could not find a version" in proc.stderr or "No matching distribution" in proc.stderr:
            pytest.skip("pip cannot fetch the build backend (no package index here)")
        raise AssertionError(f"pip install of the example failed:\n{proc.stderr[-2000:]}")
    return target


def _env(site: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_the_installed_plugin_is_listed_by_the_command_line(site):
    proc = subprocess.run([sys.executable, "-m", "accounting", "mechanisms", "--json"],
                          capture_output=True, text=True, env=_env(site), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "logistic" in json.dumps(json.loads(proc.stdout))


def test_the_example_package_passes_its_own_tests(site):
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(EXAMPLE / "tests")], capture_output=True, text=True,
                          env=_env(site), cwd=str(site), timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
