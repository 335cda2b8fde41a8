"""Every numeric element type users store (docs/sources.md): int64 and uint64
in .npy, raw and HDF5 (either byte order, as enums and bitfields too), and
plain casts of -0.0, NaN, infinities and subnormals, read through a real mount
and compared bit for bit with numpy's astype (bfloat16: the RNE of astype
(float32), as common.reference does)."""
import json

import h5py
import numpy as np
from h5py import h5d, h5s, h5t

from common import diff_report, mm_dat, run
from refs import reference
from test_views import DTYPES, NP_OUT, ViewCheck

I64_EDGES = [0, -1, 1, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**53 + 1, 2**53 + 2**29 + 1,
             -(2**53 + 2**29 + 1), 2**53 + 2**29, 2**63 - 1, -2**63, -2**63 + 1, 257, 259,
             2**24 + 2**16 + 1, 65504, 65519, 65520, -65520, 2049, 2051]
U64_EDGES = [0, 1, 2**64 - 1, 2**63, 2**63 + 2**39, 2**63 + 2**39 + 1, 2**63 + 3 * 2**39,
             2**53 + 2**29 + 1, 2**32 + 1, 2**64 - 2**39, 2**64 - 2**39 - 1]

# bit patterns: -0.0, +-inf, subnormals, quiet NaNs with payloads, the largest
# finite, values that round to float16's edges and ties
F16_BITS = [0x0000, 0x8000, 0x7C00, 0xFC00, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7E00, 0xFE01,
            0x7E55, 0x3C00, 0x7BFF, 0xFBFF]
F32_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x00000001, 0x80000001, 0x007FFFFF,
            0x00800000, 0x7FC00000, 0xFFC00001, 0x7FC12345, 0x33800001, 0x33000000, 0x477FEFFF,
            0x477FF000, 0x387FC000, 0x3F808000, 0x7F7FFFFF, 0x3F818000]
F64_BITS = [0, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000, 1, 0x8000000000000001,
            0x000FFFFFFFFFFFFF, 0x36A0000000000000, 0x7FF8000000000000, 0xFFF8000000000001,
            0x7FF8123456789ABC, 0x3FF0020000000001, 0x3FF0020000000000, 0x3FF0060000000000,
            0x3E70000000000001, 0x3E60000000000000, 0x40EFFDFFFFFFFFFF, 0x40EFFE0000000000,
            0x3F0FF80000000000, 0x3F0FFC0000000001, 0x7FEFFFFFFFFFFFFF, 0x47EFFFFFE0000000,
            0x3FF0000010000000, 0x3FF0000010000001]


def with_edges(dt, edges, rng, shape=(40, 3, 5)):
    info = np.iinfo(dt)
    a = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    a.flat[:len(edges)] = np.array(edges, dtype=dt)
    # some values near 2^53 and 2^63, where rounding through float64 goes wrong
    base = np.array(2**63 if dt == np.uint64 else 2**53, dtype=dt)
    a.flat[len(edges):len(edges) + 30] = base + rng.integers(0, 2**32, 30, dtype=dt)
    return a


class Types(ViewCheck):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        rng = np.random.default_rng(64)
        cls.i64 = with_edges(np.int64, I64_EDGES, rng)
        cls.u64 = with_edges(np.uint64, U64_EDGES, rng)

    def strict(self, m, name, ref, dtype):
        """check_view, and the .dat with NaN bits compared too."""
        self.check_view(m, name, ref, dtype)
        got = mm_dat(m.path(name + ".dat"), NP_OUT[dtype], ref.shape)
        msg = diff_report(got, ref, dtype)
        if msg:
            self.fail(f"{name}: {msg}")

    def views(self, names_sources, scaled=True):
        """A manifest with a plain view per output dtype for each (name, source line), and
        one scaled float32 view."""
        ini = ""
        for name, src in names_sources:
            for dt in DTYPES:
                ini += f"[{name}_{dt}]\n{src}\ndtype = {dt}\n\n"
            if scaled:
                ini += f"[{name}_scaled]\n{src}\ndtype = float32\nscale = 0.5\noffset = -1\n\n"
        return self.write_ini(ini, "types.ini")

    def test_int64_uint64_npy_and_raw(self):
        np.save(self.p("i64.npy"), self.i64)
        np.save(self.p("u64.npy"), self.u64)
        self.i64.tofile(self.p("i64.bin"))
        self.u64.tofile(self.p("u64.bin"))
        srcs = [("i64", "source = i64.npy"), ("u64", "source = u64.npy"),
                ("ri64", "source = i64.bin\nsource_dtype = int64\nsource_shape = -1 3 5"),
                ("ru64", "source = u64.bin\nsource_dtype = uint64\nsource_shape = -1 3 5")]
        arrays = {"i64": self.i64, "u64": self.u64, "ri64": self.i64, "ru64": self.u64}
        with self.mount(self.views(srcs)) as m:
            for name, x in arrays.items():
                for dt in DTYPES:
                    with self.subTest(view=name, dtype=dt):
                        self.strict(m, f"{name}_{dt}", reference(x, dtype=dt), dt)
                with self.subTest(view=name, scaled=True):
                    # the transform rounds x to float64 first, then the formula
                    self.strict(m, f"{name}_scaled", reference(x, 0.5, -1), "float32")
        # int64 -> float32 in one rounding: through float64 it would differ here
        x = np.array([2**53 + 2**29 + 1], np.int64)
        self.assertNotEqual(x.astype(np.float32)[0], x.astype(np.float64).astype(np.float32)[0])

    def test_hdf5_integer_kinds(self):
        i64, u64 = self.i64, self.u64
        with h5py.File(self.p("ints.h5"), "w") as f:
            f.create_dataset("i64", data=i64)
            f.create_dataset("u64c", data=u64, chunks=(7, 3, 5))
            f.create_dataset("i64be", data=i64.astype(">i8"))
            f.create_dataset("u64be", data=u64.astype(">u8"), chunks=(9, 3, 5))
            f.create_dataset("i64gz", data=i64, chunks=(8, 3, 5), compression="gzip")
            en = h5py.enum_dtype({"zero": 0, "one": 1, "big": 2**62}, basetype="i8")
            f.create_dataset("enum", data=i64.astype(en), dtype=en)
            enbe = h5py.enum_dtype({"zero": 0, "one": 1}, basetype=">u8")
            f.create_dataset("enumbe", data=u64.astype(">u8"), dtype=enbe)
            en16 = h5py.enum_dtype({"a": -3, "b": 7}, basetype="i2")
            f.create_dataset("enum16", data=np.arange(-300, 300, dtype=np.int16).reshape(40, 3, 5),
                             dtype=en16)
            # bitfields: h5py has no high-level type for them, the low-level API does
            for name, ftype, mtype, x in (("bits64", h5t.STD_B64LE, h5t.STD_B64LE, u64),
                                          ("bits64be", h5t.STD_B64BE, h5t.STD_B64LE, u64),
                                          ("bits32be", h5t.STD_B32BE, h5t.STD_B32LE,
                                           (u64 >> np.uint64(32)).astype(np.uint32))):
                d = h5d.create(f.id, name.encode(), ftype, h5s.create_simple(x.shape))
                d.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(x), mtype=mtype)
        want = {"i64": i64, "u64c": u64, "i64be": i64, "u64be": u64, "i64gz": i64, "enum": i64,
                "enumbe": u64, "enum16": np.arange(-300, 300, dtype=np.int16).reshape(40, 3, 5),
                "bits64": u64, "bits64be": u64, "bits32be": (u64 >> np.uint64(32)).astype(np.uint32)}
        srcs = [(n, f"source = ints.h5:/{n}") for n in want]
        with self.mount(self.views(srcs)) as m:
            for name, x in want.items():
                for dt in DTYPES:
                    with self.subTest(dataset=name, dtype=dt):
                        self.strict(m, f"{name}_{dt}", reference(x, dtype=dt), dt)
                with self.subTest(dataset=name, scaled=True):
                    self.strict(m, f"{name}_scaled", reference(x, 0.5, -1), "float32")
            kinds = {n: json.load(open(m.path(f"{n}_float32.json")))["sources"][0]["kind"]
                     for n in want}
        for n in ("i64", "enum", "enum16", "bits64"):
            self.assertEqual(kinds[n], "hdf5-contiguous", n)  # the fast path: pread
        self.assertEqual(kinds["u64c"], "hdf5-chunked")
        self.assertEqual(kinds["i64gz"], "hdf5-chunked")  # gzip: dsview inflates it
        for n in ("i64be", "u64be", "enumbe", "bits64be", "bits32be"):
            self.assertEqual(kinds[n], "hdf5-library", n)

        # dsview info shows them served, with their element type; refusals say why
        with h5py.File(self.p("ints.h5"), "a") as f:
            f.create_dataset("cmp", data=np.zeros(4, [("a", "<i4"), ("b", "<f4")]))
            f.create_dataset("ld", data=np.zeros(4, np.longdouble))
        r = run("info", "--json", self.p("ints.h5"))
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = {d["name"]: d for d in json.loads(r.stdout)["datasets"]}
        for n in want:
            with self.subTest(info=n):
                self.assertIn(ds["/" + n]["serve"], ("fast-path", "library-fallback"))
        self.assertEqual(ds["/i64"]["serve"], "fast-path")
        self.assertEqual((ds["/enum"]["type"], ds["/enumbe"]["type"]),
                         ("enum of int64", "enum of big-endian uint64"))
        self.assertEqual(ds["/bits64be"]["type"], "big-endian bitfield (8 bytes)")
        self.assertEqual(ds["/enumbe"]["serve"], "library-fallback")
        self.assertEqual(ds["/cmp"]["serve"], "refused")
        self.assertIn("compound", ds["/cmp"]["why"] + ds["/cmp"]["type"])
        self.assertEqual(ds["/ld"]["serve"], "refused")
        self.assertIn("long double", ds["/ld"]["why"])

    def test_plain_cast_specials(self):
        arrays = {
            "f16": np.array(F16_BITS * 3, np.uint16).view(np.float16),
            "f32": np.array(F32_BITS * 3, np.uint32).view(np.float32),
            "f64": np.array(F64_BITS * 3, np.uint64).view(np.float64),
        }
        srcs = []
        for name, x in arrays.items():
            x = x.reshape(3, -1)
            arrays[name] = x
            np.save(self.p(name + ".npy"), x)
            srcs.append((name, f"source = {name}.npy"))
        with h5py.File(self.p("fl.h5"), "w") as f:
            f.create_dataset("f64be", data=arrays["f64"].astype(">f8"))
            f.create_dataset("f32", data=arrays["f32"], chunks=(1, 7))
        arrays["f64be"], arrays["h5f32"] = arrays["f64"], arrays["f32"]
        srcs += [("f64be", "source = fl.h5:/f64be"), ("h5f32", "source = fl.h5:/f32")]
        with self.mount(self.views(srcs, scaled=False)) as m:
            for name, x in arrays.items():
                for dt in DTYPES:
                    with self.subTest(source=name, dtype=dt), np.errstate(all="ignore"):
                        self.strict(m, f"{name}_{dt}", reference(x, dtype=dt), dt)
                got = mm_dat(m.path(f"{name}_float32.dat"), np.float32, x.shape)
                self.assertTrue(np.signbit(got[x == 0]).tolist() == np.signbit(x[x == 0]).tolist(),
                                f"{name}: -0.0 must stay -0.0")
