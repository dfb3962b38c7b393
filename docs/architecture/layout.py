"""Print the package layout of a checkout as text: its units (a subpackage or a
top-level module of ``accounting``) stacked by what they import, each with its
modules and line counts, the units it imports, and the import circles between units.

    python docs/architecture/layout.py [ROOT]      # default: this checkout

The imports are read from the syntax trees by ``tests/test_floors.py`` (module level
and inside functions; nothing is imported). A unit's level is the length of the
longest chain of units below it; units in one circle share a level and are marked.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import test_floors as tf  # noqa: E402


def layout(root: Path) -> str:
    mods = tf.modules(root)
    units: dict[str, list[str]] = {}
    for module in mods:
        units.setdefault(tf.unit(module), []).append(module)
    edges: set[tuple[str, str]] = set()
    for imp in tf.imports(root):
        if tf.own(imp.target):
            a, b = tf.unit(imp.module), tf.unit(imp.target)
            if a != b:
                edges.add((a, b))
    circles = tf._package_cycles(edges)
    group = {u: u for u in units}
    for circle in circles:
        for u in circle:
            group[u] = "+".join(circle)
    below: dict[str, set[str]] = {}
    for a, b in edges:
        if group[a] != group[b]:
            below.setdefault(group[a], set()).add(group[b])
    level: dict[str, int] = {}

    def depth(g: str) -> int:
        if g not in level:
            level[g] = 0
            level[g] = 1 + max((depth(h) for h in below.get(g, ())), default=-1)
        return level[g]

    lines = []
    for g in sorted(set(group.values()), key=lambda g: (-depth(g), g)):
        members = g.split("+")
        mark = "  [import circle]" if len(members) > 1 else ""
        lines.append(f"level {depth(g):2d}  {' + '.join(members)}{mark}")
        for u in members:
            files = sorted(units[u])
            counts = ", ".join(
                f"{'__init__' if mods[m].name == '__init__.py' else m.split('.')[-1]}"
                f" {len(mods[m].read_text(encoding='utf-8').splitlines())}" for m in files)
            uses = sorted(b for a, b in edges if a == u)
            lines.append(f"          {u}: {counts}")
            lines.append(f"            imports: {', '.join(uses) if uses else '(nothing of the package)'}")
    lines.append("")
    lines.append(f"import circles between units: {len(circles)}")
    for circle in circles:
        lines.append("  " + " ↔ ".join(circle))
    module_edges = {(i.module, i.target) for i in tf.imports(root)
                    if i.target in mods and i.target != i.module}
    module_circles = tf._package_cycles(module_edges)
    lines.append(f"import circles between modules (module level and inside functions): "
                 f"{len(module_circles)}")
    for circle in module_circles:
        lines.append(f"  {len(circle)} modules: " + ", ".join(circle))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(layout(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else tf.ROOT), end="")
