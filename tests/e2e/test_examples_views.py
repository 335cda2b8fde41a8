"""The four views examples (examples/eeg_windows.ini, tokens.ini with
tokens_loader.py, splits.ini, nsd.ini), each copied into a temp directory
with the data files it names (its relative sources resolve there), mounted
as shipped, and checked against the numpy reference."""
import os
import shutil
import subprocess
import sys

import h5py
import hdf5plugin
import numpy as np

from common import E2E, PYTHON_DIR, check_preads, check_whole, forked_batches, run
from refs import reference, windows_ref

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
S300 = 0.0033333333333333335


class Examples(E2E):
    def example(self, name):
        """A fresh directory holding examples/<name>; returns (dir, ini path)."""
        d = self.p(name.replace(".", "_"))
        os.makedirs(d, exist_ok=True)
        ini = os.path.join(d, name)
        shutil.copy(os.path.join(EXAMPLES, name), ini)
        return d, ini

    def info_ok(self, ini):
        r = run("info", ini)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_eeg_windows(self):
        d, ini = self.example("eeg_windows.ini")
        rng = np.random.default_rng(1430)
        # four releases of different lengths; release 3 has a recording set
        # shorter than a window, release 4 a length not a multiple of the stride
        shapes = [(2, 129, 1000), (3, 129, 640), (1, 129, 170), (2, 129, 777)]
        parts = [rng.normal(0, 50, s).astype(np.float32) for s in shapes]
        parts[0][0, 0, :3] = [np.nan, 1e6, -70000]
        for i, p in enumerate(parts):
            with h5py.File(os.path.join(d, f"R{i + 1}.h5"), "w") as f:
                if i % 2:
                    f.create_dataset("eeg", data=p, chunks=(1, 129, p.shape[2]), **hdf5plugin.LZ4())
                else:
                    f.create_dataset("eeg", data=p)
        ref = reference(np.concatenate([windows_ref(p, 200, 100, -1) for p in parts]), dtype="float16")
        self.assertEqual(ref.shape, (2 * 9 + 3 * 5 + 0 + 2 * 6, 129, 200))
        with self.mount(ini) as m:
            meta = check_whole(self, m, "eeg", ref, "float16")
            self.assertEqual(meta["window"], {"size": 200, "stride": 100, "axis": 2})
            self.assertEqual([s["windows"] for s in meta["sources"]], [9, 5, 0, 6])
            check_preads(self, m, "eeg", ref, rows=(1, 18, 33, 34), n_random=30)
            forked_batches(self, m, "eeg", ref, workers=2, batches=8)
        out = self.info_ok(ini)
        self.assertIn("contributes no window", out)  # R3: 170 samples < 200

    def tokens(self):
        d, ini = self.example("tokens.ini")
        tok = np.random.default_rng(1431).integers(0, 50257, 150_000).astype("<u2")
        tok[:3] = [0, 65535, 50256]
        tok.tofile(os.path.join(d, "tokens.bin"))
        ref = windows_ref(tok, 1025, 1024, 0).astype(np.int64)
        self.assertEqual(ref.shape, ((150_000 - 1025) // 1024 + 1, 1025))
        return d, ini, ref

    def test_tokens(self):
        d, ini, ref = self.tokens()
        self.info_ok(ini)
        with self.mount(ini) as m:
            meta = check_whole(self, m, "tokens", ref, "int64")
            self.assertEqual(meta["window"], {"size": 1025, "stride": 1024, "axis": 0})
            # consecutive examples share one token
            a = np.load(m.path("tokens.npy"), mmap_mode="r")
            self.assertTrue((np.asarray(a[:-1, -1]) == np.asarray(a[1:, 0])).all())
            del a
            forked_batches(self, m, "tokens", ref, workers=2, batches=8)

    def test_tokens_loader(self):
        try:
            import torch  # noqa: F401  (Debian's python3-torch)
        except ImportError:
            self.skipTest("no torch for this python (Debian: python3-torch): tokens_loader.py not run")
        d, ini, ref = self.tokens()
        shutil.copy(os.path.join(EXAMPLES, "tokens_loader.py"), d)
        with self.mount(ini) as m:
            r = subprocess.run([sys.executable, os.path.join(d, "tokens_loader.py"), m.path("tokens.npy"),
                                "--workers", "2", "--batch", "16"], capture_output=True, text=True, timeout=120,
                               env={**os.environ, "PYTHONPATH": os.path.abspath(PYTHON_DIR)})
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            self.assertEqual(r.stdout.strip(),
                             f"windows {len(ref)} batches {-(-len(ref) // 16)} width 1025 "
                             f"token_sum {int(ref.sum())}")

    def test_splits(self):
        d, ini = self.example("splits.ini")
        rng = np.random.default_rng(1432)
        n = 300
        img = rng.integers(0, 256, (n, 9, 11, 3), dtype=np.uint8)
        with h5py.File(os.path.join(d, "images.h5"), "w") as f:
            f.create_dataset("images", data=img, chunks=(16, 9, 11, 3), **hdf5plugin.LZ4())
        p = rng.permutation(n)
        idx = {"train": np.sort(p[:200]), "val": np.sort(p[200:250]), "test": p[250:]}  # test unsorted
        for k, v in idx.items():
            np.save(os.path.join(d, f"{k}_idx.npy"), v)
        out = self.info_ok(ini)
        for k in idx:
            self.assertIn(f"[{k}]", out)
        full = np.ascontiguousarray(np.moveaxis(reference(img, 0.00392156862745098, 0, MEAN, STD, -1,
                                                          dtype="bfloat16"), -1, 1))
        with self.mount(ini) as m:
            for k, v in idx.items():
                with self.subTest(split=k):
                    meta = check_whole(self, m, k, full[v], "bfloat16")
                    self.assertEqual(meta["layout"], "CHW")
                    self.assertEqual(meta["rows"]["count"], len(v))
            forked_batches(self, m, "train", full[idx["train"]], workers=2, batches=8)

    def test_nsd(self):
        d, ini = self.example("nsd.ini")
        rng = np.random.default_rng(1433)
        sess = [rng.integers(-32768, 32767, (t, 6, 7, 5), dtype=np.int16, endpoint=True) for t in (40, 55, 30)]
        for i, s in enumerate(sess):
            with h5py.File(os.path.join(d, f"betas_session{i + 1:02d}.h5"), "w") as f:
                f.create_dataset("betas", data=s, chunks=(8, 6, 7, 5), **hdf5plugin.LZ4())
        # the statistics the way the example's comment makes them
        mean = np.stack([(s * S300).mean(0) for s in sess])
        std = np.stack([(s * S300).std(0) + 1e-6 for s in sess])
        np.save(os.path.join(d, "session_mean.npy"), mean)
        np.save(os.path.join(d, "session_std.npy"), std)
        ref = np.concatenate([((s.astype(np.float64) * S300 - mean[i]) / std[i]).astype(np.float32)
                              for i, s in enumerate(sess)])
        self.assertLess(abs(float(ref[:40].mean())), 1e-3)  # z-scored within session 1
        self.info_ok(ini)
        with self.mount(ini) as m:
            meta = check_whole(self, m, "betas", ref, "float32")
            self.assertTrue(meta["transform"]["per_source"])
            self.assertEqual(meta["transform"]["mean"]["shape"], [3, 6, 7, 5])
            check_preads(self, m, "betas", ref, rows=(39, 40, 94, 95), n_random=30)

    def test_every_example_names_its_data(self):
        for name in ("eeg_windows.ini", "tokens.ini", "splits.ini", "nsd.ini"):
            with open(os.path.join(EXAMPLES, name)) as f:
                text = f.read()
            with self.subTest(example=name):
                self.assertTrue(text.startswith(";"), "a comment first")
                self.assertIn("Expects", text)
                self.assertNotIn("source = /", text, "relative source paths")

