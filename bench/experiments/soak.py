"""A long run: shuffled windows of many small sources; the daemon's RSS and descriptors over time.

--sources small .npy files (float32, --channels x --samples each; every
value distinct and known) behind one windowed view (window --window,
stride --window / 2 along time, so every source gives channels x n
windows). For --minutes (the whole run, not a round), epochs of one
permutation each (seeded by the epoch) split between --readers forked
readers, reader k taking batches k, k + readers, ... of --batch windows,
as DataLoader's workers do; each hints its next batch (dsview.hint)
before reading one, sorted, through a np.memmap of the view, and every
100th batch of the epoch is checked exact against the windows numpy
cuts from the sources. Every --sample_s seconds the daemon's VmRSS and
its open descriptors (/proc/PID/status, /proc/PID/fd) are sampled; the
samples (seconds, epoch, RSS MiB, descriptors) are the result's series.

Flat is judged at the end of the run against the sample taken when
epoch 1 ended (the sources all opened, the cache filled once):
rss_growth = last RSS / that RSS and fd_growth = last descriptors /
those, each held to <= 1.1; fail_batches (a reader's error, a batch not
exact) is held to 0. Without a second epoch nothing is flat-judged:
the figures are the ratios of the last sample to the first."""
import os
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target
from bench.mounts import dsview_peer

CHECK_EVERY = 100


def source(i, channels, samples):
    """Source i's values: distinct across sources and exact in float32."""
    base = np.arange(channels * samples, dtype=np.float64).reshape(channels, samples)
    return ((base + i * channels * samples) % (1 << 24)).astype(np.float32)


def make(run, point):
    s = run.s
    d = run.path("src")
    os.makedirs(d)
    for i in range(s.sources):
        np.save(os.path.join(d, f"rec{i:06d}.npy"), source(i, s.channels, s.samples))
    stride = max(1, s.window // 2)
    ini = run.path("soak.ini")
    with open(ini, "w") as f:
        f.write(f"[v]\nsource = {d}/rec*.npy\nwindow = {s.window}\nstride = {stride}\n")
    per_row = (s.samples - s.window) // stride + 1
    n = s.sources * s.channels * per_row
    return types.SimpleNamespace(
        ini=ini, n=n, per_row=per_row, stride=stride, shape=(n, s.window), series=[],
        series_keys=["seconds", "epoch", "daemon VmRSS (MiB)", "daemon descriptors"],
        info={"sources": s.sources, "windows": n, "window_bytes": s.window * 4,
              "mb": round(s.sources * s.channels * s.samples * 4 / 1e6, 1)})


def expected(run, data, idx):
    """The windows idx as numpy cuts them from the sources' values."""
    s = run.s
    per_src = s.channels * data.per_row
    out = np.empty((len(idx), s.window), np.float32)
    for k, i in enumerate(idx):
        src, rest = divmod(int(i), per_src)
        row, w = divmod(rest, data.per_row)
        out[k] = source(src, s.channels, s.samples)[row, w * data.stride:w * data.stride + s.window]
    return out


def reader(run, data, path, order, k, wfd):
    """A forked reader's share of one epoch; writes 'rows checked fails
    first-error' to wfd and never returns."""
    import dsview  # imported by the parent already: forked readers share it
    rows = checked = fails = 0
    why = ""
    try:
        a = np.memmap(path, np.float32, "r", shape=data.shape)
        fd = os.open(path, os.O_RDONLY)
        mine = list(range(k, len(order) // run.s.batch, run.s.readers))
        batch = lambda b: np.sort(order[b * run.s.batch:(b + 1) * run.s.batch])  # noqa: E731
        if mine:
            dsview.hint(fd, batch(mine[0]))
        for j, b in enumerate(mine):
            if j + 1 < len(mine):
                dsview.hint(fd, batch(mine[j + 1]))
            idx = batch(b)
            got = np.array(a[idx])
            rows += len(idx)
            if b % CHECK_EVERY == 0:
                checked += 1
                if not np.array_equal(got, expected(run, data, idx)):
                    fails += 1
                    why = why or f"batch {b}: not the windows numpy cuts"
    except Exception as e:  # noqa: BLE001 (reported to the parent, counted)
        fails += 1
        why = why or f"{type(e).__name__}: {e}"
    os.write(wfd, f"{rows} {checked} {fails} {why}".replace("\n", " ").encode()[:4000])
    os._exit(0)


def sample(pid, t0, epoch):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    return [round(time.perf_counter() - t0, 1), epoch, L.proc_kb(pid, "VmRSS") / 1024, fds]


def one_epoch(run, data, m, epoch, t0, series):
    """Forks the readers for epoch, samples the daemon until they end;
    (rows, checked, fails, first error)."""
    order = np.random.default_rng(epoch).permutation(data.n)
    path = m.path("v.dat")
    kids = []
    for k in range(run.s.readers):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            reader(run, data, path, order, k, wfd)
        os.close(wfd)
        kids.append((pid, rfd))
    live, next_at = {p for p, _ in kids}, time.perf_counter()
    while live:
        if time.perf_counter() >= next_at:
            series.append(sample(m.pid, t0, epoch))
            next_at += run.s.sample_s
        time.sleep(0.05)
        live = {p for p in live if os.waitpid(p, os.WNOHANG)[0] == 0}
    total = [0, 0, 0, ""]
    for _, rfd in kids:
        with os.fdopen(rfd) as f:
            parts = f.read().split(" ", 3) + [""]
        if len(parts) < 4 or not parts[0].isdigit():
            parts = ["0", "0", "1", "a reader wrote nothing"]
        for j in range(3):
            total[j] += int(parts[j])
        total[3] = total[3] or parts[3].strip()
    return total


def measure(run, data, peer, m, rnd):
    import dsview  # noqa: F401 (once, before the readers fork)
    t0 = time.perf_counter()
    series, ends = data.series, []
    rows = checked = fails = epoch = 0
    while True:
        epoch += 1
        r, c, f, why = one_epoch(run, data, m, epoch, t0, series)
        rows, checked, fails = rows + r, checked + c, fails + f
        if why:
            print(f"  epoch {epoch}: {why}", flush=True)
        series.append(sample(m.pid, t0, epoch))
        ends.append(series[-1])
        if time.perf_counter() - t0 >= run.s.minutes * 60:
            break
    first = ends[0] if len(ends) > 1 else series[0]
    last = series[-1]
    return {"epochs": epoch, "rows_s": rows / (time.perf_counter() - t0), "checked": checked,
            "fail_batches": fails, "rss_epoch1_mib": first[2], "rss_last_mib": last[2],
            "rss_growth": last[2] / first[2], "fds_epoch1": first[3], "fds_last": last[3],
            "fd_growth": last[3] / first[3]}


def peer():
    setup, teardown = dsview_peer("ini")
    return Peer("dsv", "a dsview daemon serving the windowed view", setup, teardown)


EXPERIMENT = Experiment(
    name="soak",
    doc=__doc__,
    settings=[Setting("rounds", 1, "rounds (each --minutes long)"),
              Setting("minutes", 30.0, "how long the run reads", quick=0.05),
              Setting("sources", 10000, "small .npy sources", quick=200),
              Setting("channels", 4, "rows of a source"),
              Setting("samples", 512, "samples of a source row"),
              Setting("window", 64, "samples a window (stride half that)"),
              Setting("readers", 4, "forked readers"),
              Setting("batch", 256, "windows a batch"),
              Setting("sample_s", 3.0, "seconds between samples of the daemon", quick=0.5)],
    data=make,
    peers=[peer()],
    phases=[Phase("soak", measure)],
    metrics=[Metric("rows_s", "windows/s", "all readers together, over the run"),
             Metric("epochs", "", "epochs read"),
             Metric("checked", "", "batches checked exact"),
             Metric("fail_batches", "", "errors and batches not exact", False),
             Metric("rss_epoch1_mib", "MiB", "daemon VmRSS when epoch 1 ended", False),
             Metric("rss_last_mib", "MiB", "daemon VmRSS at the end", False),
             Metric("rss_growth", "x", "last RSS / epoch 1's", False),
             Metric("fds_epoch1", "", "daemon descriptors when epoch 1 ended", False),
             Metric("fds_last", "", "daemon descriptors at the end", False),
             Metric("fd_growth", "x", "last descriptors / epoch 1's", False)],
    targets=[Target("RSS flat after epoch 1", "rss_growth", "dsv", None, 1.1, "<="),
             Target("descriptors flat after epoch 1", "fd_growth", "dsv", None, 1.1, "<="),
             Target("no error", "fail_batches", "dsv", None, 0, "<=")],
)
