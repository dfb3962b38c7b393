"""Bridges between ``accounting`` and the tools people train with.

* ``accounting_bridges.dp_event``: dp_accounting ``DpEvent`` trees in and out
  (``from_dp_event``, ``ledger_from_dp_event``, ``to_dp_event``); needs ``dp-accounting``.
* ``accounting_bridges.opacus``: an Opacus accountant backed by our PLD, registered
  in Opacus' accountant registry on import (needs ``opacus`` and ``torch``).
* ``accounting_bridges.training``: the same accountant without a framework, for JAX
  and numpy training loops.

Bridges name mechanisms that plugins register (``gaussian``, ``subsampled_gaussian``,
…), which is why they live outside the core. Importing this package imports no
optional dependency; each submodule imports its own when it is imported.
"""
