"""Two epochs through one mount: the second read ahead with the store evicted.

The photographs (python3-skimage, in 224x224x3 tiles, --rows rows) packed
with `dsview pack`'s defaults, mounted once with --gpu off (a cold start:
page cache dropped, a fresh daemon); one reader of 16 MiB read()s from
start to end, then the store's and the mount's pages evicted
(posix_fadvise) and the same pass again: the next epoch of a data set
larger than the page cache. GB/s of float32 of each epoch and the chunks
the readahead made in each. Peers: this build, and old (--dsview_old) on
the same store."""
import os
import subprocess
import types

from bench import benchlib as L
from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target


def make(run, point):
    u8, store = run.path("u8.npy"), run.path("v.h5")
    L.photo_rows(u8, run.s.rows)
    subprocess.run([run.dsview, "pack", "--dataset", "x", u8, store], check=True,
                   capture_output=True)
    with open(run.path("v.ini"), "w") as f:
        f.write(f"[v]\nsource = v.h5:/x\nscale = {1 / 255!r}\n")
    return types.SimpleNamespace(store=store, ini=run.path("v.ini"),
                                 info={"rows": run.s.rows,
                                       "mb": round(run.s.rows * 224 * 224 * 3 / 1e6)})


def setup(peer):
    def mount(run, data):
        binary = os.path.join(ROOT, run.s.dsview_old) if peer == "old" else None
        return run.mounts.dsview(data.ini, opts=("--gpu", "off"), binary=binary)
    return mount


def teardown(run, m):
    run.mounts.close(m)


def two_epochs(run, data, peer, m, rnd):
    f = m.path("v.dat")
    e1 = L.read_all(f)
    p1 = m.stats()["readahead_chunks"]
    L.evict(data.store)
    L.evict(f)
    e2 = L.read_all(f)
    return {"epoch1_gbs": e1, "epoch2_gbs": e2, "ahead1": p1,
            "ahead2": m.stats()["readahead_chunks"] - p1}


EXPERIMENT = Experiment(
    name="epoch",
    doc=__doc__,
    settings=[Setting("rows", 2048, "rows of photograph tiles (2048: 308 MB uint8)", quick=32),
              Setting("dsview_old", "", "another build's dsview, the old peer")],
    data=make,
    peers=[Peer("dsview", "this build", setup("dsview"), teardown),
           Peer("old", "--dsview_old", setup("old"), teardown,
                missing=lambda run: None if run.s.dsview_old else "no --dsview_old given")],
    phases=[Phase("epochs", two_epochs)],
    metrics=[Metric("epoch1_gbs", "GB/s", "first epoch, cold"),
             Metric("epoch2_gbs", "GB/s", "second epoch, store evicted"),
             Metric("ahead1", "chunks", "chunks read ahead, epoch 1"),
             Metric("ahead2", "chunks", "chunks read ahead, epoch 2")],
    targets=[Target("second epoch, this build vs old", "epoch2_gbs", "dsview", "old", None)],
)
