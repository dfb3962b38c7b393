"""``import accounting`` stays light: the heavy modules load where they are used.

Import time itself is measured by ``benchmarks/import_time.py`` (a timing is no unit
test); what can be asserted is the cause of a slow import: which modules it loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: top-level packages that `import accounting` must not load (each costs 0.05–0.3 s)
HEAVY = ("scipy", "mpmath", "matplotlib", "tomllib", "importlib.metadata")


def test_import_loads_no_heavy_module():
    code = ("import json, sys, accounting; "
            f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({HEAVY!r}))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert json.loads(out) == []
