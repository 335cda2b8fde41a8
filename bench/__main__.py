"""python3 -m bench list | run NAME [--quick] [--out DIR] [--KEY VALUE ...]
| report [--results DIR] [--docs DIR] [RESULT.json ...]"""
import os
import sys

from bench import harness
from bench.experiments import NAMES, load

USAGE = __doc__


def parse_pairs(argv):
    """--key value pairs ({key: text}, dashes in keys as underscores) and
    the flags --quick; --out DIR apart."""
    args, quick, out = {}, False, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--quick":
            quick = True
            i += 1
            continue
        if not a.startswith("--") or i + 1 >= len(argv):
            raise SystemExit(f"bench: '{a}': expected --KEY VALUE\n{USAGE}")
        key, val = a[2:].replace("-", "_"), argv[i + 1]
        if key == "out":
            out = val
        else:
            args[key] = val
        i += 2
    return args, quick, out


def cmd_list():
    for name in NAMES:
        exp = load(name)
        print(f"{name:12} {exp.doc.splitlines()[0]}")
        own = {s.name for s in exp.settings}  # an experiment's own rounds replace the common
        for s in [c for c in harness.COMMON[:1] if c.name not in own] + exp.settings:
            q = f" (quick {s.quick})" if s.quick is not None else ""
            print(f"  --{s.name:14} {s.default!s:>12}{q}  {s.help}")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "list":
        cmd_list()
        return 0
    if argv[0] == "run" and len(argv) >= 2:
        args, quick, out = parse_pairs(argv[2:])
        harness.run(load(argv[1]), args, quick=quick, out_dir=out)
        return 0
    if argv[0] == "report":
        from bench import report
        return report.main(argv[1:])
    print(USAGE)
    return 2


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(harness.ROOT, "python"))
    sys.exit(main(sys.argv[1:]))
