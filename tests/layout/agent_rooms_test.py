#!/usr/bin/env python3
"""The agent's rooms have no back-arrows (issue 23 "The agent in rooms").

Every room under agents/ has a floor; a file may include headers of its own room or of rooms on
lower floors only, and rooms on one floor do not include each other. A new room must be given a
floor here, and every room must have a README.md at its door. Run: agent_rooms_test.py REPO_ROOT
"""
import pathlib
import re
import sys

# Lower floors first: what a room may use is everything on the floors below it.
FLOORS = [
    ["agents/trace/io", "agents/trace/model"],
    ["agents/trace/kineto", "agents/trace/perfetto", "agents/trace/summary"],
    ["agents/trace/neuron"],
    ["agents/trace"],
    ["agents/contract"],
    ["agents/monitor"],
    ["agents/daemon"],
    ["agents/cli"],
]
FLOOR_OF = {room: i for i, rooms in enumerate(FLOORS) for room in rooms}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(agents/[^"]+)"', re.M)


def room_of(path: str) -> str:
    return str(pathlib.PurePosixPath(path).parent)


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    errors = []
    sources = sorted(p for p in (root / "agents").rglob("*") if p.suffix in (".h", ".cc"))
    if not sources:
        errors.append("no sources under agents/")
    for src in sources:
        rel = src.relative_to(root).as_posix()
        here = room_of(rel)
        if here not in FLOOR_OF:
            errors.append(f"{rel}: room {here} has no floor in {__file__}")
            continue
        for line_no, target in (
            (src.read_text()[: m.start()].count("\n") + 1, m.group(1))
            for m in INCLUDE.finditer(src.read_text())
        ):
            there = room_of(target)
            if not (root / target).is_file():
                errors.append(f"{rel}:{line_no}: includes {target}, which does not exist")
            elif there not in FLOOR_OF:
                errors.append(f"{rel}:{line_no}: includes {target} from room {there}, which has no floor")
            elif there != here and FLOOR_OF[there] >= FLOOR_OF[here]:
                kind = "a sibling room" if FLOOR_OF[there] == FLOOR_OF[here] else "a higher floor"
                errors.append(f"{rel}:{line_no}: back-arrow to {target} ({kind}: {there})")
    for room in FLOOR_OF:
        if not (root / room / "README.md").is_file():
            errors.append(f"{room}: no README.md at the room's door")
    for e in errors:
        print(e)
    print(f"{len(sources)} files in {len(FLOOR_OF)} rooms: {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
