"""Random 2 s windows of a BDF+ collection: MNE, pyedflib, float32 .npy copies and dsview.

The collection: --recs BDF+C recordings as the EEG 2025 challenge ships
the HBN releases (129 channels + "BDF Annotations", 100 Hz, 1 s records,
24-bit, per-channel scaling, written by pyedflib in the project venv,
--venv_py), --mb MB of BDF in all, lengths differing a little. A window
is 200 samples of every channel at a start that is a whole second: the
windows view of a manifest (window = 200, stride = 100) has one row per
such window. Each peer reads the same random windows, batches of 64
(--batches, or 15 s, or an epoch's whole batches where fewer):
  mne       mne.io.read_raw_bdf(preload=False).get_data(start, stop), a
            recording opened once (where MNE imports)
  pyedflib  EdfReader.readSignal(ch, start, 200) for every channel (in
            the venv's Python, a process of its own)
  npy       the same values pre-converted to float32 .npy files, one a
            recording (1, 129, T), read by memmap slices
  memmap    dsview's windows view as a float32 memmap, rows fancy-indexed
  batches   dsview.batches() over the same view: shuffled, hinted
  inproc    dsview.open(manifest): the same view read in this process, no
            FUSE, rows fancy-indexed
  null      the ceiling of the FUSE crossing: bench/nullfs serving a file
            of the view's size from memory (no I/O, no decoding), read as
            the memmap peer reads the view, at dsview's readahead window
            (--null_ra_kb)
Cold: page cache dropped (and a fresh daemon) before each peer's pass.
Before the rounds, three windows of the view are checked against the
.npy copies. Targets: memmap / npy >= 0.8 and batches / mne >= 5;
batches / pyedflib, null / npy (what any FUSE file system reaches here)
and inproc / npy reported."""
import json
import os
import subprocess
import sys
import time
import types

import numpy as np

from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target
from bench import benchlib as L
from bench.mounts import dsview_peer, nullfs_missing

C, RATE, W, STRIDE, BATCH = 129, 100, 200, 100, 64
SECONDS = 15.0


def write(work, recs, mb):
    """The BDF+ collection and its .npy copies (pyedflib: the venv's
    Python); prints each recording's length in samples as JSON."""
    import pyedflib
    secs = max(4, mb * 10**6 // recs // (C * 3 * RATE))
    rng = np.random.default_rng(0)
    lengths = []
    for r in range(recs):
        t = (secs + r % 7) * RATE  # lengths differ a little, as recordings do
        x = rng.standard_normal((C, t)) * rng.uniform(5, 50, (C, 1))
        path = os.path.join(work, f"rec{r:03d}.bdf")
        w = pyedflib.EdfWriter(path, C, file_type=pyedflib.FILETYPE_BDFPLUS)
        w.setSignalHeaders([{"label": f"E{i + 1}", "dimension": "uV", "sample_frequency": RATE,
                             "physical_min": float(np.floor(x[i].min())),
                             "physical_max": float(np.ceil(x[i].max())),
                             "digital_min": -8388608, "digital_max": 8388607,
                             "transducer": "", "prefilter": ""} for i in range(C)])
        w.writeSamples(list(x))
        w.close()
        rd = pyedflib.EdfReader(path)  # the values as read: the .npy holds those
        phys = np.array([rd.readSignal(i) for i in range(C)], np.float32)[None]
        rd.close()
        np.save(os.path.join(work, f"rec{r:03d}.npy"), phys)
        lengths.append(t)
    print(json.dumps(lengths))


def venv(run, *args):
    """`venv_py -m bench.experiments.eeg ARGS`'s stdout."""
    py = os.path.join(ROOT, run.s.venv_py)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "python")]))
    r = subprocess.run([py, "-m", "bench.experiments.eeg", *args], capture_output=True, text=True,
                       cwd=ROOT, env=env)
    if r.returncode:
        raise RuntimeError(f"{py} eeg {args[0]}: {r.stderr[-2000:]}")
    return r.stdout


def make(run, point):
    work = run.path("rec")
    os.makedirs(work)
    lengths = json.loads(venv(run, "--write", work, str(run.s.recs), str(run.s.mb)))
    ini = run.path("w.ini")
    with open(ini, "w") as f:
        f.write(f"[w]\nsource = {work}/rec*.bdf\nwindow = {W}\nstride = {STRIDE}\n")
    wins = [(r, k * STRIDE) for r, t in enumerate(lengths) for k in range((t - W) // STRIDE + 1)]
    if len(wins) < 2 * BATCH:
        raise SystemExit(f"eeg: {len(wins)} windows, fewer than two batches of {BATCH}: "
                         "--mb larger or --recs fewer")
    bdf = sum(os.path.getsize(os.path.join(work, f"rec{r:03d}.bdf")) for r in range(len(lengths)))
    return types.SimpleNamespace(work=work, ini=ini, wins=wins, view_bytes=len(wins) * C * W * 4,
                                 info={
        "recordings": len(lengths), "mb": round(bdf / 1e6, 1), "windows": len(wins)})


def timed(batch_of, n_batches):
    """Windows/s over batches, each batch_of(k) returning an array of
    windows, until n_batches or SECONDS."""
    t = time.perf_counter()
    got = 0
    for k in range(n_batches):
        got += len(batch_of(k))
        if k >= 1 and time.perf_counter() - t > SECONDS:
            break
    return got / (time.perf_counter() - t)


def picks_of(n, batches, rnd):
    rng = np.random.default_rng(100 + rnd)
    return [np.sort(rng.choice(n, min(BATCH, n), replace=False)) for _ in range(batches)]


def read_mne(work, wins, picks):
    import mne
    raws = {}

    def one(k):
        out = []
        for i in picks[k]:
            r, s = wins[i]
            if r not in raws:
                raws[r] = mne.io.read_raw_bdf(os.path.join(work, f"rec{r:03d}.bdf"),
                                              preload=False, verbose="error")
            out.append(raws[r].get_data(start=s, stop=s + W, picks="eeg", units="uV"))
        return np.array(out, np.float32)
    return timed(one, len(picks))


def read_pyedflib(work, wins, picks):
    import pyedflib
    rd = {}

    def one(k):
        out = np.empty((len(picks[k]), C, W), np.float32)
        for j, i in enumerate(picks[k]):
            r, s = wins[i]
            if r not in rd:
                rd[r] = pyedflib.EdfReader(os.path.join(work, f"rec{r:03d}.bdf"))
            for ch in range(C):
                out[j, ch] = rd[r].readSignal(ch, s, W)
        return out
    try:
        return timed(one, len(picks))
    finally:
        for x in rd.values():
            x.close()


def read_npy(work, wins, picks):
    mm = {}

    def one(k):
        out = np.empty((len(picks[k]), C, W), np.float32)
        for j, i in enumerate(picks[k]):
            r, s = wins[i]
            if r not in mm:
                mm[r] = np.load(os.path.join(work, f"rec{r:03d}.npy"), mmap_mode="r")
            out[j] = mm[r][0, :, s:s + W]
        return out
    return timed(one, len(picks))


def measure(run, data, peer, m, rnd):
    # as many batches as dsview.batches() has in an epoch, at most
    picks = picks_of(len(data.wins), min(run.s.batches, len(data.wins) // BATCH), rnd)
    if peer == "pyedflib":
        path = run.path("picks.npy")
        np.save(path, np.array(picks))
        rate = float(venv(run, "--pyedflib", data.work, json.dumps(data.wins), path))
    elif peer == "mne":
        rate = read_mne(data.work, data.wins, picks)
    elif peer == "npy":
        rate = read_npy(data.work, data.wins, picks)
    elif peer in ("memmap", "null"):
        a = (np.load(m.path("w.npy"), mmap_mode="r") if peer == "memmap" else
             np.memmap(m.path("data.dat"), np.float32, "r", shape=(len(data.wins), C, W)))
        try:
            rate = timed(lambda k: np.asarray(a[picks[k]]), len(picks))
        finally:
            del a
    elif peer == "inproc":
        import dsview
        a = dsview.open(data.ini)
        try:
            rate = timed(lambda k: np.asarray(a[picks[k]]), len(picks))
        finally:
            a.reader.close()
    else:
        import dsview
        it = dsview.batches(m.path("w.npy"), batch_size=BATCH, seed=100 + rnd)
        try:
            rate = timed(lambda k: next(it), len(picks))
        finally:
            it.close()
    return {"windows_s": rate}


def check(run, data, peers):
    """The view serves what the .npy copies hold (three windows)."""
    m = run.mounts.dsview(data.ini)
    try:
        a = np.load(m.path("w.npy"), mmap_mode="r")
        for i in (0, len(data.wins) // 2, len(data.wins) - 1):
            r, s = data.wins[i]
            ref = np.load(os.path.join(data.work, f"rec{r:03d}.npy"))[0, :, s:s + W]
            if not np.array_equal(np.asarray(a[i]), ref):
                raise RuntimeError(f"eeg: window {i}: dsview and the .npy copy differ")
        del a
    finally:
        run.mounts.close(m)


def mne_missing(run):
    try:
        import mne  # noqa: F401
    except ImportError:
        return "MNE does not import in this Python"
    return None


def null_setup(run, data):
    """bench/nullfs at the readahead window dsview sets for its mounts."""
    m = run.mounts.null(data.view_bytes, "nullmnt")
    L.raise_readahead(m.mnt, run.s.null_ra_kb)
    return m


def mounted(name):
    setup, teardown = dsview_peer("ini")
    return Peer(name, name, setup, teardown)


EXPERIMENT = Experiment(
    name="eeg",
    doc=__doc__,
    settings=[Setting("recs", 30, "BDF+ recordings", quick=2),
              Setting("mb", 270, "MB of BDF in all", quick=8),
              Setting("batches", 20, "batches of 64 windows a pass (or 15 s)", quick=2),
              Setting("venv_py", "build/venv/bin/python", "the project venv's Python (pyedflib)"),
              Setting("null_ra_kb", 128, "read_ahead_kb of the nullfs mount (dsview's)")],
    data=make,
    check=check,
    peers=[Peer("mne", "MNE", missing=mne_missing), Peer("pyedflib", "pyedflib"),
           Peer("npy", "float32 .npy copies"), mounted("memmap"), mounted("batches"),
           Peer("inproc", "dsview.open in this process"),
           Peer("null", "bench/nullfs, the FUSE ceiling", null_setup,
                lambda run, m: run.mounts.close(m), missing=nullfs_missing)],
    phases=[Phase("windows", measure)],
    metrics=[Metric("windows_s", "windows/s", "random 2 s windows of 129 channels")],
    targets=[Target("memmap vs the float32 copies", "windows_s", "memmap", "npy", 0.8),
             Target("batches vs MNE", "windows_s", "batches", "mne", 5.0),
             Target("batches vs pyedflib", "windows_s", "batches", "pyedflib", None),
             Target("the FUSE ceiling vs the float32 copies", "windows_s", "null", "npy", None),
             Target("in-process vs the float32 copies", "windows_s", "inproc", "npy", None)],
)

if __name__ == "__main__" and sys.argv[1:2] == ["--write"]:
    write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif __name__ == "__main__" and sys.argv[1:2] == ["--pyedflib"]:
    picks_ = list(np.load(sys.argv[4]))
    print(read_pyedflib(sys.argv[2], [tuple(w) for w in json.loads(sys.argv[3])], picks_))
