"""The mount's tree at scale: mount, ls -R and a walk of many tiny HDF5 datasets.

An HDF5 file of --datasets tiny datasets in --groups groups, mounted
zero-config, so the tree has one directory per group and three files per
dataset:
  mount_s  `dsview mount FILE MNT`, which returns once the mount answers
           (the tree is built before that)
  ls_s     `ls -R MNT`: one readdir pass over every directory
  walk_s   os.walk plus an lstat of every entry: one lookup per file
Peers: dsview, and old (--dsview_old, another build) on the same file.
The file is kept in --workdir and reused by later runs (not cold: the
file's pages stay cached, as in the runs this replaced)."""
import os
import resource
import subprocess
import time
import types

import numpy as np

from bench.harness import ROOT, Experiment, Metric, Peer, Phase, Setting, Target


def make_file(path, n, groups):
    if os.path.exists(path):
        return
    import h5py
    tmp = path + ".tmp"
    row = np.arange(4, dtype=np.uint8)
    with h5py.File(tmp, "w", libver="latest") as f:
        per = -(-n // groups)
        for g in range(groups):
            grp = f.create_group(f"g{g:04d}")
            for i in range(g * per, min(n, (g + 1) * per)):
                grp.create_dataset(f"d{i:07d}", data=row)
    os.rename(tmp, path)


def more_files(n):
    """Every dataset is a source with its own descriptor: the mount needs
    more than the usual 1024 (raising the hard limit needs root)."""
    want = n + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            raise SystemExit(f"tree: {n} datasets need {want} file descriptors, and the hard "
                             f"limit is {hard}: raise it (prlimit, ulimit -Hn) or --datasets")


def make(run, point):
    n, groups = run.s.datasets, run.s.groups
    more_files(n)
    h5 = os.path.join(run.s.workdir, f"dsview-treefile-{n}x{groups}.h5")
    make_file(h5, n, groups)
    return types.SimpleNamespace(h5=h5, info={"datasets": n, "groups": groups, "mb": 1})


def timed(*cmd, **kw):
    t = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    return time.monotonic() - t


def measure(run, data, peer, m, rnd):
    binary = os.path.join(ROOT, run.s.dsview_old) if peer == "old" else run.dsview
    mnt = run.path("mnt")
    r = {"mount_s": timed(binary, "mount", "--gpu", "off", data.h5, mnt)}
    try:
        r["ls_s"] = timed("ls", "-R", mnt, stdout=subprocess.DEVNULL)
        t = time.monotonic()
        files = 0
        for root, dirs, names in os.walk(mnt):
            for name in dirs + names:
                os.lstat(os.path.join(root, name))
            files += len(names)
        r["walk_s"] = time.monotonic() - t
    finally:
        subprocess.run([binary, "umount", mnt], check=True)
    if files != 3 * run.s.datasets + 1:
        raise RuntimeError(f"tree: {files} files, want {3 * run.s.datasets + 1}")
    return r


EXPERIMENT = Experiment(
    name="tree",
    doc=__doc__,
    settings=[Setting("datasets", 100_000, "tiny HDF5 datasets", quick=500),
              Setting("groups", 100, "groups they are spread over", quick=5),
              Setting("dsview_old", "", "another build's dsview, the old peer")],
    data=make,
    peers=[Peer("dsview", "this build"),
           Peer("old", "--dsview_old", missing=lambda run: None if run.s.dsview_old
                else "no --dsview_old given")],
    phases=[Phase("tree", measure, cold=False)],
    metrics=[Metric("mount_s", "s", "mount until it answers", higher_is_better=False),
             Metric("ls_s", "s", "ls -R", higher_is_better=False),
             Metric("walk_s", "s", "os.walk + lstat of every entry", higher_is_better=False)],
    targets=[Target("mount, this build vs old", "mount_s", "dsview", "old", None)],
)
