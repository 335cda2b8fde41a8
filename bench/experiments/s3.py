"""Datasets in object storage over a shaped link: dsview's store from S3 against s3fs, h5py ROS3 and one GET.

A real SeaweedFS (tests/e2e/objstore.py) serves one bucket; every
reader's requests go from a network namespace (tests/e2e/netns.py) over a
veth link shaped by tc to --rate and --delay each way (tbf at the rate
alone where the kernel has no netem: the result's data says which). The
data: the read table's uint8 image rows (224x224x3, 150 KB), served as
float32 ((x/255 - mean[c]) / std[c], 600 KB a row) by
  dsv_lz4      dsview over the `dsview pack` LZ4 store, s3://, its daemon
               in the namespace; readahead GETs on (the defaults)
  dsv_lz4_1    the same with DSVIEW_NET_AHEAD_KB=0: one GET per chunk read
  dsv_hint     dsv_lz4, the shuffled reader hinting its next 2 batches
  s3fs         the materialised float32 .npy through Debian's s3fs mount
  py_ros3      h5py's ROS3 driver on the uint8 HDF5 object + numpy's
               normalisation, in the namespace
  boto3_get    one GET of the float32 object by boto3: what the link gives
each on fresh mounts (the page cache not dropped: the bytes come over
the link): sequential GB/s of float32 (8 MiB reads) and
shuffled rows/s (sorted batches of --batch rows, a pread a row, --shuf_seconds
each), with the GETs of a sequential pass; then the second epoch from the
disk cache, a fresh directory a round:
  dsv_dc_fill  dsv_lz4 with --disk-cache DIR empty: every block over the link
  dsv_local    the same store file on local disk (in the page cache)
  dsv_dcache   dsv_lz4 with the same DIR: every block read from DIR"""
import json
import os
import shutil
import subprocess
import sys
import time
import types

import numpy as np

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
BUCKET = "bench"
SIDE = 224
ROW8 = SIDE * SIDE * 3
ROW32 = ROW8 * 4
HINT_AHEAD = 2
SEQ_READ = 8 << 20
EPOCH = ("dsv_dc_fill", "dsv_local", "dsv_dcache")


def python_way(mode, url, region, n, seconds, seed, batch):
    """In the namespace: h5py's ROS3 driver on the uint8 HDF5 object,
    numpy's normalisation; prints JSON."""
    import h5py
    from objstore import KEY_ID, SECRET
    kw = dict(driver="ros3", aws_region=region.encode(), secret_id=KEY_ID.encode(),
              secret_key=SECRET.encode())
    with h5py.File(url, "r", **kw) as f:
        ds = f["x"]
        t, out = time.perf_counter(), 0
        if mode == "seq":
            step = max(1, SEQ_READ // ROW8)
            for i in range(0, n, step):
                x = ds[i:i + step].reshape(-1, SIDE, SIDE, 3)
                out += ((x / 255 - L.MEAN) / L.STD).astype(np.float32).nbytes
            print(json.dumps({"bps": out / (time.perf_counter() - t)}))
            return
        order = np.random.default_rng(seed).permutation(n)
        rows = 0
        for b in range(n // batch):
            idx = np.sort(order[b * batch:(b + 1) * batch])
            y = ((ds[idx].reshape(-1, SIDE, SIDE, 3) / 255 - L.MEAN) / L.STD).astype(np.float32)
            rows += y.shape[0]
            if time.perf_counter() - t > seconds:
                break
        print(json.dumps({"rows_s": rows / (time.perf_counter() - t)}))


def boto3_get(endpoint, key):
    """In the namespace: one GET of key, bytes/s."""
    import boto3
    from botocore.config import Config
    from objstore import KEY_ID, SECRET
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY_ID,
                      aws_secret_access_key=SECRET, region_name="us-east-1",
                      config=Config(s3={"addressing_style": "path"}))
    t = time.perf_counter()
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"]
    n = 0
    while chunk := body.read(SEQ_READ):
        n += len(chunk)
    print(json.dumps({"bps": n / (time.perf_counter() - t)}))


def in_node(node, *args):
    """This module with args, in the node, by Debian's Python (its h5py
    has the ROS3 driver; the venv's wheel has not)."""
    r = subprocess.run([*node.wrap, "/usr/bin/python3", "-m", "bench.experiments.s3",
                        *map(str, args)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def seq_file(path, skip=0):
    """Sequential bytes/s of a file in SEQ_READ pieces."""
    buf = bytearray(SEQ_READ)
    t, n = time.perf_counter(), 0
    with open(path, "rb", buffering=0) as f:
        f.seek(skip)
        while k := f.readinto(buf):
            n += k
    return n / (time.perf_counter() - t)


def shuf_file(path, n, seconds, size, skip=0, hint=False, seed=7):
    """Shuffled rows/s of float32 rows of a file: sorted batches of size
    rows of a permutation, a pread a row; with hint, the next batches
    hinted first."""
    order = np.random.default_rng(seed).permutation(n)
    nb = n // size
    batch = [np.sort(order[b * size:(b + 1) * size]) for b in range(nb)]
    fd = os.open(path, os.O_RDONLY)
    try:
        if hint:
            import dsview
            for b in range(min(HINT_AHEAD, nb)):
                dsview.hint(fd, batch[b])
        t, rows = time.perf_counter(), 0
        for b in range(nb):
            if hint and b + HINT_AHEAD < nb:
                dsview.hint(fd, batch[b + HINT_AHEAD])
            for r in batch[b]:
                if len(os.pread(fd, ROW32, skip + int(r) * ROW32)) != ROW32:
                    raise RuntimeError(f"{path}: a short read of row {r}")
            rows += len(batch[b])
            if time.perf_counter() - t > seconds:
                break
        return rows / (time.perf_counter() - t)
    finally:
        os.close(fd)


def upload(run, store):
    """The data, made and put in the bucket; (rows, the float32 .npy's header length)."""
    n = max(2 * run.s.batch, (run.s.mb << 20) // ROW8)
    u8, f32 = run.path("u8.npy"), run.path("f32.npy")
    L.make_images(u8, n, SIDE, SIDE)
    L.normalise_file(u8, f32)
    with open(f32, "rb") as f:
        fmt = np.lib.format
        header = (fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0)
                  else fmt.read_array_header_2_0)
        header(f)
        hdr = f.tell()
    subprocess.run([run.dsview, "pack", "--dataset", "x", u8, run.path("store.h5")], check=True,
                   stdout=subprocess.DEVNULL)
    import h5py
    with h5py.File(run.path("u8.h5"), "w") as f:
        f["x"] = np.load(u8, mmap_mode="r")[:].reshape(n, ROW8)
    s3 = store.client()
    s3.create_bucket(Bucket=BUCKET)
    for name in ("store.h5", "f32.npy", "u8.h5"):
        s3.upload_file(run.path(name), BUCKET, name)
        if name != "store.h5":  # kept: dsv_local reads it
            os.unlink(run.path(name))
    os.unlink(u8)
    return n, hdr


def make(run, point):
    os.environ["DSVIEW"] = run.dsview  # tests/e2e/common.py's Mount runs it
    from netns import NetnsUnavailable, Node
    from objstore import ObjectStore
    store = ObjectStore(run.work, bind="0.0.0.0")
    node = Node(0)

    def stop():
        store.stop()
        node.stop()
    try:
        node.start()
        link = node.shape(run.s.rate, run.s.delay)
    except NetnsUnavailable as e:
        stop()
        raise SystemExit(f"s3: no network namespace here ({e}); nothing measured")
    try:
        store.start()
        n, hdr = upload(run, store)
    except BaseException:
        stop()
        raise
    return types.SimpleNamespace(store=store, node=node, n=n, hdr=hdr, cleanup=stop,
                                 info={"rows": n, "mb": round(n * ROW8 / 1e6), "link": link})


def dsview_mount(run, data, *opts, source=f"s3://{BUCKET}/store.h5", **env):
    """A fresh dsview mount of the float32 view of source, the daemon in
    the node, the store's endpoint as the node reaches it."""
    from common import Mount
    ini = run.path("b.ini")
    with open(ini, "w") as f:
        f.write(f"[x]\nsource = {source}\nscale = {1/255!r}\n"
                f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
    e = data.store.env(AWS_ENDPOINT_URL=data.node.url(data.store.ports["s3"]),
                       DSVIEW_NET_RETRIES="5", DSVIEW_NET_TIMEOUT_S="20", **env)
    return Mount(ini, *opts, tmp=run.work, env=e, wrap=data.node.wrap)


class S3fsMount:
    """Debian's s3fs FUSE mount of the bucket, its daemon in the node."""

    def __init__(self, run, data):
        from objstore import KEY_ID, SECRET
        self.mp = run.path("s3fs-%d" % time.monotonic_ns())
        pw = run.path("s3fs.passwd")
        with open(pw, "w") as f:
            f.write(f"{KEY_ID}:{SECRET}\n")
        os.chmod(pw, 0o600)
        os.makedirs(self.mp)
        subprocess.run([*data.node.wrap, "s3fs", BUCKET, self.mp, "-o",
                        f"url={data.node.url(data.store.ports['s3'])},use_path_request_style,"
                        f"passwd_file={pw},endpoint=us-east-1,ro"], check=True)
        deadline = time.monotonic() + 30
        while not os.path.ismount(self.mp) and time.monotonic() < deadline:
            time.sleep(0.1)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mp], capture_output=True)


def served(run, data, peer):
    """A context: the peer's fresh mount (dsview or s3fs)."""
    if peer == "s3fs":
        return S3fsMount(run, data)
    env = {"DSVIEW_NET_AHEAD_KB": "0"} if peer == "dsv_lz4_1" else {}
    return dsview_mount(run, data, **env)


def seq(run, data, peer, m, rnd):
    ep = data.node.url(data.store.ports["s3"])
    if peer == "boto3_get":
        return {"seq_gbs": in_node(data.node, "--boto3", ep, "f32.npy")["bps"] / 1e9}
    if peer == "py_ros3":
        r = in_node(data.node, "--python", "seq", f"{ep}/{BUCKET}/u8.h5", "us-east-1", data.n, 0, 7,
                    run.s.batch)
        return {"seq_gbs": r["bps"] / 1e9}
    if peer == "s3fs":
        s = S3fsMount(run, data)
        try:
            return {"seq_gbs": seq_file(os.path.join(s.mp, "f32.npy"), data.hdr) / 1e9}
        finally:
            s.close()
    with served(run, data, peer) as mnt:
        gbs = seq_file(mnt.path("x.dat")) / 1e9
        return {"seq_gbs": gbs, "gets": float(mnt.stats()["net_gets"])}


def shuf(run, data, peer, m, rnd):
    secs = run.s.shuf_seconds
    if peer == "py_ros3":
        ep = data.node.url(data.store.ports["s3"])
        r = in_node(data.node, "--python", "shuf", f"{ep}/{BUCKET}/u8.h5", "us-east-1", data.n,
                    secs, 7 + rnd, run.s.batch)
        return {"shuf_rows": r["rows_s"]}
    if peer == "s3fs":
        s = S3fsMount(run, data)
        try:
            return {"shuf_rows": shuf_file(os.path.join(s.mp, "f32.npy"), data.n, secs,
                                           run.s.batch, data.hdr, seed=7 + rnd)}
        finally:
            s.close()
    with served(run, data, "dsv_lz4" if peer == "dsv_hint" else peer) as mnt:
        return {"shuf_rows": shuf_file(mnt.path("x.dat"), data.n, secs, run.s.batch,
                                       hint=peer == "dsv_hint", seed=7 + rnd)}


def second_epoch(run, data, peer, m, rnd):
    """dsv_dc_fill, dsv_local, dsv_dcache in turn (the order of a round):
    the fill makes the round's directory, the second epoch reads and
    removes it."""
    dc = run.path(f"dcache{rnd}")
    if peer == "dsv_local":
        with dsview_mount(run, data, source=run.path("store.h5")) as mnt:
            return {"epoch_gbs": seq_file(mnt.path("x.dat")) / 1e9}
    with dsview_mount(run, data, "--disk-cache", dc) as mnt:
        r = {"epoch_gbs": seq_file(mnt.path("x.dat")) / 1e9, "gets": float(mnt.stats()["net_gets"])}
    if peer == "dsv_dcache":
        shutil.rmtree(dc)
    return r


def tools_missing(run):
    if not shutil.which("s3fs"):
        return "s3fs missing (make deps)"
    return None


ALL = ("boto3_get", "dsv_lz4", "dsv_lz4_1", "dsv_hint", "s3fs", "py_ros3")

EXPERIMENT = Experiment(
    name="s3",
    doc=__doc__,
    settings=[Setting("rounds", 1, "rounds (the second epoch's too)"),
              Setting("mb", 256, "MiB of uint8 rows", quick=4),
              Setting("rate", "1gbit", "the link's rate (tc)"),
              Setting("delay", "1ms", "the link's delay each way (netem)"),
              Setting("shuf_seconds", 10.0, "seconds of each shuffled pass", quick=1.0),
              Setting("batch", 256, "rows a shuffled batch", quick=16)],
    data=make,
    peers=[Peer(p, p, missing=tools_missing if p == "s3fs" else None) for p in ALL + EPOCH],
    phases=[Phase("seq", seq, cold=False, peers=tuple(p for p in ALL if p != "dsv_hint")),
            Phase("shuf", shuf, cold=False, peers=tuple(p for p in ALL if p != "boto3_get")),
            Phase("epoch", second_epoch, cold=False, peers=EPOCH)],
    metrics=[Metric("seq_gbs", "GB/s", "cold sequential, float32 out"),
             Metric("shuf_rows", "rows/s", "cold shuffled, a pread a row"),
             Metric("epoch_gbs", "GB/s", "sequential, disk-cache epochs"),
             Metric("gets", "GETs", "GETs of the sequential pass", higher_is_better=False)],
    targets=[Target("cold sequential vs s3fs", "seq_gbs", "dsv_lz4", "s3fs", 3.0),
             Target("shuffled, hinted, vs py_ros3", "shuf_rows", "dsv_hint", "py_ros3", 5.0),
             Target("second epoch vs local disk", "epoch_gbs", "dsv_dcache", "dsv_local", 0.9),
             Target("readahead GETs on vs off", "seq_gbs", "dsv_lz4", "dsv_lz4_1", None)],
    alternate=False,
)


if __name__ == "__main__":  # the in-namespace readers (in_node)
    if sys.argv[1] == "--python":
        mode, url, region, n, secs, seed, batch = sys.argv[2:9]
        python_way(mode, url, region, int(n), float(secs), int(seed), int(batch))
    elif sys.argv[1] == "--boto3":
        boto3_get(sys.argv[2], sys.argv[3])
