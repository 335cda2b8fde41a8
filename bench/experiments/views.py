"""The views (rows, CHW, windows, token windows) against their baselines.

Every pass cold, each dsview peer a fresh daemon of a manifest holding
only its view:
  img        plain view over uint8 HWC 224x224x3 rows, scale 1/255 and
             per-channel mean/std, float32 out (the baseline of the two below)
  img_rows   the same + `rows = @idx.npy`: a random 50% subset, sorted
  img_chw    the same + `layout = CHW`
             each: rows/s of a sequential pass (64 rows a read) and of
             sorted shuffled batches
  eeg        plain float16 view of four float32 "releases" (R, 129, T)
  eeg_win    the same + `window = 200`, `stride = 100` (last axis)
  eeg32, eeg32_win   the same two with float32 output
  eegT       plain float32 view of float32 (T, 129) sources (time-major)
  eegT_win   the same + `window = 200`, `stride = 100`, `window_axis = 0`
             each: GB/s of output of a sequential pass; disk_cov, the
             bytes the daemon read (/proc/PID/io) over the source bytes the
             windows cover
  tok_numpy  np.load(mmap_mode="r") of a uint16 token file, windows of 1025
             at stride 1024 by as_strided, `win[idx].astype(np.int64)`
  tok_dsv    the same as `window = 1025`, `stride = 1024`, `dtype = int64`
             each: rows/s of shuffled batches, cold, then again warm"""
import os
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

H, W, C = L.H, L.W, 3
EEG_CH = 129
WIN, STRIDE = 200, 100
CTX = 1024
IMG_XFORM = f"scale = {1/255!r}\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n"

# peer: (group, manifest body or None for a Python peer)
PEERS = {
    "img":       ("img", "source = u8.npy\n" + IMG_XFORM),
    "img_rows":  ("img", "source = u8.npy\n" + IMG_XFORM + "rows = @idx.npy\n"),
    "img_chw":   ("img", "source = u8.npy\n" + IMG_XFORM + "layout = CHW\n"),
    "eeg":       ("eeg", "source = eeg_r*.npy\ndtype = float16\n"),
    "eeg_win":   ("eeg", f"source = eeg_r*.npy\ndtype = float16\nwindow = {WIN}\nstride = {STRIDE}\n"),
    "eeg32":     ("eeg", "source = eeg_r*.npy\n"),
    "eeg32_win": ("eeg", f"source = eeg_r*.npy\nwindow = {WIN}\nstride = {STRIDE}\n"),
    "eegT":      ("eegT", "source = eegT_r*.npy\ndtype = float32\n"),
    "eegT_win":  ("eegT", f"source = eegT_r*.npy\ndtype = float32\nwindow = {WIN}\n"
                          f"stride = {STRIDE}\nwindow_axis = 0\n"),
    "tok_numpy": ("tok", None),
    "tok_dsv":   ("tok", f"source = tok.npy\nwindow = {CTX + 1}\nstride = {CTX}\ndtype = int64\n"),
}


def windows(t, w=WIN, s=STRIDE):
    return (t - w) // s + 1 if t >= w else 0


def make_images(run, rng, info):
    n = max(run.s.batch * 4, run.s.mb * 1000 * 1000 // (H * W * C))
    x = np.lib.format.open_memmap(run.path("u8.npy"), "w+", np.uint8, (n, H, W, C))
    yy, xx = np.mgrid[0:H, 0:W]
    for i in range(n):
        base = (xx * 0.7 + yy * 0.4 + i) % 256
        x[i] = (base[..., None] * np.array([0.6, 0.8, 1.0])).astype(np.uint8)
        x[i] += rng.integers(0, 3, (H, W, C), dtype=np.uint8)
    x.flush()
    del x
    idx = np.sort(rng.choice(n, n // 2, replace=False)).astype(np.int64)
    np.save(run.path("idx.npy"), idx)
    img = {"n": n, "row_out": H * W * C * 4, "src": n * H * W * C, "covered": n * H * W * C}
    info.update(img=img, img_chw=dict(img),
                img_rows=dict(img, n=len(idx), covered=len(idx) * H * W * C))


def make_eeg(run, rng, info):
    """Four releases of (R, 129, T) float32; T is not a multiple of the
    stride, so the windows leave a tail uncovered."""
    t = run.s.eeg_t
    row = EEG_CH * t * 4
    r = max(1, round(run.s.mb * 1e6 / 4 / row))
    srcs, covered, nwin = 0, 0, 0
    for k in range(4):
        a = np.lib.format.open_memmap(run.path(f"eeg_r{k + 1}.npy"), "w+", np.float32, (r, EEG_CH, t))
        for i in range(r):
            a[i] = rng.standard_normal((EEG_CH, t), dtype=np.float32)
        a.flush()
        del a
        nw = windows(t)
        srcs += r * EEG_CH * t * 4
        covered += r * EEG_CH * ((nw - 1) * STRIDE + WIN) * 4
        nwin += r * nw
    info["eeg"] = {"n": 4 * r, "src": srcs, "covered": srcs, "row_out": EEG_CH * t * 2}
    info["eeg_win"] = {"n": nwin, "src": srcs, "covered": covered, "row_out": EEG_CH * WIN * 2}
    info["eeg32"] = dict(info["eeg"], row_out=EEG_CH * t * 4)
    info["eeg32_win"] = dict(info["eeg_win"], row_out=EEG_CH * WIN * 4)


def make_eeg_time_major(run, rng, info):
    """(T, 129), half the bytes: windows along axis 0."""
    t = max(WIN * 4, int(run.s.mb * 1e6 / 2 / 4 / EEG_CH / 4)) // STRIDE * STRIDE + 50
    srcs, covered, nwin, rows = 0, 0, 0, 0
    for k in range(4):
        a = np.lib.format.open_memmap(run.path(f"eegT_r{k + 1}.npy"), "w+", np.float32, (t, EEG_CH))
        a[:] = rng.standard_normal((t, EEG_CH), dtype=np.float32)
        a.flush()
        del a
        nw = windows(t)
        srcs += t * EEG_CH * 4
        covered += ((nw - 1) * STRIDE + WIN) * EEG_CH * 4
        nwin += nw
        rows += t
    info["eegT"] = {"n": rows, "src": srcs, "covered": srcs, "row_out": EEG_CH * 4}
    info["eegT_win"] = {"n": nwin, "src": srcs, "covered": covered, "row_out": WIN * EEG_CH * 4}


def make_tokens(run, rng, info):
    """One uint16 stream (Zipf-ish ids below 50257)."""
    ntok = run.s.mb * 1000 * 1000 // 2
    tok = np.lib.format.open_memmap(run.path("tok.npy"), "w+", np.uint16, (ntok,))
    step = 1 << 24
    for i in range(0, ntok, step):
        m = min(step, ntok - i)
        tok[i:i + m] = np.minimum(rng.zipf(1.2, m), 50256).astype(np.uint16)
    tok.flush()
    del tok
    info["tok_numpy"] = {"n": windows(ntok, CTX + 1, CTX), "src": ntok * 2, "row_out": (CTX + 1) * 8}
    info["tok_dsv"] = dict(info["tok_numpy"])


def make(run, point):
    rng = np.random.default_rng(0)
    info = {}
    make_images(run, rng, info)
    make_eeg(run, rng, info)
    make_eeg_time_major(run, rng, info)
    make_tokens(run, rng, info)
    for peer, (_, body) in PEERS.items():
        if body:
            with open(run.path(f"{peer}.ini"), "w") as f:
                f.write(f"[{peer}]\n{body}")
    mb = sum(info[g]["src"] for g in ("img", "eeg", "eegT", "tok_numpy")) / 1e6
    return types.SimpleNamespace(peers=info, info={
        "img_rows": info["img"]["n"], "eeg_windows": info["eeg_win"]["n"],
        "eegT_windows": info["eegT_win"]["n"], "token_windows": info["tok_numpy"]["n"],
        "mb": round(mb)})


def peer_setup(name):
    def mount(run, data):
        return run.mounts.dsview(run.path(f"{name}.ini"))
    return mount


def teardown(run, m):
    if m is not None:
        run.mounts.close(m)


def cpu_now(m):
    t = os.times()
    return t.user + t.system, m.cpu() if m else 0.0


def timed(body):
    """A phase's measure around body(run, data, peer, arr, inf) -> dict:
    adds CPU s/GB (reader + daemon) and the bytes read from disk (the
    daemon's, or this process's for a Python peer)."""
    def measure(run, data, peer, m, rnd):
        inf = data.peers[peer]
        arr = np.load(m.path(f"{peer}.npy"), mmap_mode="r") if m else None
        io0 = L.proc_read_bytes() if m is None else 0
        c0 = cpu_now(m)
        try:
            r = body(run, data, peer, arr, inf, rnd)
        finally:
            c1 = cpu_now(m)
            disk = m.read_bytes() if m else L.proc_read_bytes() - io0
            del arr
        return r(c1[0] - c0[0], c1[1] - c0[1], disk)
    return measure


def seq_rows(arr, step):
    t = time.perf_counter()
    nbytes = 0
    for i in range(0, arr.shape[0], step):
        nbytes += np.array(arr[i:i + step]).nbytes
    dt = time.perf_counter() - t
    return nbytes / dt, arr.shape[0] / dt


def seq(run, data, peer, arr, inf, rnd):
    img = PEERS[peer][0] == "img"
    step = 64 if img else max(1, (32 << 20) // inf["row_out"])
    bps, rps = seq_rows(arr, step)
    r = {"seq_rows": rps} if img else {}
    r["seq_gbs"] = bps / 1e9

    def done(cpu_py, cpu_d, disk):
        gb = inf["n"] * inf["row_out"] / 1e9
        return dict(r, cpu_gb=(cpu_py + cpu_d) / gb, cpu_d_gb=cpu_d / gb, disk_mb=disk / 1e6,
                    disk_cov=disk / inf["covered"])
    return done


def img_shuf(run, data, peer, arr, inf, rnd):
    batches = min(data.peers["img_rows"]["n"] // run.s.batch, run.s.batches)
    rps, _ = L.shuffled(lambda idx: np.array(arr[idx]), arr.shape[0], batches, batch=run.s.batch)
    return lambda cpu_py, cpu_d, disk: {"shuf_rows": rps, "shuf_disk_mb": disk / 1e6}


def tok_shuf(run, data, peer, arr, inf, rnd):
    if arr is None:
        u16 = np.load(run.path("tok.npy"), mmap_mode="r")
        win = np.lib.stride_tricks.as_strided(u16, shape=(inf["n"], CTX + 1), strides=(CTX * 2, 2),
                                              writeable=False)

        def get(idx):
            return win[idx].astype(np.int64)
    else:
        def get(idx):
            return np.asarray(arr[idx])
    cold, rows = L.shuffled(get, inf["n"], run.s.tok_batches, seed=11, batch=run.s.batch)
    warm, _ = L.shuffled(get, inf["n"], rows // run.s.batch, seed=11, batch=run.s.batch)
    return lambda cpu_py, cpu_d, disk: {"tok_cold_rows": cold, "tok_warm_rows": warm,
                                        "shuf_disk_mb": disk / 1e6}


def group(g):
    return tuple(p for p, (gr, _) in PEERS.items() if gr == g)


def targets():
    out = []
    for peer, base in (("img_rows", "img"), ("img_chw", "img")):
        out += [Target(f"{peer} sequential", "seq_rows", peer, base, 0.9),
                Target(f"{peer} shuffled", "shuf_rows", peer, base, 0.9)]
    for peer, base in (("eeg_win", "eeg"), ("eeg32_win", "eeg32"), ("eegT_win", "eegT")):
        out += [Target(f"{peer} sequential", "seq_gbs", peer, base, 0.9),
                Target(f"{peer} disk over covered", "disk_cov", peer, None, 1.1, "<=")]
    return out + [Target("tokens cold", "tok_cold_rows", "tok_dsv", "tok_numpy", 0.9),
                  Target("tokens warm", "tok_warm_rows", "tok_dsv", "tok_numpy", 0.9)]


EXPERIMENT = Experiment(
    name="views",
    doc=__doc__,
    settings=[Setting("mb", 768, "MB of each data set (images, EEG, tokens)", quick=4),
              Setting("eeg_t", 60050, "samples of an EEG recording (10 min at 100 Hz)",
                      quick=6050),
              Setting("batch", 256, "rows a shuffled batch", quick=16),
              Setting("batches", 8, "image shuffled batches", quick=2),
              Setting("tok_batches", 60, "token shuffled batches (or 15 s)", quick=2)],
    data=make,
    peers=[Peer(p, body.splitlines()[-1] if body else "numpy as_strided windows",
                peer_setup(p) if body else None, teardown) for p, (_, body) in PEERS.items()],
    phases=[Phase("seq", timed(seq), peers=group("img") + group("eeg") + group("eegT")),
            Phase("shuf", timed(img_shuf), peers=group("img")),
            Phase("tok", timed(tok_shuf), peers=group("tok"))],
    metrics=[Metric("seq_rows", "rows/s", "cold sequential"),
             Metric("shuf_rows", "rows/s", "cold shuffled"),
             Metric("seq_gbs", "GB/s", "cold sequential, output bytes"),
             Metric("disk_cov", "x", "disk bytes over the source bytes covered",
                    higher_is_better=False),
             Metric("tok_cold_rows", "rows/s", "token windows, cold"),
             Metric("tok_warm_rows", "rows/s", "token windows, warm"),
             Metric("cpu_gb", "CPU s/GB", "reader + daemon, sequential", higher_is_better=False)],
    targets=targets(),
    alternate=False,
)
