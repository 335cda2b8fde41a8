#!/usr/bin/python3
"""The mount's tree at scale: an HDF5 file of TREE_DATASETS tiny datasets
(default 100,000, in TREE_GROUPS groups, default 100) mounted zero-config,
so the tree has one directory per group and three files per dataset.

  mount   `dsview mount FILE MNT`, which returns once the mount answers
          (the tree is built before that)
  ls -R   `ls -R MNT`: one readdir pass over every directory
  walk    os.walk plus an lstat of every entry: one lookup per file

The HDF5 file is kept in BENCH_DIR (default /var/tmp) and reused by later
runs, so an old and a new build can be timed on the same file:

  DSVIEW=build/dsview /usr/bin/python3 bench/tree_bench.py
  make bench-tree"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

DSVIEW = os.environ.get("DSVIEW", "build/dsview")
N = int(os.environ.get("TREE_DATASETS", "100000"))
GROUPS = int(os.environ.get("TREE_GROUPS", "100"))
BENCH_DIR = os.environ.get("BENCH_DIR", "/var/tmp")


def make_file(path):
    if os.path.exists(path):
        return
    tmp = path + ".tmp"
    t = time.monotonic()
    row = np.arange(4, dtype=np.uint8)
    with h5py.File(tmp, "w", libver="latest") as f:
        per = -(-N // GROUPS)
        for g in range(GROUPS):
            grp = f.create_group(f"g{g:04d}")
            for i in range(g * per, min(N, (g + 1) * per)):
                grp.create_dataset(f"d{i:07d}", data=row)
    os.rename(tmp, path)
    print(f"made {path} in {time.monotonic() - t:.1f} s", flush=True)


def more_files():
    """Every dataset is a source with its own descriptor: the mount needs
    more than the usual 1024 (raising the hard limit needs root with
    CAP_SYS_RESOURCE)."""
    want = N + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
        except (ValueError, OSError):
            sys.exit(f"tree_bench: {N} datasets need {want} file descriptors, and the hard "
                     f"limit is {hard}: raise it (prlimit, ulimit -Hn) or set TREE_DATASETS")


def timed(*cmd, **kw):
    t = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    return time.monotonic() - t


def main():
    h5 = os.path.join(BENCH_DIR, f"dsview-tree-{N}x{GROUPS}.h5")
    more_files()
    make_file(h5)
    work = tempfile.mkdtemp(prefix="dsview-tree-", dir=BENCH_DIR)
    mnt = os.path.join(work, "mnt")
    try:
        t_mount = timed(DSVIEW, "mount", "--gpu", "off", h5, mnt)
        try:
            t_ls = timed("ls", "-R", mnt, stdout=subprocess.DEVNULL)
            t = time.monotonic()
            files = 0
            for root, dirs, names in os.walk(mnt):
                for name in dirs + names:
                    os.lstat(os.path.join(root, name))
                files += len(names)
            t_walk = time.monotonic() - t
        finally:
            subprocess.run([DSVIEW, "umount", mnt], check=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if files != 3 * N + 1:
        sys.exit(f"tree_bench: {files} files, want {3 * N + 1}")
    print(f"{DSVIEW}: {N} datasets in {GROUPS} groups ({files} files): mount {t_mount:.2f} s, "
          f"ls -R {t_ls:.2f} s, walk+lstat {t_walk:.2f} s")


if __name__ == "__main__":
    main()
