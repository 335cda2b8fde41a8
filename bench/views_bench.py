#!/usr/bin/python3
"""Views benchmark (make bench-views; also run by make bench after bench.py).

The views (docs/manifest.md) against their baselines, in one run, ROUNDS
interleaved rounds (default 3), medians; every ratio is against a peer of
the same run. Every pass is cold: page cache dropped (bench.drop_caches)
and, for dsview, the daemon restarted with a manifest holding only that
pass's view.

  img        plain view over uint8 HWC 224x224x3 rows, scale 1/255 and
             per-channel mean/std, float32 out (the baseline of img_rows, img_chw)
  img_rows   the same + `rows = @idx.npy`: a random 50% subset, sorted
  img_chw    the same + `layout = CHW`
             each: rows/s of a sequential pass (64 rows a read) and of
             shuffled batches of 256 (sorted batches of a permutation); disk
             bytes of the sequential pass over the source bytes of its rows
  eeg        plain float16 view of four float32 "releases" (R, 129, T)
  eeg_win    the same + `window = 200`, `stride = 100` (50% overlap, last axis)
  eeg32, eeg32_win   the same two with float32 output
  eegT       plain float32 view of float32 (T, 129) sources (time-major)
  eegT_win   the same + `window = 200`, `stride = 100`, `window_axis = 0`
             each: GB/s of output of a sequential pass, and the bytes the
             daemon read from disk (/proc/PID/io read_bytes) over the source
             bytes the windows cover (the plain view covers every byte)
  tok_numpy  np.load(mmap_mode="r") of a uint16 token file, windows of 1025
             at stride 1024 by as_strided, per batch `win[idx].astype(np.int64)`
  tok_dsv    the same file as `window = 1025`, `stride = 1024`, `dtype = int64`,
             np.load of V.npy (mmap_mode="r"), per batch `a[idx]`
             each: rows/s of shuffled batches of 256, cold, then again warm

VIEWS_MB scales every dataset (default 768: 768 MB of uint8 images, of EEG
float32 (half that time-major) and of uint16 tokens; ~10 min on 2 cores); VIEWS_MB=96 ROUNDS=1
is a quick run (~2 min). VIEWS_PEERS=img,img_rows,... runs a subset.
VIEWS_JSON=path writes the table as JSON."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as B  # noqa: E402  (drop_caches, proc_cpu, proc_kb, proc_read_bytes, shuffled, seq)

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
MB = int(os.environ.get("VIEWS_MB", "768"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
OUT_JSON = os.environ.get("VIEWS_JSON")
H, W, C = B.H, B.W, 3
BATCH = B.BATCH
EEG_CH, EEG_T = 129, 60050          # 10 min at 100 Hz: 31 MB of float32 a recording
WIN, STRIDE = 200, 100
CTX = 1024
TOK_BATCHES = int(os.environ.get("VIEWS_TOK_BATCHES", "60"))
IMG_XFORM = (f"scale = {1/255!r}\nmean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")

# peer: (group, baseline peer or None, manifest body or None for a Python peer)
PEERS = {
    "img":       ("img", None, "source = u8.npy\n" + IMG_XFORM),
    "img_rows":  ("img", "img", "source = u8.npy\n" + IMG_XFORM + "rows = @idx.npy\n"),
    "img_chw":   ("img", "img", "source = u8.npy\n" + IMG_XFORM + "layout = CHW\n"),
    "eeg":       ("eeg", None, "source = eeg_r*.npy\ndtype = float16\n"),
    "eeg_win":   ("eeg", "eeg", f"source = eeg_r*.npy\ndtype = float16\n"
                                f"window = {WIN}\nstride = {STRIDE}\n"),
    "eeg32":     ("eeg", None, "source = eeg_r*.npy\n"),
    "eeg32_win": ("eeg", "eeg32", f"source = eeg_r*.npy\nwindow = {WIN}\nstride = {STRIDE}\n"),
    "eegT":      ("eegT", None, "source = eegT_r*.npy\ndtype = float32\n"),
    "eegT_win":  ("eegT", "eegT", f"source = eegT_r*.npy\ndtype = float32\n"
                                  f"window = {WIN}\nstride = {STRIDE}\nwindow_axis = 0\n"),
    "tok_numpy": ("tok", None, None),
    "tok_dsv":   ("tok", "tok_numpy", f"source = tok.npy\nwindow = {CTX + 1}\nstride = {CTX}\n"
                                      f"dtype = int64\n"),
}
# (peer, metric, target): a ratio against the peer's baseline, same metric
# (disk/covered is not a ratio against a baseline: its own value is held to it)
TARGETS = {("img_rows", "seq rows/s"): (">=", 0.9), ("img_rows", "shuf rows/s"): (">=", 0.9),
           ("img_chw", "seq rows/s"): (">=", 0.9), ("img_chw", "shuf rows/s"): (">=", 0.9),
           ("eeg_win", "seq out GB/s"): (">=", 0.9), ("eeg_win", "disk/covered"): ("<=", 1.1),
           ("eeg32_win", "seq out GB/s"): (">=", 0.9), ("eeg32_win", "disk/covered"): ("<=", 1.1),
           ("eegT_win", "seq out GB/s"): (">=", 0.9), ("eegT_win", "disk/covered"): ("<=", 1.1),
           ("tok_dsv", "shuf cold rows/s"): (">=", 0.9),
           ("tok_dsv", "shuf warm rows/s"): (">=", 0.9)}


def npy_data_bytes(path):
    a = np.load(path, mmap_mode="r")
    return a.nbytes, a.shape


def windows(t, w=WIN, s=STRIDE):
    return (t - w) // s + 1 if t >= w else 0


def make_data(work):
    rng = np.random.default_rng(0)
    info = {}
    # images: as bench.py's (gradients + noise), uint8 HWC
    n = max(BATCH * 4, MB * 1000 * 1000 // (H * W * C))
    x = np.lib.format.open_memmap(os.path.join(work, "u8.npy"), "w+", np.uint8, (n, H, W, C))
    yy, xx = np.mgrid[0:H, 0:W]
    for i in range(n):
        base = (xx * 0.7 + yy * 0.4 + i) % 256
        x[i] = (base[..., None] * np.array([0.6, 0.8, 1.0])).astype(np.uint8)
        x[i] += rng.integers(0, 3, (H, W, C), dtype=np.uint8)
    x.flush()
    del x
    idx = np.sort(rng.choice(n, n // 2, replace=False)).astype(np.int64)
    np.save(os.path.join(work, "idx.npy"), idx)
    info["img"] = {"n": n, "row_out": H * W * C * 4, "src": n * H * W * C,
                   "covered": n * H * W * C}
    info["img_rows"] = {"n": len(idx), "row_out": H * W * C * 4, "src": n * H * W * C,
                        "covered": len(idx) * H * W * C}
    info["img_chw"] = dict(info["img"])
    # EEG: four releases of (R, 129, T) float32 (one T: the plain view must concatenate
    # them; T is not a multiple of the stride, so the windows leave a tail uncovered)
    row = EEG_CH * EEG_T * 4
    r = max(1, round(MB * 1e6 / 4 / row))
    srcs, covered, nwin = 0, 0, 0
    for k in range(4):
        t = EEG_T
        a = np.lib.format.open_memmap(os.path.join(work, f"eeg_r{k + 1}.npy"), "w+",
                                      np.float32, (r, EEG_CH, t))
        for i in range(r):
            a[i] = rng.standard_normal((EEG_CH, t), dtype=np.float32)
        a.flush()
        del a
        nw = windows(t)
        srcs += r * EEG_CH * t * 4
        covered += r * EEG_CH * ((nw - 1) * STRIDE + WIN) * 4
        nwin += r * nw
    info["eeg"] = {"n": 4 * r, "src": srcs, "covered": srcs, "row_out": EEG_CH * EEG_T * 2}
    info["eeg_win"] = {"n": nwin, "src": srcs, "covered": covered, "row_out": EEG_CH * WIN * 2}
    info["eeg32"] = dict(info["eeg"], row_out=EEG_CH * EEG_T * 4)
    info["eeg32_win"] = dict(info["eeg_win"], row_out=EEG_CH * WIN * 4)
    # time-major EEG (T, 129), half the bytes: windows along axis 0
    t_all = max(WIN * 4, int(MB * 1e6 / 2 / 4 / EEG_CH / 4)) // STRIDE * STRIDE + 50
    srcs, covered, nwin, rows = 0, 0, 0, 0
    for k in range(4):
        t = t_all
        a = np.lib.format.open_memmap(os.path.join(work, f"eegT_r{k + 1}.npy"), "w+",
                                      np.float32, (t, EEG_CH))
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
    # tokens: one uint16 stream (Zipf-ish ids below 50257)
    ntok = MB * 1000 * 1000 // 2
    tok = np.lib.format.open_memmap(os.path.join(work, "tok.npy"), "w+", np.uint16, (ntok,))
    step = 1 << 24
    for i in range(0, ntok, step):
        m = min(step, ntok - i)
        tok[i:i + m] = np.minimum(rng.zipf(1.2, m), 50256).astype(np.uint16)
    tok.flush()
    del tok
    nw = windows(ntok, CTX + 1, CTX)
    info["tok_numpy"] = {"n": nw, "src": ntok * 2, "row_out": (CTX + 1) * 8}
    info["tok_dsv"] = dict(info["tok_numpy"])
    return info


def seq_rows(arr, step):
    """Bytes/s and rows/s of a sequential pass, `step` rows a read."""
    t = time.perf_counter()
    nbytes = 0
    for i in range(0, arr.shape[0], step):
        nbytes += np.array(arr[i:i + step]).nbytes
    dt = time.perf_counter() - t
    return nbytes / dt, arr.shape[0] / dt


def main():
    work = B.work_dir("views")
    mnt = os.path.join(work, "mnt")
    t0 = time.perf_counter()
    info = make_data(work)
    print(f"data in {work}: images {info['img']['n']} rows ({info['img']['src'] / 1e6:.0f} MB "
          f"uint8), EEG {info['eeg']['src'] / 1e6:.0f} MB float32 ({info['eeg_win']['n']} "
          f"windows), time-major EEG {info['eegT']['src'] / 1e6:.0f} MB "
          f"({info['eegT_win']['n']} windows), tokens {info['tok_numpy']['src'] / 1e6:.0f} MB "
          f"uint16 ({info['tok_numpy']['n']} windows); made in {time.perf_counter() - t0:.0f} s",
          flush=True)
    # memory a pass touches: the largest output (4x the images) plus its source
    B.scale_prefault(MB, 1200)
    can_drop = B.drop_caches()
    if not can_drop:
        print("warning: cannot drop the page cache (not root): 'cold' numbers are warm")
    peers = B.chosen_peers(list(PEERS), "VIEWS_PEERS", None)
    refused = {}
    runs = {}
    img_batches = min(info["img_rows"]["n"] // BATCH, B.BATCHES)
    daemon = {"pid": None}

    def mount(peer):
        ini = os.path.join(work, f"{peer}.ini")
        with open(ini, "w") as f:
            f.write(f"[{peer}]\n{PEERS[peer][2]}")
        r = subprocess.run([DSVIEW, "mount", "--log", os.path.join(work, "log"), ini, mnt],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return (r.stderr or r.stdout).strip().splitlines()[-1] if (r.stderr or r.stdout) \
                else f"exit {r.returncode}"
        daemon["pid"] = B.daemon_pid(mnt)
        return None

    def umount():
        subprocess.run([DSVIEW, "umount", mnt], check=True)
        daemon["pid"] = None

    def cpu_now():
        t = os.times()
        return t.user + t.system, B.proc_cpu(daemon["pid"]) if daemon["pid"] else 0.0

    def cold_pass(peer, body):
        """drop caches, (re)mount, run body(arr) -> dict; adds CPU and disk."""
        B.drop_caches()
        served = PEERS[peer][2] is not None
        if served:
            err = mount(peer)
            if err:
                return err
            arr = np.load(os.path.join(mnt, f"{peer}.npy"), mmap_mode="r")
        else:
            arr = None
        own0 = B.proc_read_bytes(os.getpid())  # a Python peer reads the files itself
        c0 = cpu_now()
        try:
            r = body(arr)
        finally:
            c1 = cpu_now()
            io1 = B.proc_read_bytes(daemon["pid"]) if served else B.proc_read_bytes(os.getpid()) - own0
            del arr
            if served:
                umount()
        r["cpu_py"] = c1[0] - c0[0]
        r["cpu_daemon"] = c1[1] - c0[1]
        r["disk"] = io1  # a fresh daemon: everything it read, its mount's included
        return r

    for rnd in range(ROUNDS):
        for peer in peers:
            if peer in refused:
                continue
            group = PEERS[peer][0]
            inf = info[peer]
            res = {}
            if group == "img":
                def body_seq(arr):
                    bps, rps = seq_rows(arr, 64)
                    return {"seq rows/s": rps, "seq GB/s": bps / 1e9}

                def body_shuf(arr):
                    rps, _ = B.shuffled(lambda idx: np.array(arr[idx]), arr.shape[0], img_batches)
                    return {"shuf rows/s": rps}
                passes = [("seq", body_seq), ("shuf", body_shuf)]
            elif group in ("eeg", "eegT"):
                step = max(1, (32 << 20) // inf["row_out"])

                def body_seq(arr, step=step, inf=inf):
                    bps, _ = seq_rows(arr, step)
                    return {"seq out GB/s": bps / 1e9}
                passes = [("seq", body_seq)]
            else:
                def body_tok(arr, peer=peer, inf=inf):
                    if arr is None:
                        u16 = np.load(os.path.join(work, "tok.npy"), mmap_mode="r")
                        win = np.lib.stride_tricks.as_strided(
                            u16, shape=(inf["n"], CTX + 1), strides=(CTX * 2, 2), writeable=False)
                        get = lambda idx: win[idx].astype(np.int64)  # noqa: E731
                    else:
                        get = lambda idx: np.asarray(arr[idx])  # noqa: E731
                    cold, rows = B.shuffled(get, inf["n"], TOK_BATCHES, seed=11)
                    warm, _ = B.shuffled(get, inf["n"], rows // BATCH, seed=11)
                    return {"shuf cold rows/s": cold, "shuf warm rows/s": warm, "rows": rows}
                passes = [("shuf", body_tok)]
            for phase, body in passes:
                r = cold_pass(peer, body)
                if isinstance(r, str):
                    refused[peer] = r
                    print(f"round {rnd + 1}/{ROUNDS} {peer}: mount refused: {r}", flush=True)
                    break
                if phase == "seq":
                    nbytes = inf["n"] * inf["row_out"]
                    r["cpu s/GB"] = (r["cpu_py"] + r["cpu_daemon"]) / (nbytes / 1e9)
                    r["cpu_daemon s/GB"] = r["cpu_daemon"] / (nbytes / 1e9)
                    r["disk MB"] = r["disk"] / 1e6
                    if "covered" in inf:
                        r["disk/covered"] = r["disk"] / inf["covered"]
                else:
                    r["shuf disk MB"] = r["disk"] / 1e6
                for k in ("cpu_py", "cpu_daemon", "disk"):
                    r.pop(k)
                res.update(r)
            if peer in refused:
                continue
            runs.setdefault(peer, []).append(res)
            print(f"round {rnd + 1}/{ROUNDS} {peer}: " + ", ".join(
                f"{k} {v:,.3g}" for k, v in res.items()), flush=True)

    def med(peer, key):
        vals = [r[key] for r in runs.get(peer, []) if key in r]
        return float(np.median(vals)) if vals else None

    metrics = {"img": ["seq rows/s", "shuf rows/s", "disk/covered"], "eeg": ["seq out GB/s", "disk/covered"],
               "eegT": ["seq out GB/s", "disk/covered"],
               "tok": ["shuf cold rows/s", "shuf warm rows/s"]}
    table = []
    for peer in peers:
        group, base, _ = PEERS[peer]
        if peer in refused:
            table.append({"peer": peer, "metric": "-", "median": None, "baseline": base,
                          "ratio": None, "target": None, "met": None, "refused": refused[peer]})
            continue
        for m in metrics[group]:
            v = med(peer, m)
            tgt = TARGETS.get((peer, m))
            if m == "disk/covered":
                ratio = None
                val = v
            else:
                b = med(base, m) if base else v
                ratio = v / b if (v is not None and b) else None
                val = ratio
            met = None
            if tgt and val is not None:
                met = val >= tgt[1] if tgt[0] == ">=" else val <= tgt[1]
            table.append({"peer": peer, "metric": m, "median": v, "baseline": base or peer,
                          "ratio": ratio, "target": f"{tgt[0]} {tgt[1]}" if tgt else None,
                          "met": met})
    print(f"\n{'peer':10} {'metric':17} {'median':>10} {'vs':>10} {'ratio':>6} {'target':>8} met?")
    for t in table:
        if t.get("refused"):
            print(f"{t['peer']:10} refused at mount: {t['refused']}")
            continue
        v = t["median"]
        vs = "-" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.3f}")
        ratio = f"{t['ratio']:.2f}x" if t["ratio"] is not None else "-"
        met = "-" if t["met"] is None else ("yes" if t["met"] else "NO")
        print(f"{t['peer']:10} {t['metric']:17} {vs:>10} {t['baseline']:>10} {ratio:>6} "
              f"{t['target'] or '-':>8} {met}")
    print("\ndiagnostics (medians): CPU s per GB of output, reader + daemon, and disk MB read by the "
          "daemon (a Python peer: by the reader), sequential pass; disk MB of the shuffled pass")
    for peer in peers:
        if peer in runs:
            print(f"  {peer:10} " + "  ".join(
                f"{k} {med(peer, k):.3g}" for k in ("cpu s/GB", "cpu_daemon s/GB", "disk MB",
                                                   "shuf disk MB", "rows")
                if med(peer, k) is not None))
    print(f"\n{B.machine('VIEWS_MB', MB, ROUNDS, t0)} Every pass cold (page cache "
          f"dropped{'' if can_drop else ' (FAILED: not root)'}, daemon restarted, {B.PREFAULT_GB:g} GB prefaulted);\nimage shuffled: {img_batches} "
          f"sorted batches of {BATCH}; tokens: up to {TOK_BATCHES} batches of {BATCH} "
          f"(or {B.SHUF_SECONDS} s) cold, then the same batches warm; disk/covered: "
          f"/proc/PID/io read_bytes of the daemon over the source bytes the view covers")
    B.save_json(OUT_JSON, {"views_mb": MB, "rounds": ROUNDS, "cores": os.cpu_count(),
                           "table": table, "runs": runs, "info": info})
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
