#!/usr/bin/python3
"""The include graph between src/ rooms, and the check that every arrow
points down: a room may include headers of its own room and of rooms of a
lower rank, never of its own rank or above (and a room in ONLY only the
rooms named there). Public headers
(include/dsview/*.h, installed by make install) belong to the room named in
OWNER and may include only other public headers; everything under src/ is
the library's own. A format's folder, src/formats/NAME, is a room of its
own, below the registry (src/formats/*.c). A header under src/ may declare
only functions its own room or a lower one defines. Prints the graph;
exits 1 on an arrow that points up or sideways, a public header that
includes a private one, a header with no owner, or a header declaring a
function of a room above it.

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
    # one room a format (src/formats/NAME), none including another
    "formats/npy": 3, "formats/raw": 3, "formats/nifti": 3,
    "formats/h5": 3, "formats/zarr": 3, "formats/tokens": 3,
    "formats/arrow": 3, "formats/edf": 3, "formats/eeglab": 3, "formats/bv": 3,
    # the registry of formats (src/formats/*.c), above every format
    "formats": 4, "view": 4, "cache": 4,
    "manifest": 5, "gpu": 5,
    "pack": 6, "backend": 6,
    "read": 7,
    "engine": 8,
    "fs": 9, "reader": 9,
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
    "h5info.h": "formats/h5", "source.h": "source", "view.h": "view", "pack.h": "pack",
    "fs.h": "fs", "reader.h": "reader",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function declared (a header's prototype) or defined (its body follows
# at the start of a line), as this house writes them.
DECL = re.compile(r'^(?!static|typedef|#)[A-Za-z_][^;{}()#]*?\b(dsv_\w+)\s*\([^;{}]*\)'
                  r'\s*(?:__attribute__\s*\(\(.*?\)\))?\s*;', re.M)
DEFN = re.compile(r'^(?!static|typedef|#)[A-Za-z_][^;{}()#]*?\b(dsv_\w+)\s*\([^;{}]*\)\s*\{', re.M)


def src_room(parts):
    """The room of a path under src/, split: src/ROOM/x.c, or
    src/formats/NAME/x.c for a format's own folder."""
    if parts[0] == "formats" and len(parts) > 2:
        return "formats/" + parts[1]
    return parts[0]


def room_of(header, where):
    if header.startswith("dsview/"):
        return OWNER.get(header[len("dsview/"):])
    if "/" in header:
        return src_room(header.split("/"))
    return where  # "x.h" beside the file


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    edges, bad = {}, []
    defined, declared = {}, []
    files = []
    for top in ("src", "include/dsview"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(dirpath, n) for n in names if n.endswith((".c", ".h", ".cu"))]
    for path in sorted(files):
        rel = os.path.relpath(path, root)
        parts = rel.split(os.sep)
        room = src_room(parts[1:]) if parts[0] == "src" else OWNER.get(parts[-1])
        if room is None or room not in RANK:
            bad.append(f"{rel}: no room owns it (add it to OWNER/RANK in {sys.argv[0]})")
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in DEFN.findall(text):
            defined.setdefault(name, room)
        if path.endswith(".h") and parts[0] == "src":
            declared += [(rel, room, name) for name in DECL.findall(text)]
        for inc in INCLUDE.findall(text):
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
    # A header under src/ declares only what its own room or a room below
    # defines: a function defined above (or beside) it would be an arrow
    # the include graph cannot see. Public headers are the library's face,
    # owned low so that every room may include them, and declare what any
    # room defines.
    for rel, room, name in declared:
        at = defined.get(name)
        if at and at != room and RANK[at] >= RANK[room]:
            bad.append(f"{rel}: declares {name}, which {at} defines ({room} is not above it)")
    for room in sorted(edges, key=lambda r: (-RANK[r], r)):
        print(f"{room:13} -> {', '.join(sorted(edges[room], key=lambda r: (-RANK[r], r)))}")
    for b in bad:
        print("arrows:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
