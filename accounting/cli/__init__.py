"""The command line: ``accounting COMMAND ...`` (entry point ``accounting.cli:main``)."""

from accounting.cli.app import main

__all__ = ["main"]
