"""mypy plugin of the project: attrs' field wrappers read as ``attrs.field``.

``accounting.pairs.mechanism.parameter`` builds an ``attrs.field`` (with a range
validator and metadata) and passes the other attrs options (``default``, ``kw_only``,
``converter``, ``alias``, …) through by keyword. mypy's attrs plugin recognises a field
only by the name of the function called, from a fixed set; anything else reads as a
plain default value, so a ``kw_only`` parameter looked positional with a default and
every mechanism declaring a field without one after it was reported ("Non-default
attributes not allowed after default attributes"). Adding the wrapper to that set is
the extension point attrs documents (attrs docs, "Extending", section "Wrapping the
Decorator" / mypy); the attrs plugin then reads the keyword options of the call, which
``parameter`` forwards unchanged. Loaded by ``[tool.mypy] plugins`` in pyproject.toml;
nothing at run time imports it.
"""

from __future__ import annotations

from mypy.plugin import Plugin
from mypy.plugins.attrs import attr_attrib_makers

#: functions that return an ``attrs.field`` built from their keyword options
FIELD_WRAPPERS = ("accounting.pairs.mechanism.parameter",)

attr_attrib_makers.update(FIELD_WRAPPERS)


class AttrsWrappersPlugin(Plugin):
    """Adds nothing of its own: importing this module registers the wrappers above."""


def plugin(version: str) -> type[Plugin]:
    return AttrsWrappersPlugin
