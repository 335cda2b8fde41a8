#!/usr/bin/python3
"""The include graph between src/ rooms, and the check that every arrow
points down: a room may include headers of its own room and of rooms of a
lower rank, never of its own rank or above (and a room in ONLY only the
rooms named there). Public headers
(include/dsview/*.h, installed by make install) belong to the room named in
OWNER and may include only other public headers; everything under src/ is
the library's own. Prints the graph; exits 1 on an arrow that points up or
sideways, a public header that includes a private one, or a header with no
owner.

    /usr/bin/python3 tests/tools/arrows.py [ROOT]
"""
import os
import re
import sys

# Lowest first. A room may include only rooms of a lower rank.
RANK = {
    "common": 0,
    "codec": 1, "xform": 1, "net": 1,
    "source": 2,
    "h5": 3, "zarr": 3,
    "view": 4, "cache": 4,
    "manifest": 5, "gpu": 5,
    "pack": 6, "backend": 6,
    "read": 7,
    "engine": 8,
    "fs": 9,
    "cli": 10,
}
# Rooms whose files under src/ may include only some of the rooms below
# them: the FUSE front end reaches the rest of the house through the engine
# alone (its public header names the manifest it mounts).
ONLY = {
    "fs": {"engine", "common"},
}
# The room that owns each public header.
OWNER = {
    "dsview.h": "common", "codec.h": "codec", "xform.h": "xform",
    "h5info.h": "h5", "source.h": "source", "view.h": "view", "pack.h": "pack",
    "fs.h": "fs",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(header, where):
    if header.startswith("dsview/"):
        return OWNER.get(header[len("dsview/"):])
    if "/" in header:
        return header.split("/")[0]
    return where  # "x.h" beside the file


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    edges, bad = {}, []
    files = []
    for top in ("src", "include/dsview"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".c", ".h", ".cu"))]
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)
        room = parts[1] if parts[0] == "src" else OWNER.get(parts[-1])
        if room is None or room not in RANK:
            bad.append(f"{rel}: no room owns it (add it to OWNER/RANK in {sys.argv[0]})")
            continue
        with open(path, encoding="utf-8") as f:
            for inc in INCLUDE.findall(f.read()):
                if parts[0] == "include" and not inc.startswith("dsview/"):
                    bad.append(f"{rel}: a public header includes the private {inc}")
                to = room_of(inc, room)
                if to is None or to not in RANK:
                    bad.append(f"{rel}: includes {inc}, which no room owns")
                    continue
                if to == room:
                    continue
                edges.setdefault(room, set()).add(to)
                if RANK[to] >= RANK[room]:
                    bad.append(f"{rel}: {room} -> {to} ({inc}) does not point down")
                elif parts[0] == "src" and room in ONLY and to not in ONLY[room]:
                    bad.append(f"{rel}: {room} -> {to} ({inc}): {room} reaches only "
                               f"{', '.join(sorted(ONLY[room]))}")
    for room in sorted(edges, key=lambda r: (-RANK[r], r)):
        print(f"{room:8} -> {', '.join(sorted(edges[room], key=lambda r: (-RANK[r], r)))}")
    for b in bad:
        print("arrows:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
