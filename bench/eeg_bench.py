#!/usr/bin/python3
"""Random 2 s windows of a BDF+ collection (make bench-eeg), read by the
tools EEG users read them with and by dsview, side by side, cold. Run
under the project venv's Python (pyedflib writes the collection and is a
peer; numpy and dsview's package come from the system).

The collection: EEG_RECS (30) BDF+C recordings as the EEG 2025 challenge
ships the HBN releases (129 channels + "BDF Annotations", 100 Hz, 1 s
records, 24-bit, per-channel scaling, written by pyedflib), EEG_MB (270)
MB of BDF in all. A window is 200 samples of every channel at a start
that is a whole second: the windows view of a manifest (window = 200,
stride = 100) has one row per such window. Each peer reads the same
random windows, batches of 64 (EEG_BATCHES, default 20, or 15 s):
  mne      mne.io.read_raw_bdf(preload=False).get_data(start, stop), one
           reader a recording opened once (only where MNE imports)
  pyedflib EdfReader.readSignal(ch, start, 200) for every channel
  npy      the same values pre-converted to float32 .npy files, one a
           recording (1, 129, T), read by memmap slices
  memmap   dsview's windows view as a float32 memmap, rows fancy-indexed
  batches  dsview.batches() over the same view: shuffled, hinted
  inproc   dsview.open(manifest): the same view read in this process, no
           FUSE, rows fancy-indexed
  null     the ceiling of the FUSE crossing: bench/nullfs (NULLFS) serving
           a file of the view's size from memory (no I/O, no decoding),
           read as the memmap peer reads the view (its read_ahead_kb:
           EEG_NULL_RA_KB, default 128, dsview's)
Cold: page cache dropped and a fresh daemon before each peer's pass.
EEG_PEERS (comma-separated) picks peers. ROUNDS (3) interleaved rounds,
medians; the ratios of this run's medians: memmap / npy (target >= 0.8),
null / npy (what any FUSE file system could reach here) and batches /
mne (target >= 5; against pyedflib where MNE does not import)."""
import glob
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import benchlib as L  # noqa: E402

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
NULLFS = os.environ.get("NULLFS", "build/bench/nullfs")
NULL_RA_KB = int(os.environ.get("EEG_NULL_RA_KB", "128"))
RECS = int(os.environ.get("EEG_RECS", "30"))
MB = int(os.environ.get("EEG_MB", "270"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BATCHES = int(os.environ.get("EEG_BATCHES", "20"))
C, RATE, W, STRIDE, BATCH = 129, 100, 200, 100, 64
SECONDS = 15.0


def make(work):
    """The BDF+ collection, its .npy copies and the windows manifest;
    returns each recording's length in samples."""
    import pyedflib
    secs = max(4, MB * 10**6 // RECS // (C * 3 * RATE))
    rng = np.random.default_rng(0)
    lengths = []
    for r in range(RECS):
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
    with open(os.path.join(work, "w.ini"), "w") as f:
        f.write(f"[w]\nsource = {work}/rec*.bdf\nwindow = {W}\nstride = {STRIDE}\n")
    return lengths


def windows(lengths):
    """(recording, start) of each row of the windows view, in its order."""
    return [(r, k * STRIDE) for r, t in enumerate(lengths) for k in range((t - W) // STRIDE + 1)]


def timed(batches_of, n_batches):
    """Windows/s over batches, each batches_of(k) returning an array of
    windows, until n_batches or SECONDS."""
    t = time.perf_counter()
    got = 0
    for k in range(n_batches):
        got += len(batches_of(k))
        if k >= 1 and time.perf_counter() - t > SECONDS:
            break
    return got / (time.perf_counter() - t)


def order(n, rnd):
    rng = np.random.default_rng(100 + rnd)
    return [np.sort(rng.choice(n, BATCH, replace=False)) for _ in range(BATCHES)]


def peer_mne(work, wins, picks):
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


def peer_pyedflib(work, wins, picks):
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


def peer_npy(work, wins, picks):
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


def mounted(work, fn):
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"),
                    os.path.join(work, "w.ini"), mnt], check=True)
    try:
        return fn(os.path.join(mnt, "w.npy"))
    finally:
        subprocess.run([DSVIEW, "umount", mnt], check=True)


def peer_memmap(work, wins, picks):
    def fn(path):
        a = np.load(path, mmap_mode="r")
        try:
            return timed(lambda k: np.asarray(a[picks[k]]), len(picks))
        finally:
            del a
    return mounted(work, fn)


def peer_batches(work, wins, picks, rnd):
    import dsview

    def fn(path):
        it = dsview.batches(path, batch_size=BATCH, seed=100 + rnd)
        try:
            return timed(lambda k: next(it), len(picks))
        finally:
            it.close()
    return mounted(work, fn)


def peer_inproc(work, wins, picks):
    import dsview
    a = dsview.open(os.path.join(work, "w.ini"))
    return timed(lambda k: np.asarray(a[picks[k]]), len(picks))


def peer_null(work, wins, picks):
    mnt = os.path.join(work, "nullmnt")
    shape = (len(wins), C, W)
    proc = L.mount_null(NULLFS, int(np.prod(shape)) * 4, mnt)
    L.raise_readahead(mnt, NULL_RA_KB)
    try:
        a = np.memmap(os.path.join(mnt, "data.dat"), np.float32, "r", shape=shape)
        try:
            return timed(lambda k: np.asarray(a[picks[k]]), len(picks))
        finally:
            del a
    finally:
        proc.terminate()
        proc.wait()


def check_same(work, wins):
    """The memmap view serves what the .npy copies hold (a few windows)."""
    def fn(path):
        a = np.load(path, mmap_mode="r")
        for i in (0, len(wins) // 2, len(wins) - 1):
            r, s = wins[i]
            ref = np.load(os.path.join(work, f"rec{r:03d}.npy"))[0, :, s:s + W]
            if not np.array_equal(np.asarray(a[i]), ref):
                sys.exit(f"window {i}: dsview and the .npy copy differ")
        del a
    mounted(work, fn)


def main():
    try:
        import mne  # noqa: F401
        peers = ["mne", "pyedflib", "npy", "memmap", "batches", "inproc", "null"]
    except ImportError:
        peers = ["pyedflib", "npy", "memmap", "batches", "inproc", "null"]
    peers = L.chosen_peers(peers, "EEG_PEERS", NULLFS)
    work = L.work_dir("eeg")
    L.scale_prefault(MB)
    t0 = time.perf_counter()
    try:
        lengths = make(work)
        wins = windows(lengths)
        bdf = sum(os.path.getsize(p) for p in glob.glob(os.path.join(work, "*.bdf")))
        npy = sum(os.path.getsize(p) for p in glob.glob(os.path.join(work, "*.npy")))
        print(f"collection: {RECS} BDF+ recordings, {C} channels at {RATE} Hz, {bdf / 1e6:.0f} "
              f"MB (as float32 .npy: {npy / 1e6:.0f} MB), {len(wins)} windows of {W}; made in "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
        check_same(work, wins)

        def one(peer, rnd):
            picks = order(len(wins), rnd)
            L.drop_caches()
            if peer == "batches":
                return peer_batches(work, wins, picks, rnd)
            return globals()["peer_" + peer](work, wins, picks)
        runs = L.interleaved(peers, ROUNDS, one, lambda r: f"{r:,.0f} windows/s", 8,
                             alternate=True)
    finally:
        L.remove_work(work, os.path.join(work, "mnt"), os.path.join(work, "nullmnt"))
    med = {p: float(np.median(v)) for p, v in runs.items()}
    print(f"\n{'peer':8} {'windows/s':>10}")
    for p in peers:
        print(f"{p:8} {med[p]:10,.0f}")
    print()
    if "npy" in med:
        for p in ("memmap", "null", "inproc"):
            if p in med:
                L.target(f"{p} / npy", med[p] / med["npy"], ">=", 0.8)
    base = "mne" if "mne" in med else "pyedflib"
    if "batches" in med and base in med:
        L.target(f"batches / {base}", med["batches"] / med[base], ">=", 5)
    print(f"\nbatches of {BATCH} random 2 s windows; " + L.machine("EEG_MB", MB, ROUNDS, t0))


if __name__ == "__main__":
    main()
