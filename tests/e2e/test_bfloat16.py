"""One bfloat16 contract in Python: numpy arrays of a bfloat16 view are
its bits as uint16 (memmaps, np.load of V.npy, dsview.Array rows,
batches, ArraySource), whatever is installed (ml_dtypes included: the
torch-2 suite has the real one, elsewhere a stand-in is put in its
place); tensors are torch.bfloat16 (ViewDataset, loader under threads
and worker processes, dsview.torch.as_tensor), also on torch before 2.3,
whose from_numpy refuses uint16. The reference is refs.bf16_bits, the
round-to-nearest-even of the float32 source."""
import os
import sys
import types

import numpy as np

from common import E2E, PYTHON_DIR
from refs import bf16_bits

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import ml_dtypes  # noqa: F401  (installed in the torch-2 suite's venv)
    STAND_IN = None
except ImportError:  # a contract that consulted ml_dtypes would change the dtype
    STAND_IN = types.SimpleNamespace(bfloat16=np.dtype(np.float16))

try:
    import torch
    import dsview.torch as dtorch
except ImportError:
    torch = None

N = 257


def as_float(bits):
    """bfloat16 bits as the float32 they are."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


class Bfloat16(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(3)
        x = rng.normal(0, 100, (N, 6)).astype(np.float32)
        x[0] = [1 + 2**-8, 1 + 3 * 2**-8, -0.0, np.inf, 3e38, 1e-40]  # ties, signs, edges
        np.save(os.path.join(cls.tmp, "x.npy"), x)
        cls.ref = bf16_bits(x)
        with open(os.path.join(cls.tmp, "m.ini"), "w") as f:
            f.write("[b]\nsource = x.npy\ndtype = bfloat16\n")
        if STAND_IN is not None:
            sys.modules["ml_dtypes"] = STAND_IN

    @classmethod
    def tearDownClass(cls):
        if STAND_IN is not None:
            sys.modules.pop("ml_dtypes", None)
        super().tearDownClass()

    def check_bits(self, a, rows=slice(None)):
        self.assertEqual(a.dtype, np.uint16)
        np.testing.assert_array_equal(np.asarray(a), self.ref[rows])

    def check_tensor(self, t, rows):
        self.assertEqual(t.dtype, torch.bfloat16)
        np.testing.assert_array_equal(t.view(torch.int16).numpy().view(np.uint16), self.ref[rows])
        np.testing.assert_array_equal(t.float().numpy(), as_float(self.ref[rows]))

    def test_numpy_is_uint16_bits(self):
        with self.mount(self.p("m.ini")) as m:
            a = dsview.open(m.path("b.npy"))
            self.assertEqual(a.dsview_dtype, "bfloat16")
            self.check_bits(a)
            self.check_bits(np.load(m.path("b.npy")))
            self.check_bits(dsview.ArraySource(m.path("b"))[5], 5)
            got = np.concatenate(list(dsview.batches(m.path("b"), batch_size=64, shuffle=False)))
            self.check_bits(got)
            del a
        r = dsview.open(self.p("m.ini"), "b")
        self.assertEqual((r.dtype, r.dsview_dtype), (np.uint16, "bfloat16"))
        self.check_bits(r[[3, 1, -1]], [3, 1, -1])
        self.check_bits(r.read([7]), [7])
        self.assertEqual(dsview._views.numpy_dtype("bfloat16"), np.uint16)

    def test_torch_is_bfloat16(self):
        if torch is None:
            self.skipTest("no torch")
        r = dsview.open(self.p("m.ini"), "b")
        self.check_tensor(dtorch.as_tensor(r[2:9], "bfloat16"), slice(2, 9))
        self.check_tensor(dtorch.ViewDataset(r)[[0, 4]], [0, 4])
        with self.mount(self.p("m.ini")) as m:
            a = dsview.open(m.path("b.npy"))
            self.check_tensor(dtorch.as_tensor(a), slice(None))  # the memmap says bfloat16
            self.check_tensor(dtorch.ViewDataset(m.path("b"))[7], 7)
            for kw in (dict(num_workers=2), dict(num_workers=2, workers="processes")):
                with self.subTest(**kw):
                    lo = dtorch.loader(m.path("b"), batch_size=50, shuffle=False, **kw)
                    self.check_tensor(torch.cat(list(lo)), slice(None))
                    del lo
            del a
