"""The views read in-process (libdsview.so's reader through
dsview.open(source, view) and dsview.Reader): byte for byte what a mount of
the same source serves, for every view kind and source kind; gathers of
rows in any order; damaged and truncated sources failing with the mount's
words; DataLoader workers under fork, spawn and forkserver; an unprivileged
user who cannot open /dev/fuse reading in-process."""
import errno
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import textwrap

import h5py
import hdf5plugin
import nibabel
import numpy as np
import zarr

from common import DSVIEW, E2E, PYTHON_DIR, flip_byte, run, venv_python

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import torch
    import dsview.torch as dtorch
except ImportError:
    torch = None

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
N = 240

MANIFEST = """
[img]
source = img.npy
mean = {mean}
std = {std}

[img_bf16]
source = img.npy
dtype = bfloat16
scale = 0.00392156862745098

[img_f16_chw]
source = img.npy
dtype = float16
layout = CHW
mean = {mean}
std = {std}

[img_rows]
source = img.npy
rows = 200:3:-7

[labels]
source = lab.npy
dtype = int32

[eeg_windows]
source = eeg*.npy
window = 64
stride = 48

[raw]
source = sig.bin
source_dtype = int16
source_shape = -1, 8, 50
scale = 0.5
offset = -3

[h5_lz4]
source = f.h5:/lz4

[h5_gzip]
source = f.h5:/gz
dtype = bfloat16

[h5_contig]
source = f.h5:/plain

[zarr]
source = z.zarr

[zarr_v3_sharded]
source = s3.zarr
dtype = float16

[nifti]
source = brain.nii

[store]
source = store.h5:/img
mean = {mean}
std = {std}
"""


def write_fixtures(d):
    """Every source kind, written by the libraries users write with."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, (N, 12, 10, 3), dtype=np.uint8)
    img[0].flat[:256] = np.arange(256)
    np.save(os.path.join(d, "img.npy"), img)
    np.save(os.path.join(d, "lab.npy"), rng.integers(-5000, 5000, (N,), dtype=np.int16))
    for k, t in enumerate((300, 512, 63, 401)):  # recordings of (1, channels, time)
        np.save(os.path.join(d, f"eeg{k}.npy"), rng.normal(0, 20, (1, 5, t)).astype(np.float32))
    rng.integers(-30000, 30000, (20, 8, 50), dtype=np.int16).tofile(os.path.join(d, "sig.bin"))
    with h5py.File(os.path.join(d, "f.h5"), "w") as f:
        f.create_dataset("lz4", data=rng.normal(0, 1, (300, 40)).astype(np.float32),
                         chunks=(32, 40), **hdf5plugin.LZ4())
        f.create_dataset("gz", data=rng.integers(0, 4000, (130, 7, 9), dtype=np.uint16),
                         chunks=(16, 7, 3), compression="gzip", shuffle=True)
        f.create_dataset("plain", data=rng.normal(0, 1, (64, 33)))
    z = zarr.open(os.path.join(d, "z.zarr"), mode="w", shape=(90, 13), chunks=(16, 5),
                  dtype="<i4")
    z[:] = rng.integers(-100000, 100000, (90, 13), dtype=np.int32)
    venv_python("import sys, numpy as np, zarr\n"
                "from zarr.codecs import ShardingCodec, BytesCodec, ZstdCodec\n"
                "x = np.random.default_rng(4).normal(0, 3, (70, 9, 11)).astype('<f4')\n"
                "z = zarr.create(shape=x.shape, dtype=x.dtype, chunks=(16, 9, 11),\n"
                "    zarr_format=3, store=sys.argv[1], fill_value=0,\n"
                "    codecs=[ShardingCodec(chunk_shape=(4, 3, 11),\n"
                "        codecs=[BytesCodec(), ZstdCodec()])])\n"
                "z[...] = x\n", os.path.join(d, "s3.zarr"))
    nibabel.save(nibabel.Nifti1Image(rng.normal(100, 10, (9, 8, 7, 6)).astype(np.float32),
                                     np.eye(4)), os.path.join(d, "brain.nii"))
    r = run("pack", "--codec", "lz4", "--chunk-size", "16k", os.path.join(d, "img.npy"),
            os.path.join(d, "store.h5"), timeout=120)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(d, "m.ini"), "w") as f:
        f.write(MANIFEST.format(mean=", ".join(map(str, MEAN)), std=", ".join(map(str, STD))))


def read_dat(m, name):
    with open(m.path(name + ".dat"), "rb") as f:
        return f.read()


class SameBytes(E2E):
    """In-process reads equal the mount's files, every view kind."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        write_fixtures(cls.tmp)
        cls.ini = os.path.join(cls.tmp, "m.ini")

    def test_every_view_equals_the_mount(self):
        r = dsview.Reader(self.ini)
        with self.mount(self.ini) as m:
            self.assertEqual(sorted(r.views), sorted(n[:-5] for n in os.listdir(m.mp)
                                                     if n.endswith(".json") and not n.startswith(".")))
            for name in r.views:
                with self.subTest(view=name):
                    a = r.view(name)
                    with open(m.path(name + ".json")) as f:
                        meta = json.load(f)
                    self.assertEqual(list(a.shape), meta["shape"])
                    self.assertEqual(a.dsview_dtype, meta["dtype"])
                    self.assertEqual(a.info, meta)
                    want = read_dat(m, name)
                    self.assertEqual(a.read_bytes(0, a.nbytes), want, f"{name}: whole view")
                    self.assertEqual(np.asarray(a).tobytes(), want, f"{name}: np.asarray")
                    rows = np.random.default_rng(3).integers(0, a.shape[0], 50)
                    rb = a.row_bytes
                    got = a.read(rows).tobytes()
                    self.assertEqual(got, b"".join(want[i * rb:(i + 1) * rb] for i in rows),
                                     f"{name}: shuffled rows with repeats")

    def test_indexing_as_numpy(self):
        a = dsview.open(self.ini, "img")
        with self.mount(self.ini) as m:
            mm = dsview.open(m.path("img.npy"))
            ref = np.array(mm)
            del mm
        for key in (5, -1, slice(3, 40), slice(None, None, -9), [7, 7, 0, N - 1],
                    np.arange(N) % 3 == 0, (4, slice(2, 5)), (slice(0, 10), 3, 1), Ellipsis):
            with self.subTest(key=key):
                np.testing.assert_array_equal(a[key], ref[key])
        self.assertEqual(len(a), N)
        with self.assertRaisesRegex(IndexError, f"row {N} out of range: the view has {N} rows"):
            a[N]
        out = np.empty((3,) + a.shape[1:], np.float32)
        self.assertIs(a.read([1, 2, 3], out=out), out)
        with self.assertRaisesRegex(ValueError, "C-contiguous array of 2 rows"):
            a.read([1, 2], out=out)

    def test_zero_config_directory_and_threads(self):
        d = self.p("zc")
        os.makedirs(d, exist_ok=True)
        for n in ("img.npy", "f.h5", "brain.nii"):
            shutil.copy(self.p(n), d)
        r = dsview.Reader(d, dtype="bfloat16", threads=3, cache_size="64M")
        with self.mount(d, "--dtype", "bfloat16") as m:
            for name in r.views:
                with self.subTest(view=name):
                    a = r.view(name)
                    self.assertEqual(a.read_bytes(0, a.nbytes), read_dat(m, name))
                    rows = np.arange(a.shape[0])[::-1]
                    want = np.array(dsview.open(m.path(name + ".npy")))[rows]
                    self.assertEqual(a.read(rows).tobytes(), want.tobytes())
        self.assertGreater(r.stats()["bytes_served"], 0)

    def test_pickle_reopens(self):
        a = dsview.open(self.ini, "store")
        b = pickle.loads(pickle.dumps(a))
        self.assertEqual(b.read_bytes(0, b.nbytes), a.read_bytes(0, a.nbytes))

    def test_forked_children_read(self):
        a = dsview.open(self.ini, "h5_gzip", threads=2)
        want = a.read_bytes(0, a.nbytes)  # the parent has read with the library
        pids = []
        for k in range(3):
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    rows = np.random.default_rng(k).permutation(a.shape[0])
                    got = a.read(rows).tobytes()
                    rb = a.row_bytes
                    code = 0 if got == b"".join(want[i * rb:(i + 1) * rb] for i in rows) else 2
                finally:
                    os._exit(code)
            pids.append(pid)
        self.assertEqual([os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids],
                         [0, 0, 0])


class Errors(E2E):
    """Bad sources fail as the mount fails, with its words."""

    def setUp(self):
        super().setUp()
        self.x = np.random.default_rng(1).normal(0, 1, (400, 256)).astype(np.float32)
        np.save(self.p("x.npy"), self.x)

    def test_bad_manifest_names_file_and_line(self):
        ini = self.write_ini("[v]\nsource = x.npy\ncolour = red\n", "bad.ini")
        with self.assertRaisesRegex(ValueError, r"bad\.ini:3: unknown key 'colour'"):
            dsview.open(ini)
        ini = self.write_ini("[v]\nsource = nope.npy\n", "missing.ini")
        with self.assertRaisesRegex(ValueError, r"missing\.ini:2: .*nope\.npy: No such file"):
            dsview.open(ini)

    def test_missing_view_names_the_views(self):
        ini = self.write_ini("[a]\nsource = x.npy\n[b]\nsource = x.npy\ndtype = float16\n")
        with self.assertRaisesRegex(KeyError, "no view 'c'; its views: a, b"):
            dsview.open(ini, "c")
        with self.assertRaisesRegex(KeyError, "name one of its 2 views: a, b"):
            dsview.open(ini)
        with self.assertRaisesRegex(ValueError, "dtype applies to a SOURCE that is not a "
                                                "manifest"):
            dsview.open(ini, "a", dtype="float16")
        with self.assertRaisesRegex(ValueError, "unknown option 'colour'"):
            dsview.open(self.p("x.npy"), colour="red")

    def test_damaged_chunk_fails_that_read_only(self):
        r = run("pack", "--codec", "lz4", "--chunk-size", "16k", self.p("x.npy"),
                self.p("s.h5"), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with h5py.File(self.p("s.h5"), "r") as f:
            d = f["x"]
            info = d.id.get_chunk_info(3)  # the fourth chunk: rows 48-63 of 16 KiB chunks
        flip_byte(self.p("s.h5"), info.byte_offset + info.size // 2)
        a = dsview.open(self.p("s.h5"))
        with self.assertRaises(OSError) as cm:
            a[40:70]
        self.assertEqual(cm.exception.errno, errno.EIO)
        self.assertRegex(str(cm.exception), r"s\.h5:/?x.* chunk 3 \(rows 48-63, file offset")
        np.testing.assert_array_equal(a[:48], self.x[:48])  # the rest is served
        np.testing.assert_array_equal(a[64:], self.x[64:])

    def test_truncated_source(self):
        a = dsview.open(self.p("x.npy"))
        np.testing.assert_array_equal(a[399], self.x[399])
        with open(self.p("x.npy"), "r+b") as f:
            f.truncate(os.path.getsize(self.p("x.npy")) - 5000)
        with self.assertRaises(OSError) as cm:
            a[390:400]
        self.assertEqual(cm.exception.errno, errno.EIO)
        self.assertIn("x.npy", str(cm.exception))
        np.testing.assert_array_equal(a[:300], self.x[:300])


class Loaders(E2E):
    """dsview.torch and dsview.batches over in-process views."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(2)
        cls.x = rng.integers(0, 256, (300, 8, 8, 3), dtype=np.uint8)
        cls.y = rng.permutation(300).astype(np.int64)  # names its row
        cls.row_of = np.argsort(cls.y)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        np.save(os.path.join(cls.tmp, "y.npy"), cls.y)
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write("[x]\nsource = x.npy\nscale = 0.5\n[y]\nsource = y.npy\ndtype = int64\n")

    def test_batches_and_array_source(self):
        views = {"x": dsview.open(self.p("m.ini"), "x"), "y": dsview.open(self.p("m.ini"), "y")}
        seen = []
        for b in dsview.batches(views, batch_size=64, seed=1):
            rows = self.row_of[b["y"]]
            np.testing.assert_array_equal(b["x"], self.x[rows].astype(np.float32) * 0.5)
            seen.extend(rows)
        self.assertEqual(sorted(seen), list(range(300)))
        src = dsview.ArraySource(views)
        item = src[17]
        np.testing.assert_array_equal(item["x"], self.x[17].astype(np.float32) * 0.5)
        self.assertEqual(item["y"], self.y[17])

    def check_loader(self, **kw):
        x = dsview.open(self.p("m.ini"), "x")
        loader = dtorch.loader(x, batch_size=50, seed=3, **kw)
        got = []
        for b in loader:
            got.append(b.numpy())
        got = np.concatenate(got)
        self.assertEqual(got.shape, (300, 8, 8, 3))
        ref = self.x.astype(np.float64) * 0.5
        # every row exactly once, each equal to its reference row
        keys = {r.tobytes() for r in ref.astype(np.float32)}
        self.assertEqual({r.tobytes() for r in got}, keys)

    def test_loader_threads(self):
        if torch is None:
            self.skipTest("no torch")
        self.check_loader(num_workers=3)

    def test_loader_worker_processes(self):
        if torch is None:
            self.skipTest("no torch")
        for method in ("fork", "spawn", "forkserver"):
            with self.subTest(start=method):
                self.check_loader(num_workers=2, workers="processes",
                                  multiprocessing_context=method)


class NoFuse(E2E):
    """A user who cannot open /dev/fuse reads in-process, and is told why
    the mount is refused."""

    def test_unprivileged_user(self):
        if os.geteuid() != 0 or shutil.which("runuser") is None:
            self.skipTest("needs root and runuser to become another user")
        if os.stat("/dev/fuse").st_mode & 0o006:
            self.skipTest("/dev/fuse is open to every user here")
        d = tempfile.mkdtemp(prefix="dsview-nobody-")
        try:
            os.chmod(d, 0o755)
            x = np.arange(64 * 10, dtype=np.uint8).reshape(64, 10)
            np.save(os.path.join(d, "x.npy"), x)
            os.chmod(os.path.join(d, "x.npy"), 0o644)
            os.makedirs(os.path.join(d, "mnt"))
            os.chmod(os.path.join(d, "mnt"), 0o777)
            code = textwrap.dedent(f"""
                import sys; sys.path.insert(0, {PYTHON_DIR!r})
                import numpy as np, dsview
                a = dsview.open({os.path.join(d, "x.npy")!r})
                assert np.array_equal(a[[3, 1]], np.arange(640, dtype=np.uint8).reshape(64, 10)[[3, 1]])
                print("in-process ok")
            """)
            p = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", code],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("in-process ok", p.stdout)
            p = subprocess.run(["runuser", "-u", "nobody", "--", DSVIEW, "mount", "-f",
                                os.path.join(d, "x.npy"), os.path.join(d, "mnt")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("/dev/fuse", p.stderr)
            self.assertIn("dsview.open", p.stderr)  # the way that needs no FUSE
            # root's live mount, seen by that user: not dead, not files open
            mp = os.path.join(d, "mnt")
            with self.mount(os.path.join(d, "x.npy"), mp=mp):
                p = subprocess.run(["runuser", "-u", "nobody", "--", DSVIEW, "status"],
                                   capture_output=True, text=True, timeout=60)
                self.assertIn("not inspectable: mounted by user 0", p.stdout)
                self.assertNotIn("dead", p.stdout)
                p = subprocess.run(["runuser", "-u", "nobody", "--", DSVIEW, "umount", mp],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, 1)
                self.assertIn("mounted by user 0: only that user or root can unmount it",
                              p.stderr)
        finally:
            subprocess.run(["umount", "-l", os.path.join(d, "mnt")], capture_output=True)
            shutil.rmtree(d, ignore_errors=True)
