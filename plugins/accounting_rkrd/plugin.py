"""Entry point of the RKRD auditor plugin: registers ``RKRDAuditor()`` as "rkrd"."""

from __future__ import annotations

from accounting.registry.hookspecs import hookimpl

from .auditor import DEFAULT_AUDITOR


@hookimpl
def accounting_register_auditors(register):
    register(DEFAULT_AUDITOR.name, DEFAULT_AUDITOR)
