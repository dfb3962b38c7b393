"""The auditor and converter contract suites applied to the built-in auditors (rkrd,
onerun) and to every core converter."""

from __future__ import annotations

from accounting import default_registry
from accounting.curves.graph import edges
from accounting.testing import AuditorContract, ConverterContract


class TestRKRDAuditorContract(AuditorContract):
    auditor = default_registry().auditors["rkrd"]
    n = 600


class TestOneRunAuditorContract(AuditorContract):
    auditor = default_registry().auditors["onerun"]
    n = 1000


def _core_converters():
    return [c.name for c in edges() if c.plugin == "core"]




# one contract class per core edge, so that each edge's failures are reported by name
for _i, _name in enumerate(_core_converters()):
    globals()[f"TestCoreConverter{_i}"] = type(
        f"TestCoreConverter{_i}", (ConverterContract,), {"converter": _name})


def test_every_core_converter_has_a_contract():
    names = {cls.converter for key, cls in globals().items()
             if key.startswith("TestCoreConverter")}
    assert names == set(_core_converters()) and len(names) >= 9
