"""Reusable contract test suites for plugins: subclass one in a pytest module.

* ``MechanismContract`` (``accounting.testing.mechanism``): the relations every
  mechanism's curves satisfy, and its samples against its profile;
* ``AuditorContract`` (``accounting.testing.auditor``): an auditor's reports,
  determinism, refusal of bad input, power and level on known pairs;
* ``ConverterContract`` (``accounting.testing.converter``): a converter's output kind,
  validity and soundness against exact curves.
"""

from accounting.testing.auditor import AuditorContract
from accounting.testing.converter import ConverterContract
from accounting.testing.mechanism import MechanismContract

__all__ = ["MechanismContract", "AuditorContract", "ConverterContract"]
