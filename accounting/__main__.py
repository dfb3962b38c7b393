"""``python -m accounting``: the command line (see ``accounting.cli``)."""

from .cli import main

raise SystemExit(main())
