"""``python -m accounting``: the command line (see ``accounting.cli.app``)."""

from accounting.cli import main

raise SystemExit(main())
