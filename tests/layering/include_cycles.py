#!/usr/bin/env python3
"""Include cycles among the units (a .cc and its .h) of one folder; prints each, exits 1 if any.

usage: include_cycles.py FOLDER INCLUDE_PREFIX   (e.g. src/interpose/runtime interpose/runtime)
"""
import os
import re
import sys


def main() -> int:
    folder, prefix = sys.argv[1], sys.argv[2]
    pattern = re.compile(r'#include "' + re.escape(prefix) + r'/(\w+)\.h"')
    edges: dict[str, set[str]] = {}
    for name in sorted(os.listdir(folder)):
        if not os.path.isfile(os.path.join(folder, name)):
            continue
        unit = os.path.splitext(name)[0]
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for target in pattern.findall(f.read()):
                if target != unit:
                    edges.setdefault(unit, set()).add(target)
    cycles = set()

    def visit(unit: str, path: list[str]) -> None:
        for target in sorted(edges.get(unit, ())):
            if target in path:
                cycle = path[path.index(target):]
                start = cycle.index(min(cycle))
                cycles.add(" -> ".join(cycle[start:] + cycle[:start] + [min(cycle)]))
            elif len(path) < len(edges) + 1:
                visit(target, path + [target])

    for unit in sorted(edges):
        visit(unit, [unit])
    for cycle in sorted(cycles):
        print(f"layering: include cycle in {folder}: {cycle}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
