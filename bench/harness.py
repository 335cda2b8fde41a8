"""The runner: an experiment (bench/experiments/) declares its settings,
its data, its peers, its phases, its metrics and its targets; run() makes
the data, measures every peer in interleaved rounds (order reversed every
other round), takes medians, judges the targets and writes one JSON result.

A cold phase starts from the page cache dropped (benchlib.drop_caches) and
a peer set up afresh (a new daemon, so an empty chunk cache); a warm phase
only sets the peer up. Each phase is one session: setup, measure, teardown."""
import dataclasses
import json
import math
import os
import shutil
import sys
import tempfile
import time
import types
from typing import Callable, Optional

import numpy as np

from bench import benchlib as L
from bench import machine
from bench.mounts import Mounts

ROOT = machine.ROOT
RESULTS = os.path.join(ROOT, "build", "bench", "results")


@dataclasses.dataclass
class Setting:
    """A knob: `--name value` on the command line, `default` otherwise,
    `quick` under --quick. A list default takes comma-separated values."""
    name: str
    default: object
    help: str = ""
    quick: object = None


@dataclasses.dataclass
class Peer:
    """One reader measured: setup(run, data) returns its handle (a mount,
    an open file), teardown(run, handle) ends it. missing(run) returns why
    the peer cannot run here, or None."""
    name: str
    doc: str = ""
    setup: Optional[Callable] = None
    teardown: Optional[Callable] = None
    missing: Optional[Callable] = None


@dataclasses.dataclass
class Phase:
    """measure(run, data, peer, handle, rnd) -> {metric: value}, for the
    peers named in `peers` (all where None)."""
    name: str
    measure: Callable
    cold: bool = True
    peers: Optional[tuple] = None


@dataclasses.dataclass
class Metric:
    key: str
    unit: str
    doc: str = ""
    higher_is_better: bool = True


@dataclasses.dataclass
class Target:
    """median(peer, metric) / median(base, metric) `op` bound; with base
    None, the peer's own median against the bound; with bound None, the
    ratio is reported, not held to anything; with `at` set, only at that
    point of the sweep."""
    name: str
    metric: str
    peer: str
    base: Optional[str]
    bound: Optional[float]
    op: str = ">="
    at: object = None

    def judge(self, med, judged):
        a = med.get(self.peer, {}).get(self.metric)
        if self.base is None:
            value = a
        else:
            b = med.get(self.base, {}).get(self.metric)
            value = a / b if a is not None and b else None
        met = None
        if judged and value is not None and self.bound is not None:
            met = value >= self.bound if self.op == ">=" else value <= self.bound
        return {"target": self.name, "metric": self.metric, "peer": self.peer,
                "base": self.base, "op": self.op, "bound": self.bound, "value": value,
                "met": met}


@dataclasses.dataclass
class Experiment:
    """sweep names a list setting: the data is made, and every peer
    measured, once per value of it (a point); cost against it is plotted."""
    name: str
    doc: str
    settings: list
    data: Callable  # (run, point) -> an object; its .info dict goes in the result
    peers: list
    phases: list
    metrics: list
    targets: list = dataclasses.field(default_factory=list)
    sweep: Optional[str] = None
    check: Optional[Callable] = None  # (run, data, peers): before the rounds
    alternate: bool = True
    make: tuple = ()  # build outputs it needs beyond build/dsview


# What every run takes, beside its experiment's settings.
COMMON = [
    Setting("rounds", 3, "interleaved rounds, medians", quick=1),
    Setting("peers", "", "a comma-separated subset of the peers (all where empty)"),
    Setting("dsview", "build/dsview", "the dsview binary"),
    Setting("bindir", "build/bench", "where bench/*.c are built (nullfs, codec_bench, ...)"),
    Setting("workdir", "/var/tmp", "where the data is made (removed after)"),
    Setting("settle", 3.0, "seconds after each page-cache drop", quick=0.0),
    Setting("prefault_gb", -1.0, "memory touched after each drop (-1: 6 GB at 1 GB of "
            "data, scaled down, at least 1)", quick=0.0),
]


def parse_value(default, text):
    if isinstance(default, bool):
        return text.lower() in ("1", "yes", "true", "on")
    if isinstance(default, list):
        kind = type(default[0]) if default else str
        return [kind(x) for x in text.split(",") if x]
    return type(default)(text)


def settings_of(exp, args, quick):
    """{name: value}: defaults, quick values under --quick, then args
    ({name: text}); an unknown name is an error that lists the known."""
    known = {s.name: s for s in COMMON + exp.settings}
    out = {}
    for s in known.values():
        out[s.name] = s.quick if quick and s.quick is not None else s.default
    for k, text in args.items():
        if k not in known:
            raise SystemExit(f"{exp.name}: no setting '{k}' (settings: {', '.join(known)})")
        try:
            out[k] = parse_value(known[k].default, text)
        except ValueError:
            raise SystemExit(f"{exp.name}: setting '{k}': '{text}' is not a "
                             f"{type(known[k].default).__name__}") from None
    return out


class Run:
    """One run of an experiment: its settings (run.s.NAME), its work
    directory, its mounts, and the flags the phases read."""

    def __init__(self, exp, settings, quick):
        self.exp = exp
        self.s = types.SimpleNamespace(**settings)
        self.quick = quick
        self.dsview = os.path.abspath(os.path.join(ROOT, settings["dsview"]))
        self.bindir = os.path.abspath(os.path.join(ROOT, settings["bindir"]))
        self.nullfs = self.bin("nullfs")
        os.makedirs(settings["workdir"], exist_ok=True)
        self.work = tempfile.mkdtemp(prefix=f"dsview-{exp.name}-", dir=settings["workdir"])
        self.mounts = Mounts(self)
        self.cold_ok = True

    def bin(self, name):
        """The path of bench/NAME.c's program."""
        return os.path.join(self.bindir, name)

    def path(self, *names):
        return os.path.join(self.work, *names)

    def close(self):
        self.mounts.close_all()
        shutil.rmtree(self.work, ignore_errors=True)


def chosen_peers(run):
    """The experiment's peers less those not asked for and those missing
    here (each said once)."""
    want = [p for p in run.s.peers.split(",") if p]
    names = [p.name for p in run.exp.peers]
    for p in want:
        if p not in names:
            raise SystemExit(f"{run.exp.name}: no peer '{p}' (peers: {', '.join(names)})")
    out, skipped = [], {}
    for p in run.exp.peers:
        if want and p.name not in want:
            continue
        why = p.missing(run) if p.missing else None
        if why:
            print(f"warning: peer {p.name} skipped: {why}", flush=True)
            skipped[p.name] = why
            continue
        out.append(p)
    return out, skipped


def cold_start(run):
    """The page cache dropped (and memory prefaulted, benchlib)."""
    if not L.drop_caches() and run.cold_ok:
        print("warning: cannot drop the page cache (not root): 'cold' figures are warm",
              flush=True)
        run.cold_ok = False


def one_phase(run, data, peer, phase, rnd):
    if phase.cold:
        cold_start(run)
    handle = peer.setup(run, data) if peer.setup else None
    try:
        return phase.measure(run, data, peer.name, handle, rnd)
    finally:
        if peer.teardown:
            peer.teardown(run, handle)


def round_line(exp, r):
    parts = []
    for m in exp.metrics:
        if m.key in r:
            parts.append(f"{m.key} {r[m.key]:,.3g} {m.unit}")
    return ", ".join(parts)


def measure_point(run, data, peers):
    """{peer: [one dict of metrics a round]}."""
    exp = run.exp
    rounds = {p.name: [] for p in peers}
    width = max(len(p.name) for p in peers)
    for rnd in range(run.s.rounds):
        order = peers if not exp.alternate or rnd % 2 == 0 else peers[::-1]
        for peer in order:
            r = {}
            for phase in exp.phases:
                if phase.peers is None or peer.name in phase.peers:
                    r.update(one_phase(run, data, peer, phase, rnd))
            rounds[peer.name].append(r)
            print(f"  round {rnd + 1}/{run.s.rounds} {peer.name:{width}}: {round_line(exp, r)}",
                  flush=True)
    return rounds


def medians(rounds):
    """{peer: {metric: median over the rounds that have it}}."""
    out = {}
    for peer, rs in rounds.items():
        keys = sorted({k for r in rs for k in r})
        out[peer] = {k: float(np.median([r[k] for r in rs if k in r])) for k in keys}
    return out


def print_table(exp, med, peers):
    keys = [m for m in exp.metrics if any(m.key in med[p] for p in peers)]
    width = max(4, *(len(p) for p in peers))
    print(f"\n{'peer':{width}} " + " ".join(f"{m.key:>12}" for m in keys))
    print(f"{'':{width}} " + " ".join(f"{m.unit:>12}" for m in keys))
    for p in peers:
        cells = [f"{med[p][m.key]:12,.4g}" if m.key in med[p] else f"{'-':>12}" for m in keys]
        print(f"{p:{width}} " + " ".join(cells))


def print_targets(targets):
    for t in targets:
        if t["bound"] is None:
            print(f"  ratio {t['target']}: {ratio_name(t)} {figure(t)}")
            continue
        verdict = {None: "not judged", True: "met", False: "NOT met"}[t["met"]]
        print(f"  target {t['target']}: {ratio_name(t)} {figure(t)} ({t['op']} {bound(t)}): "
              f"{verdict}")


def figure(t):
    """A target's value: a ratio ('1.23x'), or a peer's own figure."""
    if t["value"] is None:
        return "-"
    return f"{t['value']:.2f}x" if t["base"] else f"{t['value']:.3g}"


def bound(t):
    return f"{t['bound']:g}x" if t["base"] else f"{t['bound']:g}"


def ratio_name(t):
    """'peer / base metric', or 'peer metric' for a peer's own figure."""
    if t["base"] is None:
        return f"{t['peer']} {t['metric']}"
    return f"{t['peer']} / {t['base']} {t['metric']}"


def points_of(run):
    if not run.exp.sweep:
        return [None]
    return list(getattr(run.s, run.exp.sweep))


def finite(obj):
    """obj with NaN and infinities as None (JSON has neither)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite(v) for v in obj]
    return obj


def run(exp, args, quick=False, out_dir=None):
    """Runs exp with settings args ({name: text}); returns the result's path."""
    settings = settings_of(exp, args, quick)
    result = {"experiment": exp.name, "quick": quick, "settings": settings,
              "command": " ".join(["python3 -m bench run", exp.name] + (["--quick"] if quick else [])
                                  + [f"--{k} {v}" for k, v in args.items()]),
              "machine": machine.machine(), **machine.commit(),
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    r = Run(exp, settings, quick)
    L.SETTLE = settings["settle"]
    t0 = time.perf_counter()
    points = []
    try:
        peers, skipped = chosen_peers(r)
        if not peers:
            raise SystemExit(f"{exp.name}: no peer can run here")
        result["peers"] = [p.name for p in peers]
        result["skipped"] = skipped
        for point in points_of(r):
            points.append(one_point(r, point, peers, quick))
    finally:
        r.close()
    result["machine"]["load_after"] = machine.load()
    result["cold"] = r.cold_ok
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["metrics"] = [dataclasses.asdict(m) for m in exp.metrics]
    result["sweep"] = exp.sweep
    result["points"] = points
    return write(result, out_dir)


def one_point(r, point, peers, quick):
    exp = r.exp
    if point is not None:
        print(f"\n== {exp.sweep} = {point}", flush=True)
    t = time.perf_counter()
    data = exp.data(r, point)
    info = dict(getattr(data, "info", {}))
    info["made_s"] = round(time.perf_counter() - t, 1)
    # memory touched after each drop: what a pass over this data touches
    # (6 GB at 1 GB of it, at least 1), unless set
    L.PREFAULT_GB = (r.s.prefault_gb if r.s.prefault_gb >= 0
                     else min(6.0, max(1.0, 6 * info.get("mb", 1024) / 1024)))
    info["prefault_gb"] = round(L.PREFAULT_GB, 2)
    print(f"data: {', '.join(f'{k} {v}' for k, v in info.items())}", flush=True)
    try:
        if exp.check:
            exp.check(r, data, [p.name for p in peers])
        rounds = measure_point(r, data, peers)
    finally:
        cleanup = getattr(data, "cleanup", None)
        if cleanup:
            cleanup()
    med = medians(rounds)
    targets = [t.judge(med, not quick and r.cold_ok) for t in exp.targets
               if t.at is None or t.at == point]
    print_table(exp, med, [p.name for p in peers])
    print_targets(targets)
    out = {"point": point, "data": info, "rounds": rounds, "medians": med, "targets": targets}
    if getattr(data, "series", None) is not None:  # samples over time (soak)
        out["series"], out["series_keys"] = data.series, data.series_keys
    return out


def write(result, out_dir):
    out_dir = out_dir or RESULTS
    os.makedirs(out_dir, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = f"{result['experiment']}-{stamp}{'-quick' if result['quick'] else ''}.json"
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(finite(result), f, indent=1)
    print(f"\n{result['experiment']}: {result['seconds']:.0f} s, load average "
          f"{result['machine']['load_before']} -> {result['machine']['load_after']}; "
          f"result {os.path.relpath(path)}", flush=True)
    sys.stdout.flush()
    return path
