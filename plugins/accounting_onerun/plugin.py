"""Entry point of the one-run auditor plugin: registers ``OneRunAuditor()`` as "onerun"."""

from __future__ import annotations

from accounting.registry.hookspecs import RegisterAuditor, hookimpl

from .auditor import DEFAULT_AUDITOR


@hookimpl
def accounting_register_auditors(register: RegisterAuditor) -> None:
    register(DEFAULT_AUDITOR.name, DEFAULT_AUDITOR)
