"""Helpers shared by the experiments: page-cache handling, /proc readings,
page-cache residency, the sequential and shuffled readers, the bench's
image rows and the null FUSE peer. The runner (harness.py) sets SETTLE
and PREFAULT_GB from a run's settings."""
import gc
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "e2e"))
from pagecache import resident  # noqa: E402,F401 (the benches' one home for it)

SHUF_SECONDS = 15
SETTLE = 3.0  # seconds after dropping the page cache
PREFAULT_GB = 6.0  # memory touched and freed after dropping it
H, W = 224, 224  # bench.py's rows: 150 KB uint8, 600 KB float32
MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
BATCH = 256


def proc_kb(pid, key):
    """A /proc/PID/status value in kB (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def proc_cpu(pid):
    """utime + stime of a process, in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def proc_read_bytes(pid="self"):
    """read_bytes of /proc/PID/io: bytes the process (all its threads) made
    the kernel fetch from storage (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def raise_readahead(mp, kb=1024):
    """read_ahead_kb = 1024 on the null mount's bdi: FUSE's largest request,
    the best window for a filesystem that does not read ahead itself (dsview
    does, and sets 128 KiB, which suits shuffled memmap rows)."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            if fields[4] == mp:
                try:
                    with open(f"/sys/class/bdi/{fields[2]}/read_ahead_kb", "w") as g:
                        g.write(f"{kb}\n")
                except OSError:
                    pass


def evict(path):
    """Drops one file's pages from the page cache (written back first), so
    the next read of it comes from the disk; the rest of the cache stays."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def drop_caches():
    """Empties the page cache, waits SETTLE seconds, then touches and frees
    PREFAULT_GB of memory. On a VM whose balloon reports free pages to the
    host (this machine class), the first touch of a page freed seconds ago
    costs the host a fault: about 2.5 s per GB here, paid by whoever writes
    the page first (the FUSE daemon copying a reply, the kernel reading a
    file). Without this, a peer's figure depends on what the peer before it
    freed and when; with it, every pass starts from a cold page cache over
    memory that is backed, as on a machine without a balloon. A cyclic
    garbage collection first: a memmap kept alive by a reference cycle (a
    class defined in a function, a closure) stays mapped, and the kernel
    does not drop mapped pages."""
    gc.collect()
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    time.sleep(SETTLE)
    if PREFAULT_GB > 0:
        a = np.ones(int(PREFAULT_GB * 2**30), np.uint8)
        del a
    return True


def seq(arr, step=64):
    t = time.perf_counter()
    n = 0
    for i in range(0, arr.shape[0], step):
        n += np.array(arr[i:i + step]).nbytes
    return n / (time.perf_counter() - t)


def read_all(path):
    """GB/s of one reader reading path start to end in 16 MiB read()s."""
    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(16 << 20)
            if not b:
                break
            n += len(b)
    return n / (time.perf_counter() - t) / 1e9


def shuffled(get, n, batches, seed=7, batch=BATCH):
    """Rows/s and rows read over sorted batches of `batch` rows of a
    permutation (at least two batches, then until `batches` or SHUF_SECONDS)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    t = time.perf_counter()
    rows = 0
    for b in range(batches):
        idx = np.sort(order[b * batch:(b + 1) * batch])
        _ = get(idx)
        rows += len(idx)
        if b >= 1 and time.perf_counter() - t > SHUF_SECONDS:
            break
    return rows / (time.perf_counter() - t), rows


def make_images(path, n, h, w, seed=0, block_bytes=64 << 20):
    """The bench's uint8 HWC rows (gradients + noise, LZ4 ratio ~1.06) into
    a new .npy at path, written in blocks."""
    x = np.lib.format.open_memmap(path, "w+", np.uint8, (n, h, w, 3))
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    grad = xx * 0.7 + yy * 0.4
    fac = np.array([0.6, 0.8, 1.0])
    step = max(1, block_bytes // (h * w * 3))
    for i in range(0, n, step):
        k = min(step, n - i)
        base = (grad[None] + np.arange(i, i + k)[:, None, None]) % 256
        blk = (base[..., None] * fac).astype(np.uint8)
        blk += rng.integers(0, 3, blk.shape, dtype=np.uint8)
        x[i:i + k] = blk
    x.flush()
    del x


def photo_rows(path, n, side=224):
    """python3-skimage's colour photographs cut into side x side x 3 tiles,
    repeated to n rows, into a new .npy at path; returns the tiles' count."""
    from skimage import data
    tiles = []
    for name in ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
                 "stereo_motorcycle", "retina", "rocket"):
        im = getattr(data, name)()
        for im in im[:2] if isinstance(im, tuple) else (im,):  # the motorcycle: left, right
            im = im[..., :3]
            for y in range(0, im.shape[0] - side + 1, side):
                for x in range(0, im.shape[1] - side + 1, side):
                    tiles.append(im[y:y + side, x:x + side])
    t = np.stack(tiles)
    np.save(path, t[np.arange(n) % len(t)])
    return len(t)


def store_args(spec):
    """`dsview pack`'s arguments for a store spec: a block size ("64K":
    --block-size) or CODEC[:LEVEL][@CHUNK_SIZE]."""
    if spec[0].isdigit():
        return ["--block-size", spec]
    codec, _, chunk = spec.partition("@")
    codec, _, level = codec.partition(":")
    return (["--codec", codec] + (["--level", level] if level else [])
            + (["--chunk-size", chunk] if chunk else []))


def safe_name(spec):
    """spec with every character but letters and digits as '_'."""
    import re
    return re.sub(r"[^A-Za-z0-9]", "_", spec)


def normalise_file(src, dst, block_bytes=64 << 20):
    """dst: the float32 .npy of (src/255 - MEAN) / STD, as dsview serves it."""
    x = np.load(src, mmap_mode="r")
    f32 = np.lib.format.open_memmap(dst, "w+", np.float32, x.shape)
    step = max(1, block_bytes // (x[0].nbytes * 8))
    for i in range(0, x.shape[0], step):
        f32[i:i + step] = ((x[i:i + step].astype(np.float64) / 255 - MEAN) / STD).astype(np.float32)
    f32.flush()
    del f32, x


def cache_fully(path, read_pass, tries=3):
    """Before a warm pass: while path is not wholly in the page cache, run
    read_pass() (an untimed sequential pass), at most `tries` times. Returns
    the resident fraction the timed warm pass then starts from."""
    frac = resident(path)
    for _ in range(tries):
        if frac >= 0.999:
            break
        read_pass()
        frac = resident(path)
    return frac


def mount_null(nullfs, size, mnt):
    """Starts bench/nullfs serving data.dat of size bytes at mnt and waits
    for it; read_ahead_kb raised as dsview does for its own mounts. Returns
    the process: terminate() and wait() unmount it."""
    os.makedirs(mnt, exist_ok=True)  # dsview mount creates it; nullfs does not
    proc = subprocess.Popen([nullfs, str(size), mnt])
    for _ in range(500):
        if os.path.exists(os.path.join(mnt, "data.dat")):
            raise_readahead(mnt)
            return proc
        time.sleep(0.02)
    proc.terminate()
    proc.wait()
    raise RuntimeError(f"data.dat did not appear under {mnt}")


def bytes_ahead(st):
    """The bytes a daemon's counters (/.stats.json, st) say it stored ahead
    of its readers: by the readahead and for hints. Builds before the two
    were counted apart had one counter, bytes_pushed, which A/B runs
    against them still read."""
    if "bytes_readahead" in st:
        return st["bytes_readahead"] + st["bytes_hinted"]
    return st.get("bytes_pushed", 0)


def daemon_pid(mnt):
    """The pid of the dsview daemon serving mnt (its .stats.json)."""
    with open(os.path.join(mnt, ".stats.json")) as f:
        return json.load(f)["pid"]


def shuffled_rows(arr, batches, seed, batch=BATCH):
    """shuffled() over arr's rows, each batch fancy-indexed into one
    contiguous array: (rows/s, rows read)."""
    return shuffled(lambda idx: np.asarray(arr[idx]), arr.shape[0], batches, seed=seed,
                    batch=batch)

