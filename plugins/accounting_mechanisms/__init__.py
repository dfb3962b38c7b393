"""Built-in mechanism plugins of ``accounting``, one module per family.

Each module is registered through the entry-point group ``accounting`` exactly as a
third-party plugin would be (see pyproject.toml); nothing in the core imports them.
"""
