"""``import accounting`` stays light: the heavy modules load where they are used.

Import time itself is measured by ``benchmarks/import_time.py`` (a timing is no unit
test); what can be asserted is the cause of a slow import: which modules it loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: top-level packages that `import accounting` must not load (each costs 0.05–0.3 s)
HEAVY = ("scipy", "mpmath", "matplotlib", "tomllib", "importlib.metadata")


def test_import_loads_no_heavy_module():
    code = ("import json, sys, accounting; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert json.loads(out) == []


def test_import_loads_no_numpy_until_a_name_is_used():
    # the public names resolve on first use (PEP 562), so `import accounting` (and the
    # command line's start) does not pay for numpy and attrs' generated classes
    code = ("import json, sys, accounting; before = 'numpy' in sys.modules; "
            "accounting.Accountant; print(json.dumps([before, 'numpy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert json.loads(out) == [False, True]


def test_every_public_name_resolves_to_its_module_object():
    import importlib

    import accounting
    for name in accounting.__all__:
        value = getattr(accounting, name)
        assert value is not None, name
        module = accounting._EXPORTS.get(name)
        if module is not None:
            assert value is getattr(importlib.import_module(module), name)
    assert set(accounting.__all__) <= set(dir(accounting))
    ns: dict = {}
    exec("from accounting import *", ns)  # noqa: S102 - the star import a user may write
    assert {"Accountant", "PLD", "mechanism", "save"} <= set(ns)


def test_an_unknown_name_is_an_attribute_error():
    import accounting
    with pytest.raises(AttributeError, match="no attribute 'Acountant'"):
        accounting.Acountant  # noqa: B018


def test_deprecated_paths_warn_alias_and_replace_no_public_name():
    """Every old path imports with a DeprecationWarning naming the new one and reads
    (and writes) the new module's attributes; the new module keeps its own name and
    ``__spec__``; ``import accounting.convert`` leaves ``accounting.convert`` the
    function (a fresh interpreter: nothing imported before)."""
    code = """if True:
        import importlib, json, sys, types, warnings
        import accounting
        from accounting.deprecated import MOVED
        out = {}
        for old, new in MOVED.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                alias = importlib.import_module(old)
            real = sys.modules[new]
            name = next(n for n in [*getattr(real, "__all__", ()), *vars(real)]
                        if not n.startswith("_"))
            alias.probe_attribute = 1            # written through to the new module
            out[old] = [[str(w.message) for w in caught if w.category is DeprecationWarning],
                        getattr(alias, name) is getattr(real, name),
                        real.__name__, real.__spec__.name,
                        getattr(real, "probe_attribute", None)]
        import accounting.convert, accounting.conversions
        from accounting.convert import find_path
        out["convert"] = [type(accounting.convert).__name__, accounting.convert.__module__,
                          find_path.__module__]
        print(json.dumps(out))
    """
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, check=True, timeout=120).stdout)
    from accounting.deprecated import MOVED
    for old, new in MOVED.items():
        warned, same, name, spec, probe = out[old]
        assert len(warned) == 1 and old in warned[0] and f"import {new} instead" in warned[0]
        assert same and name == spec == new and probe == 1, old
    assert out["convert"] == ["function", "accounting.curves.graph", "accounting.curves.graph"]
