"""``python -m accounting.cli``: the command line (the same as ``python -m accounting``)."""

from accounting.cli import main

raise SystemExit(main())
