"""make bench-s3: datasets in object storage, side by side in one run.

A real SeaweedFS (tests/e2e/objstore.py) serves one bucket; every reader's
requests go from a network namespace (tests/e2e/netns.py) over a veth link
shaped by tc netem to S3_RATE (1gbit) and S3_DELAY (1ms) each way, to
stand for a datacenter network (tbf at S3_RATE alone where the kernel has
no netem: the line "link:" says which). The data: bench.py's uint8 image rows
(224x224x3, 150 KB; S3_MB MiB of them, default 256), served as float32
((x/255 - mean[c]) / std[c], 600 KB a row) by

  dsv_lz4    dsview over the `dsview pack` LZ4 store, s3://; its daemon in
             the namespace; readahead GETs on (the defaults)
  dsv_lz4_1  the same with DSVIEW_NET_AHEAD_KB=0: one GET per chunk read,
             what dsview did before its readahead GETs
  dsv_hint   dsv_lz4, the shuffled reader hinting its next 2 batches
             (dsview.hint)
  s3fs       the materialised float32 .npy through Debian's s3fs FUSE
             mount (its daemon in the namespace), read as a file
  py_ros3    the Python way: h5py (Debian's, its HDF5 built with the ROS3
             driver: ranged GETs, SigV4) reading the uint8 HDF5 file, then
             numpy's normalisation; in the namespace (Debian has no
             python3-s3fs, so no fsspec way to S3 is measured)
  boto3_get  one GET of the float32 object by boto3: what the link gives

Cold sequential GB/s of float32 output (each mount fresh) and shuffled
rows/s (batches of 256 rows of a permutation, sorted, for S3_SHUF_SECONDS
each, default 10).

A second epoch from the disk cache, sequential GB/s of the same float32
view, S3_DC_ROUNDS interleaved rounds (default 3), medians; per round a
fresh DIR and three fresh mounts (nothing in the chunk cache or the
mount's page cache), their daemons in the namespace:

  dsv_dc_fill  dsv_lz4 with --disk-cache DIR empty: the first epoch,
               every block fetched over the link and written to DIR
  dsv_local    the same store file on local disk (in the page cache, as
               DIR's files are)
  dsv_dcache   dsv_lz4 with the same DIR: the second epoch, every block
               read from DIR (the open's HEAD alone goes to the server)

Prints the ratios against the targets: cold sequential dsv_lz4 >= 3x
s3fs; shuffled dsv_hint >= 5x py_ros3; second epoch dsv_dcache >= 0.9x
dsv_local.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "tests", "e2e"), os.path.join(ROOT, "python")]
os.environ.setdefault("DSVIEW", os.path.join(ROOT, "build", "dsview"))

import benchlib as L  # noqa: E402
from common import Mount  # noqa: E402
from netns import NetnsUnavailable, Node  # noqa: E402
from objstore import KEY_ID, SECRET, ObjectStore  # noqa: E402

MB = int(os.environ.get("S3_MB", "256"))
RATE = os.environ.get("S3_RATE", "1gbit")
DELAY = os.environ.get("S3_DELAY", "1ms")
SHUF_SECONDS = float(os.environ.get("S3_SHUF_SECONDS", "10"))
DC_ROUNDS = int(os.environ.get("S3_DC_ROUNDS", "3"))
BUCKET = "bench"
SIDE = 224
ROW8 = SIDE * SIDE * 3
ROW32 = ROW8 * 4
HINT_AHEAD = 2
SEQ_READ = 8 << 20


def python_way(mode, url, region, n, seconds, seed):
    """Runs in the namespace (a child of this script): h5py's ROS3 driver
    on the uint8 HDF5 object, numpy's normalisation; prints JSON."""
    import h5py
    kw = dict(driver="ros3", aws_region=region.encode(), secret_id=KEY_ID.encode(),
              secret_key=SECRET.encode())
    with h5py.File(url, "r", **kw) as f:
        ds = f["x"]
        t, out = time.perf_counter(), 0
        if mode == "seq":
            step = max(1, SEQ_READ // ROW8)
            for i in range(0, n, step):
                x = ds[i:i + step].reshape(-1, SIDE, SIDE, 3)
                y = ((x / 255 - L.MEAN) / L.STD).astype(np.float32)
                out += y.nbytes
            print(json.dumps({"bps": out / (time.perf_counter() - t)}))
            return
        order = np.random.default_rng(seed).permutation(n)
        rows = 0
        for b in range(n // L.BATCH):
            idx = np.sort(order[b * L.BATCH:(b + 1) * L.BATCH])
            y = ((ds[idx].reshape(-1, SIDE, SIDE, 3) / 255 - L.MEAN) / L.STD).astype(np.float32)
            rows += y.shape[0]
            if time.perf_counter() - t > seconds:
                break
        print(json.dumps({"rows_s": rows / (time.perf_counter() - t)}))


def boto3_get(endpoint, key):
    """Runs in the namespace: one GET of key, bytes/s."""
    import boto3
    from botocore.config import Config
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
    """This script with args, in the node, by Debian's Python (its h5py
    has the ROS3 driver; the venv's wheel has not)."""
    r = subprocess.run([*node.wrap, "/usr/bin/python3", __file__, *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def seq_file(path, skip=0):
    """Sequential bytes/s of a file, read in SEQ_READ pieces (cold when
    its mount is fresh)."""
    buf = bytearray(SEQ_READ)
    t, n = time.perf_counter(), 0
    with open(path, "rb", buffering=0) as f:
        f.seek(skip)
        while k := f.readinto(buf):
            n += k
    return n / (time.perf_counter() - t)


def shuf_file(path, n, skip=0, hint=False, seed=7):
    """Shuffled rows/s of float32 rows of a file: sorted batches of a
    permutation, each row one pread; with hint, the next HINT_AHEAD
    batches hinted to dsview first."""
    order = np.random.default_rng(seed).permutation(n)
    nb = n // L.BATCH
    batch = [np.sort(order[b * L.BATCH:(b + 1) * L.BATCH]) for b in range(nb)]
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
                assert len(os.pread(fd, ROW32, skip + int(r) * ROW32)) == ROW32
            rows += len(batch[b])
            if time.perf_counter() - t > SHUF_SECONDS:
                break
        return rows / (time.perf_counter() - t)
    finally:
        os.close(fd)


class S3fsMount:
    """Debian's s3fs FUSE mount of the bucket, its daemon in the node."""

    def __init__(self, node, store, tmp):
        self.node, self.mp = node, os.path.join(tmp, "s3fs-%d" % time.monotonic_ns())
        self.pw = os.path.join(tmp, "s3fs.passwd")
        with open(self.pw, "w") as f:
            f.write(f"{KEY_ID}:{SECRET}\n")
        os.chmod(self.pw, 0o600)
        self.url = node.url(store.ports["s3"])

    def __enter__(self):
        os.makedirs(self.mp)
        subprocess.run([*self.node.wrap, "s3fs", BUCKET, self.mp, "-o",
                        f"url={self.url},use_path_request_style,passwd_file={self.pw},"
                        "endpoint=us-east-1,ro"], check=True)
        deadline = time.monotonic() + 30
        while not os.path.ismount(self.mp) and time.monotonic() < deadline:
            time.sleep(0.1)
        return self

    def __exit__(self, *exc):
        subprocess.run(["fusermount3", "-u", self.mp], capture_output=True)
        return False


def prepare(tmp, store):
    n = max(2 * L.BATCH, (MB << 20) // ROW8)
    u8 = os.path.join(tmp, "u8.npy")
    L.make_images(u8, n, SIDE, SIDE)
    L.normalise_file(u8, os.path.join(tmp, "f32.npy"))
    with open(os.path.join(tmp, "f32.npy"), "rb") as f:  # its header's length
        fmt = np.lib.format
        header = (fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0)
                  else fmt.read_array_header_2_0)
        header(f)
        hdr = f.tell()
    subprocess.run([os.environ["DSVIEW"], "pack", "--dataset", "x", u8,
                    os.path.join(tmp, "store.h5")], check=True, stdout=subprocess.DEVNULL)
    import h5py
    with h5py.File(os.path.join(tmp, "u8.h5"), "w") as f:
        f["x"] = np.load(u8, mmap_mode="r")[:].reshape(n, ROW8)
    s3 = store.client()
    s3.create_bucket(Bucket=BUCKET)
    for name in ("store.h5", "f32.npy", "u8.h5"):
        s3.upload_file(os.path.join(tmp, name), BUCKET, name)
        if name != "store.h5":  # kept: dsv_local reads it
            os.unlink(os.path.join(tmp, name))
    os.unlink(u8)
    return n, hdr


def dsview_mount(node, store, tmp, *opts, source=f"s3://{BUCKET}/store.h5", **env):
    """A fresh dsview mount of the float32 view of source, the daemon in
    the node, the store's endpoint as the node reaches it."""
    ini = os.path.join(tmp, "b.ini")
    with open(ini, "w") as f:
        f.write(f"[x]\nsource = {source}\nscale = {1/255!r}\n"
                f"mean = 0.485 0.456 0.406\nstd = 0.229 0.224 0.225\n")
    e = store.env(AWS_ENDPOINT_URL=node.url(store.ports["s3"]), DSVIEW_NET_RETRIES="5",
                  DSVIEW_NET_TIMEOUT_S="20", **env)
    return Mount(ini, *opts, tmp=tmp, env=e, wrap=node.wrap)


def disk_cache_rounds(node, store, tmp):
    """The second epoch's rounds (the opening comment): sequential bytes/s
    of each peer a round, and the GETs of each dsv_dcache pass."""
    res = {"dsv_dc_fill": [], "dsv_local": [], "dsv_dcache": [], "dcache_gets": []}
    local = os.path.join(tmp, "store.h5")
    for r in range(DC_ROUNDS):
        dc = os.path.join(tmp, f"dcache{r}")
        with dsview_mount(node, store, tmp, "--disk-cache", dc) as m:
            res["dsv_dc_fill"].append(seq_file(m.path("x.dat")))
        with dsview_mount(node, store, tmp, source=local) as m:
            res["dsv_local"].append(seq_file(m.path("x.dat")))
        with dsview_mount(node, store, tmp, "--disk-cache", dc) as m:
            res["dsv_dcache"].append(seq_file(m.path("x.dat")))
            res["dcache_gets"].append(m.stats()["net_gets"])
        shutil.rmtree(dc)
    return res


def measure(node, store, tmp, n, hdr):
    res = {}
    ep = node.url(store.ports["s3"])
    res["boto3_get"] = {"seq": in_node(node, "--boto3", ep, "f32.npy")["bps"]}
    for peer, env in (("dsv_lz4", {}), ("dsv_lz4_1", {"DSVIEW_NET_AHEAD_KB": "0"})):
        with dsview_mount(node, store, tmp, **env) as m:
            res[peer] = {"seq": seq_file(m.path("x.dat")), "gets": m.stats()["net_gets"]}
        with dsview_mount(node, store, tmp, **env) as m:
            res[peer]["shuf"] = shuf_file(m.path("x.dat"), n)
    with dsview_mount(node, store, tmp) as m:
        res["dsv_hint"] = {"shuf": shuf_file(m.path("x.dat"), n, hint=True)}
    with S3fsMount(node, store, tmp) as s:
        res["s3fs"] = {"seq": seq_file(os.path.join(s.mp, "f32.npy"), hdr)}
    with S3fsMount(node, store, tmp) as s:
        res["s3fs"]["shuf"] = shuf_file(os.path.join(s.mp, "f32.npy"), n, hdr)
    url = f"{ep}/{BUCKET}/u8.h5"
    res["py_ros3"] = {"seq": in_node(node, "--python", "seq", url, "us-east-1", n, 0, 7)["bps"],
                      "shuf": in_node(node, "--python", "shuf", url, "us-east-1", n,
                                      SHUF_SECONDS, 7)["rows_s"]}
    res["second_epoch"] = disk_cache_rounds(node, store, tmp)
    return res


def report(res, n, link):
    print(f"\nS3_MB={MB} ({n} rows of {ROW32} B float32), link: {link}, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'peer':<11} {'cold seq GB/s':>14} {'shuffled rows/s':>16}")
    for peer, r in res.items():
        if peer == "second_epoch":
            continue
        seq = f"{r['seq'] / 1e9:.3f}" if "seq" in r else "-"
        shuf = f"{r['shuf']:.0f}" if "shuf" in r else "-"
        print(f"{peer:<11} {seq:>14} {shuf:>16}")
    e = res["second_epoch"]
    print(f"second epoch, sequential GB/s, medians of {DC_ROUNDS} interleaved rounds:")
    for peer in ("dsv_dc_fill", "dsv_local", "dsv_dcache"):
        print(f"{peer:<11} {statistics.median(e[peer]) / 1e9:>14.3f}   per round "
              + ", ".join(f"{v / 1e9:.3f}" for v in e[peer]))
    d, s, p = res["dsv_lz4"], res["s3fs"], res["py_ros3"]
    print(f"cold sequential: dsv_lz4 / s3fs {d['seq'] / s['seq']:.2f}x (target >= 3x); "
          f"dsv_lz4 / dsv_lz4_1 {d['seq'] / res['dsv_lz4_1']['seq']:.2f}x; "
          f"dsv_lz4 / boto3_get {d['seq'] / res['boto3_get']['seq']:.2f}x")
    print(f"shuffled: dsv_hint / py_ros3 {res['dsv_hint']['shuf'] / p['shuf']:.2f}x "
          f"(target >= 5x); dsv_lz4 / py_ros3 {d['shuf'] / p['shuf']:.2f}x")
    rounds = [c / loc for c, loc in zip(e["dsv_dcache"], e["dsv_local"])]
    print(f"second epoch: dsv_dcache / dsv_local "
          f"{statistics.median(e['dsv_dcache']) / statistics.median(e['dsv_local']):.2f}x "
          f"(target >= 0.9x; per round {', '.join(f'{x:.2f}' for x in rounds)})")
    print(f"GETs of one cold pass: dsv_lz4 {d['gets']}, dsv_lz4_1 {res['dsv_lz4_1']['gets']}; "
          f"of a dsv_dcache pass: {', '.join(map(str, e['dcache_gets']))}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--python":
        mode, url, region, n, secs, seed = sys.argv[2:8]
        return python_way(mode, url, region, int(n), float(secs), int(seed))
    if len(sys.argv) > 1 and sys.argv[1] == "--boto3":
        return boto3_get(sys.argv[2], sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="dsv-s3-bench-")
    store = ObjectStore(tmp, bind="0.0.0.0")
    node = Node(0)
    try:
        try:
            node.start()
            link = node.shape(RATE, DELAY)
        except NetnsUnavailable as e:
            print(f"bench-s3: no network namespace here ({e}); nothing measured")
            return 0
        store.start()
        n, hdr = prepare(tmp, store)
        res = measure(node, store, tmp, n, hdr)
        report(res, n, link)
        if os.environ.get("S3_JSON"):
            with open(os.environ["S3_JSON"], "w") as f:
                json.dump(res, f, indent=1)
    finally:
        store.stop()
        node.stop()
        L.remove_work(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
