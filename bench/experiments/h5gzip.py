"""HDF5 gzip as h5py writes it: h5py's read against `dsview verify` and a mount.

One uint8 dataset of 128x128x3 image rows (gradients + noise), written by
h5py with compression="gzip" (level 4, h5py's default), per layout (the
sweep):
  rows       chunks of 16 whole rows
  rows_shuf  the same with shuffle=True
  auto       h5py's own chunk shape (chunks=True): chunks that split rows
  rows_fl32  chunks of 16 whole rows, shuffle and fletcher32
Peers, each cold:
  h5py       h5py.File(...)[name][:] (one read of the whole dataset)
  verify     `dsview verify FILE:/name` (every chunk decoded and checked)
  mmap       a dsview mount of the dataset as a float32 view, one
             sequential pass of np.memmap slices of 64 rows
  mmap_npy   the same pass over a mount of the uint8 rows as a .npy (no
             decode): what the mount costs without gzip
  mmap_u8    the same pass over a uint8 view of the gzip dataset
             (`dtype = uint8`): the bytes h5py returns, each slice kept
             and the whole pass compared with the data byte for byte
  inproc     dsview.open(FILE, name, dtype="uint8")[...] in this process,
             no mount: the whole dataset in one read, its chunks decoded
             by the reader's threads; compared byte for byte
  verify_old, mmap_old   the same with --dsview_old (a dsview binary built
             at another commit), where set: before/after in one run
MB/s of uint8 source, and CPU seconds (h5py's process, verify's, the
mount's daemon and reader), which a shared machine disturbs less."""
import os
import resource
import subprocess
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

H, W = 128, 128
ROW = H * W * 3
LAYOUTS = {
    "rows": dict(chunks=(16, H, W, 3)),
    "rows_shuf": dict(chunks=(16, H, W, 3), shuffle=True),
    "auto": dict(chunks=True),
    "rows_fl32": dict(chunks=(16, H, W, 3), shuffle=True, fletcher32=True),
}


def make(run, layout):
    import h5py
    if layout not in LAYOUTS:
        raise SystemExit(f"h5gzip: no layout '{layout}' (layouts: {', '.join(LAYOUTS)})")
    n = max(16, run.s.mb * 1_000_000 // ROW)
    u8 = run.path("u8.npy")
    if not os.path.exists(u8):
        L.make_images(u8, n, H, W)
    x = np.load(u8, mmap_mode="r")
    h5 = run.path(f"{layout}.h5")
    with h5py.File(h5, "w") as f:
        f.create_dataset(layout, data=x, compression="gzip", compression_opts=4, **LAYOUTS[layout])
        chunks = f[layout].chunks
    ini = run.path(f"{layout}.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = {h5}:/{layout}\n")
    with open(run.path(f"{layout}_u8.ini"), "w") as f:
        f.write(f"[v]\nsource = {h5}:/{layout}\ndtype = uint8\n")
    with open(run.path("npy.ini"), "w") as f:
        f.write(f"[v]\nsource = {u8}\n")
    return types.SimpleNamespace(x=x, h5=h5, layout=layout, ini=ini, mb=n * ROW / 1e6,
                                 cleanup=lambda: os.unlink(h5),
                                 info={"rows": n, "mb": round(n * ROW / 1e6), "chunks": str(chunks)})


def cpu(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def h5py_read(run, data):
    import h5py
    t, c = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    with h5py.File(data.h5, "r") as f:
        a = f[data.layout][:]
    dt, dc = time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - c
    if not np.array_equal(a, data.x):
        raise RuntimeError(f"h5py read of {data.layout} differs from the data")
    return dt, dc


def verify(binary, data):
    t, c = time.perf_counter(), cpu(resource.RUSAGE_CHILDREN)
    subprocess.run([binary, "verify", f"{data.h5}:/{data.layout}"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t, cpu(resource.RUSAGE_CHILDREN) - c


def mmap_pass(m, data):
    a = np.memmap(m.path("v.dat"), np.float32, "r", shape=data.x.shape)
    n = data.x.shape[0]
    t, c, d = time.perf_counter(), cpu(resource.RUSAGE_SELF), m.cpu()
    for i in range(0, n, 64):
        blk = np.array(a[i:i + 64])
    dt = time.perf_counter() - t
    dc = cpu(resource.RUSAGE_SELF) - c + m.cpu() - d
    del a
    # the last block against the source, as float32 of uint8
    if not np.array_equal(blk, data.x[i:i + 64].astype(np.float32)):
        raise RuntimeError("the mount's view differs from the data")
    return dt, dc


def mmap_u8_pass(m, data):
    a = np.memmap(m.path("v.dat"), np.uint8, "r", shape=data.x.shape)
    out = np.empty(data.x.shape, np.uint8)
    n = data.x.shape[0]
    t, c, d = time.perf_counter(), cpu(resource.RUSAGE_SELF), m.cpu()
    for i in range(0, n, 64):
        out[i:i + 64] = a[i:i + 64]
    dt = time.perf_counter() - t
    dc = cpu(resource.RUSAGE_SELF) - c + m.cpu() - d
    del a
    if not np.array_equal(out, data.x):
        raise RuntimeError("the mount's uint8 view differs from the data")
    return dt, dc


def inproc_read(data):
    import dsview
    t, c = time.perf_counter(), cpu(resource.RUSAGE_SELF)
    a = dsview.open(data.h5, data.layout, dtype="uint8")
    got = a[...]
    a.reader.close()
    dt, dc = time.perf_counter() - t, cpu(resource.RUSAGE_SELF) - c
    if not np.array_equal(got, data.x):
        raise RuntimeError(f"dsview.open's read of {data.layout} differs from the data")
    return dt, dc


def old_binary(run):
    return os.path.join(ROOT, run.s.dsview_old)


def measure(run, data, peer, m, rnd):
    if peer == "h5py":
        dt, dc = h5py_read(run, data)
    elif peer.startswith("verify"):
        dt, dc = verify(old_binary(run) if peer.endswith("_old") else run.dsview, data)
    elif peer == "mmap_u8":
        dt, dc = mmap_u8_pass(m, data)
    elif peer == "inproc":
        dt, dc = inproc_read(data)
    else:
        dt, dc = mmap_pass(m, data)
    return {"mbps": data.mb / dt, "cpu_s": dc}


def mount(peer):
    def setup(run, data):
        ini = {"mmap_npy": run.path("npy.ini"),
               "mmap_u8": run.path(f"{data.layout}_u8.ini")}.get(peer, data.ini)
        if peer == "mmap_old":
            m = run.mounts.dsview(ini, binary=old_binary(run))
        else:
            m = run.mounts.dsview(ini)
        return m

    def teardown(run, m):
        run.mounts.close(m)
    return setup, teardown


def old_missing(run):
    return None if run.s.dsview_old else "no --dsview_old given"


EXPERIMENT = Experiment(
    name="h5gzip",
    doc=__doc__,
    settings=[Setting("layouts", list(LAYOUTS), "chunk layouts", quick=["rows", "auto"]),
              Setting("mb", 60, "MB of uint8 rows", quick=2),
              Setting("dsview_old", "", "another build's dsview for verify_old and mmap_old")],
    sweep="layouts",
    data=make,
    peers=[Peer("h5py", "h5py's own read"),
           Peer("verify", "dsview verify"),
           Peer("mmap", "a mount's sequential pass", *mount("mmap")),
           Peer("mmap_npy", "the same over the uint8 .npy", *mount("mmap_npy")),
           Peer("mmap_u8", "a mount's pass of a uint8 view", *mount("mmap_u8")),
           Peer("inproc", "dsview.open in this process, read whole"),
           Peer("verify_old", "--dsview_old's verify", missing=old_missing),
           Peer("mmap_old", "--dsview_old's mount", *mount("mmap_old"), missing=old_missing)],
    phases=[Phase("read", measure)],
    metrics=[Metric("mbps", "MB/s", "uint8 source bytes a second"),
             Metric("cpu_s", "CPU s", "reader + daemon (or verify) CPU seconds",
                    higher_is_better=False)],
    targets=[Target("verify", "mbps", "verify", "h5py", 2.0),
             Target("mount", "mbps", "mmap", "h5py", 2.0),
             Target("mount_u8", "mbps", "mmap_u8", "h5py", 2.0),
             Target("inproc", "mbps", "inproc", "h5py", 2.0)],
    alternate=False,
)
