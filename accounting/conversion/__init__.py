"""Deprecated: the converter graph and the core's converters are part of the curves
now (``accounting.curves.graph``, ``accounting.curves.converters``). The old paths
``accounting.conversion.graph`` and ``accounting.conversion.converters`` are aliases
for one release (``accounting.deprecated``)."""
