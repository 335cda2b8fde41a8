"""HDF5 dimension scales as axis names: datasets whose axes h5py labels
(dims[i].label) or attaches scales to (make_scale, attach_scale), as
netCDF-4 and xarray write them, name their axes in V.json's
dimension_names and in `dsview info --json`, as Zarr's do. The data is
served as before, and the scales themselves are datasets served too."""
import json

import h5py
import numpy as np

from common import E2E, check_whole, read_all, run

RNG = np.random.default_rng(33)
PLACEHOLDER = "This is a netCDF dimension but not a netCDF variable.         20"


class DimScales(E2E):
    def write(self):
        path = self.p("dims.h5")
        x = RNG.standard_normal((20, 3, 4)).astype(np.float32)
        with h5py.File(path, "w") as f:
            t = f.create_dataset("time", data=np.arange(20, dtype=np.float64))
            t.make_scale("time")
            ch = f.create_dataset("chan", data=np.arange(3, dtype=np.int32))
            ch.make_scale()  # a scale without a NAME: its own name
            nc = f.create_dataset("x_dim", data=np.arange(4, dtype=np.int32))
            nc.make_scale(PLACEHOLDER)  # netCDF-4's dimension without a variable
            d = f.create_dataset("data", data=x)
            d.dims[0].attach_scale(t)
            d.dims[1].attach_scale(ch)
            d.dims[2].attach_scale(nc)
            lab = f.create_dataset("labelled", data=x)
            lab.dims[0].label = "trial"
            lab.dims[0].attach_scale(t)  # the label comes first
            lab.dims[2].label = "voxel"
            part = f.create_dataset("part", data=x)
            part.dims[1].attach_scale(ch)
            f.create_dataset("plain", data=x)
            # a scale attached, then unlinked: its reference dangles
            gone = f.create_dataset("gone", data=np.arange(4, dtype=np.int32))
            gone.make_scale("gone")
            dang = f.create_dataset("dangling", data=x)
            dang.dims[0].attach_scale(t)
            dang.dims[2].attach_scale(gone)
            del gone
            del f["gone"]
        return path, x

    def test_names(self):
        path, x = self.write()
        want = {"data": ["time", "chan", "x_dim"], "labelled": ["trial", None, "voxel"],
                "part": [None, "chan", None], "dangling": ["time", None, None]}
        with self.mount(path) as m:
            for name, dims in want.items():
                meta = check_whole(self, m, name, x, "float32")
                self.assertEqual(meta["dimension_names"], dims, name)
                self.assertEqual(meta["sources"][0]["dimension_names"], dims, name)
            meta = check_whole(self, m, "plain", x, "float32")
            self.assertNotIn("dimension_names", meta)
            # the scales are datasets of their own, served as views; one that
            # is its own scale names its axis after itself
            check_whole(self, m, "time", np.arange(20, dtype=np.float32), "float32")
            self.assertEqual(json.loads(read_all(m.path("time.json"))).get("dimension_names"),
                             None)
        r = run("info", "--json", path + ":/labelled")
        self.assertEqual(r.returncode, 0, r.stderr)
        ds = json.loads(r.stdout)["datasets"][0]
        self.assertEqual(ds["name"], "/labelled")
        self.assertEqual(ds["source"]["dimension_names"], ["trial", None, "voxel"])

    def test_manifest_and_window(self):
        path, x = self.write()
        ini = self.write_ini(f"[one]\nsource = {path}:/data\n"
                             f"[win]\nsource = {path}:/data\nwindow = 4\nwindow_axis = 0\n"
                             f"[mixed]\nsource = {path}:/data\nsource = {path}:/labelled\n")
        with self.mount(ini) as m:
            meta = {n: json.loads(read_all(m.path(n + ".json"))) for n in ("one", "win", "mixed")}
        self.assertEqual(meta["one"]["dimension_names"], ["time", "chan", "x_dim"])
        self.assertEqual(meta["win"]["dimension_names"], [None, "time", "chan", "x_dim"])
        self.assertNotIn("dimension_names", meta["mixed"])
        self.assertEqual([s["dimension_names"] for s in meta["mixed"]["sources"]],
                         [["time", "chan", "x_dim"], ["trial", None, "voxel"]])


if __name__ == "__main__":
    import unittest
    unittest.main()
