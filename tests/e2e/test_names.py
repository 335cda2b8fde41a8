"""Source names as users write them in manifests: `file.h5:name` as h5py
users write it (no leading slash) is `file.h5:/name`; a glob in the file
part expands to every match in natural order (s2 before s10), listed in
V.json; a pattern that matches nothing, or a raw file that is missing, is
refused at its line with the reason."""
import json
import os

import h5py
import numpy as np

from common import E2E, mm_npy, run, same_bits
from refs import reference


class Names(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.parts = {}
        for k in (1, 2, 10, 11):  # lexical order would be 1, 10, 11, 2
            x = (np.arange(6 * 8, dtype=np.int64).reshape(6, 8) * 3 + k * 100) % 251
            cls.parts[k] = x.astype(np.uint8)
            with h5py.File(os.path.join(cls.tmp, f"s{k}.h5"), "w") as f:
                f.create_group("g")["betas"] = cls.parts[k]
                f["top"] = cls.parts[k][::-1].copy()

    def view(self, ini, name):
        with self.mount(ini) as m:
            with open(m.path(name + ".json")) as f:
                meta = json.load(f)
            return mm_npy(m.path(name + ".npy")), meta

    def test_name_without_leading_slash(self):
        ini = self.write_ini("[a]\nsource = s1.h5:g/betas\n[b]\nsource = s1.h5:/g/betas\n"
                             "[c]\nsource = s1.h5:top\n")
        with self.mount(ini) as m:
            a, b, c = (mm_npy(m.path(n + ".npy")) for n in "abc")
        self.assertTrue(same_bits(a, reference(self.parts[1])))
        self.assertTrue(same_bits(b, a))
        self.assertTrue(same_bits(c, reference(self.parts[1][::-1])))
        r = run("info", self.p("s1.h5") + ":g/betas")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("/g/betas", r.stdout)

    def test_glob_in_natural_order(self):
        ini = self.write_ini("[all]\nsource = s*.h5:/g/betas\nscale = 0.5\n", "glob.ini")
        got, meta = self.view(ini, "all")
        want = np.concatenate([self.parts[k] for k in (1, 2, 10, 11)])
        self.assertTrue(same_bits(got, reference(want, 0.5)))
        self.assertEqual([os.path.basename(s["path"]) for s in meta["sources"]],
                         ["s1.h5", "s2.h5", "s10.h5", "s11.h5"])
        self.assertEqual([s["dataset"] for s in meta["sources"]], ["/g/betas"] * 4)
        # a pattern after other sources, and one without a dataset part's slash
        ini = self.write_ini("[v]\nsource = s2.h5:/top\nsource = s1?.h5:top\n", "glob2.ini")
        got, meta = self.view(ini, "v")
        want = np.concatenate([self.parts[k][::-1] for k in (2, 10, 11)])
        self.assertTrue(same_bits(got, reference(want)))

    def test_pattern_matching_nothing(self):
        ini = self.write_ini("[v]\nsource = s1.h5:/top\nsource = nothing*.h5:/top\n", "none.ini")
        self.refused(ini, want=[f"{ini}:3: ", "nothing*.h5: the pattern matches no file"])

    def test_missing_raw_file_says_so(self):
        ini = self.write_ini("[v]\nsource = missing.bin\n", "missing.ini")
        self.refused(ini, want=[f"{ini}:2: ", "missing.bin: No such file or directory"])
        # an existing raw file without its layout still asks for it
        with open(self.p("here.bin"), "wb") as f:
            f.write(bytes(64))
        ini = self.write_ini("[v]\nsource = here.bin\n", "here.ini")
        self.refused(ini, want=[f"{ini}:2: ", "here.bin: raw source needs source_dtype and source_shape"])
