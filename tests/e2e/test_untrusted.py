"""Untrusted files and names (docs/reliability.md): HDF5 external
storage, external links and plugin-only filters are refused, and no filter
plugin is ever loaded, even where HDF5_PLUGIN_PATH offers one; view names
with '/', '..', control bytes or over the limit are refused with a
one-line, printable message, and info and verify escape names read from
files."""
import json
import os
import shutil
import subprocess
import sys

import h5py
import hdf5plugin
import numpy as np

from common import DSVIEW, E2E, mm_npy, mount_entry, read_all, run, same_bits, view_name
from refs import reference
from test_security import printable

NAME_MAX = 200  # DSV_VIEW_NAME_MAX in src/view/view_i.h

# Where this machine's HDF5 finds the BZip2 filter plugin (hdf5plugin's own
# directory where it ships one; Debian installs them for the library).
PLUGIN_DIRS = [d for d in (getattr(hdf5plugin, "PLUGIN_PATH", None),
                           "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins",
                           "/usr/lib/aarch64-linux-gnu/hdf5/serial/plugins")
               if d and os.path.isdir(d)]



class Untrusted(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.x = np.arange(64 * 8, dtype=np.uint8).reshape(64, 8)
        np.save(os.path.join(cls.tmp, "a.npy"), cls.x)

    # ---- 4: HDF5 ----

    def test_h5_external_storage_and_links_refused(self):
        x = self.x
        with open(self.p("outside.bin"), "wb") as f:
            f.write(x.tobytes())
        with h5py.File(self.p("extstore.h5"), "w") as f:
            f.create_dataset("x", shape=x.shape, dtype=x.dtype,
                             external=[(self.p("outside.bin"), 0, x.nbytes)])
        with h5py.File(self.p("tgt.h5"), "w") as f:
            f["x"] = x
            f.create_group("g")["y"] = x
        tgt = self.p("tgt.h5")
        with h5py.File(self.p("links.h5"), "w") as f:
            f["local"] = x
            f["hard"] = f["local"]
            f["soft_local"] = h5py.SoftLink("/local")
            f.create_group("a")["ext"] = h5py.ExternalLink(tgt, "/g")      # to a group
            f.create_group("p/q/r/s")["e"] = h5py.ExternalLink(tgt, "/x")  # 5 levels down
            f["s1"] = h5py.SoftLink("/p/q/r/s/e")                         # soft -> external
            f["s2"] = h5py.SoftLink("/s1")                                # soft -> soft -> external
            f["sg"] = h5py.SoftLink("/a")                                 # soft -> group with one
            f["self"] = h5py.ExternalLink(self.p("links.h5"), "/local")   # even to itself

        for src in ("extstore.h5:/x", "extstore.h5"):
            with self.subTest(src=src):
                source = self.write_ini(f"[v]\nsource = {src}\n", "es.ini") if ":" in src else self.p(src)
                self.refused(source, want=["extstore.h5:/x", "external storage refused"])
        for path, via in [("/a/ext/y", "/a/ext"), ("/a/ext", "/a/ext"), ("/p/q/r/s/e", "/p/q/r/s/e"),
                          ("/s1", "/p/q/r/s/e"), ("/s2", "/p/q/r/s/e"), ("/sg/ext/y", "/sg/ext"),
                          ("/self", "/self")]:
            with self.subTest(path=path):
                ini = self.write_ini(f"; links\n[v]\nsource = links.h5:{path}\n", "ln.ini")
                self.refused(ini, want=[f"{ini}:3: ", f"links.h5:{path}", f"external link refused ({via})"])
        for path in ("/local", "/hard", "/soft_local"):  # links inside the file are fine
            with self.subTest(path=path):
                with self.mount(self.write_ini(f"[v]\nsource = links.h5:{path}\n", "ok.ini")) as m:
                    self.assertTrue(same_bits(mm_npy(m.path("v.npy")), reference(x)))
        # zero-config serves the file's own datasets and passes over its
        # links (external and soft alike) without following them
        with self.mount(self.p("links.h5")) as m:
            got = sorted(os.path.relpath(os.path.join(d, n), m.mp)
                         for d, _, fs in os.walk(m.mp) for n in fs)
            self.assertEqual(got, sorted([".stats.json", "hard.dat", "hard.json", "hard.npy",
                                          "local.dat", "local.json", "local.npy"]))
        for cmd in ("info", "verify"):
            with self.subTest(cmd=cmd):
                r = run(cmd, self.p("extstore.h5"))
                # verify: 3, nothing damaged but a dataset not checked
                self.assertEqual(r.returncode, 0 if cmd == "info" else 3, r.stdout + r.stderr)
                self.assertIn("external storage refused", r.stdout + r.stderr)
                r = run(cmd, self.p("links.h5"))  # describes/checks what is its own
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertNotIn("tgt.h5", r.stdout + r.stderr)
        # ... and says what it passed over
        r = run("info", self.p("links.h5"))
        self.assertIn("links: 4 soft, 3 external, not followed", r.stdout)
        r = run("info", "--json", self.p("links.h5"))
        self.assertEqual(json.loads(r.stdout)["totals"]["links_not_followed"],
                         {"soft": 4, "external": 3})
        with h5py.File(self.p("only-links.h5"), "w") as f:
            f["s"] = h5py.SoftLink("/nowhere")
            f["e"] = h5py.ExternalLink(tgt, "/x")
        self.refused(self.p("only-links.h5"),
                     want=["only-links.h5: no datasets of its own (1 soft and 1 external links"])

    def test_h5_plugin_filters_refused_and_never_loaded(self):
        x = self.x
        with h5py.File(self.p("lz4.h5"), "w") as f:
            f.create_dataset("x", data=x, chunks=(8, 8), **hdf5plugin.LZ4())
        with h5py.File(self.p("gz.h5"), "w") as f:
            f.create_dataset("x", data=x, chunks=(8, 8), compression="gzip", shuffle=True, fletcher32=True)
        plugin_only = []  # (file, filter id, name in the message)
        if h5py.h5z.filter_avail(hdf5plugin.BZIP2_ID):  # loaded by h5py from a plugin directory
            with h5py.File(self.p("bz2.h5"), "w") as f:
                f.create_dataset("x", data=x, chunks=(8, 8), **hdf5plugin.BZip2())
            plugin_only.append(("bz2.h5", 307, "bzip2"))
        # Filters no library here has: recorded in the pipeline as optional
        # (the only way h5py writes one it cannot run), chunks stored as they are.
        for name, fid, fname in [("blosc.h5", 32001, "blosc"), ("zstd.h5", 32015, "zstd"),
                                 ("bshuf.h5", 32008, "bitshuffle")]:
            with h5py.File(self.p(name), "w") as f:
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_chunk((8, 8))
                dcpl.set_filter(fid, h5py.h5z.FLAG_OPTIONAL, ())
                ds = h5py.h5d.create(f.id, b"x", h5py.h5t.STD_U8LE, h5py.h5s.create_simple(x.shape),
                                     dcpl=dcpl)
                ds.write(h5py.h5s.ALL, h5py.h5s.ALL, x)
            if fid not in (32015, 32001, 32008):  # dsview decodes these itself
                plugin_only.append((name, fid, fname))

        # A plugin directory that runs code the moment a library dlopens it:
        # it goes first on HDF5_PLUGIN_PATH, then the real plugins.
        trap_dir, marker = self.p("plugins"), self.p("plugin-was-loaded")
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc:
            os.makedirs(trap_dir, exist_ok=True)
            with open(self.p("trap.c"), "w") as f:
                f.write('#include <fcntl.h>\n#include <unistd.h>\n'
                        '__attribute__((constructor)) static void loaded(void)\n{\n'
                        f'\tint fd = open("{marker}", O_WRONLY | O_CREAT | O_APPEND, 0644);\n'
                        '\tif (fd >= 0) {\n\t\t(void)!write(fd, "x", 1);\n\t\tclose(fd);\n\t}\n}\n')
            subprocess.run([cc, "-shared", "-fPIC", "-o", os.path.join(trap_dir, "libh5trap.so"),
                            self.p("trap.c")], check=True)
        env = dict(os.environ, HDF5_PLUGIN_PATH=":".join(([trap_dir] if cc else []) + PLUGIN_DIRS))
        env.pop("HDF5_PLUGIN_PRELOAD", None)

        if cc and plugin_only[0][0] == "bz2.h5":
            # the trap works: a library that loads plugins springs it
            r = subprocess.run([sys.executable, "-c", "import h5py, sys; "
                                "print(h5py.File(sys.argv[1], 'r')['x'][0, 1])", self.p("bz2.h5")],
                               env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual((r.returncode, r.stdout.strip()), (0, "1"), r.stderr)
            self.assertTrue(os.path.exists(marker), "h5py did not load the trap plugin")
            os.unlink(marker)

        mp = self.p("mnt-plugin")
        # zstd (32015) and blosc (32001) need no plugin: dsview decodes them, here chunks the
        # library stored raw (the optional filter skipped by their mask)
        for name in ("zstd.h5", "blosc.h5"):
            with self.mount(self.p(name)) as m:
                self.assertTrue(same_bits(mm_npy(m.path("x.npy")), reference(x)), name)
        # bitshuffle (32008) is dsview's too, but a pipeline without the
        # parameters its plugin records (element size, ...) is refused
        # for what it is (test_bitshuffle), still with no plugin loaded
        self.refused(self.p("bshuf.h5"), want=["bitshuffle parameters not supported: no element size"])
        self.assertFalse(os.path.exists(marker), "dsview loaded a filter plugin")
        for name, fid, fname in plugin_only:
            # the default env can load plugins too: the library looks in its
            # own plugin directory (Debian's holds libh5bz2.so)
            for label, e in (("default env", None), ("HDF5_PLUGIN_PATH", env)):
                with self.subTest(file=name, env=label):
                    r = run("mount", self.p(name), mp, env=e)
                    try:
                        self.assertEqual(r.returncode, 1, r.stderr)
                        lines = r.stderr.strip().splitlines()
                        self.assertEqual(len(lines), 1, r.stderr)
                        self.assertIn(f"{name}:/x: filter {fid} ({fname}) is not available", lines[0])
                        self.assertFalse(mount_entry(mp), "something was mounted")
                    finally:
                        if mount_entry(mp):
                            subprocess.run(["umount", "-l", mp])
                    for cmd, rc in (("info", 0), ("verify", 3)):  # 3: not checked
                        r = run(cmd, self.p(name), env=e)
                        self.assertEqual(r.returncode, rc, f"{cmd}: {r.stderr}")
                        self.assertIn(f"filter {fid} ({fname}) is not available", r.stdout + r.stderr)
                    r = run("pack", f"{self.p(name)}:/x", self.p("packed.h5"), env=e)
                    self.assertEqual(r.returncode, 1, r.stderr)
                    self.assertIn(f"filter {fid}", r.stderr)
                    self.assertFalse(os.path.exists(marker), "dsview loaded a filter plugin")
        self.assertFalse(os.path.exists(self.p("packed.h5")))

        # LZ4 and gzip/shuffle/fletcher32 are dsview's own: served, with
        # the plugin path offered, and still nothing loaded
        for name in ("lz4.h5", "gz.h5"):
            with self.subTest(file=name):
                ini = self.write_ini(f"[v]\nsource = {name}:/x\n", "pl.ini")
                saved = os.environ.get("HDF5_PLUGIN_PATH")
                os.environ["HDF5_PLUGIN_PATH"] = env["HDF5_PLUGIN_PATH"]  # Mount passes os.environ on
                try:
                    with self.mount(ini) as m:
                        self.assertTrue(same_bits(mm_npy(m.path("v.npy")), reference(x)))
                        self.assertEqual(m.stats()["errors"], 0)
                finally:
                    if saved is None:
                        del os.environ["HDF5_PLUGIN_PATH"]
                    else:
                        os.environ["HDF5_PLUGIN_PATH"] = saved
                r = run("verify", self.p(name), env=env)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertFalse(os.path.exists(marker), "dsview loaded a filter plugin")

    # ---- 5: view names ----

    def test_bad_view_names_refused_in_manifests(self):
        bad = [b"a/b", b"/abs", b"..", b".", b".hidden", b"a..b/..", b"a\x01b", b"a\x7fb", b"a\tb",
               b"a\x1b[31mb", b"a\x00b", b"\x00", b"a b", b"caf\xc3\xa9", b"\xff", b"a\rb",
               b"a\\b", b"x" * (NAME_MAX + 1), b"x" * 1000, b"", b"a;b", b"a:b", b"a=b"]
        for name in bad:
            with self.subTest(name=name[:40]):
                ini = self.p("names.ini")
                with open(ini, "wb") as f:
                    f.write(b"; views\n[ok]\nsource = a.npy\n\n[" + name + b"]\nsource = a.npy\n")
                line = self.refused(ini, want=[f"{ini}:5: ", "invalid view name"])
                self.assertTrue(printable(line), f"raw bytes in {line!r}")
                if len(name) > NAME_MAX:
                    self.assertIn(f"({len(name)} bytes", line)
        # the limit itself, and names around 49 bytes, where a parser
        # with a small line buffer would cut them
        lens = [1, 49, 50, 60, 199, NAME_MAX]
        names = [chr(ord("a") + i) * n for i, n in enumerate(lens)] + ["A-z_0.9", "v..w", "x."]
        text = "".join(f"[{n}]\nsource = a.npy\n" for n in names) + "[dsview]\nthreads = 2\n"
        with self.mount(self.write_ini(text, "long.ini")) as m:
            want = sorted([".stats.json"] + [n + s for n in names for s in (".dat", ".npy", ".json")])
            self.assertEqual(sorted(os.listdir(m.mp)), want)
            longest = "f" * NAME_MAX
            self.assertTrue(same_bits(mm_npy(m.path(longest + ".npy")), reference(self.x)))
            self.assertEqual(json.loads(read_all(m.path(longest + ".json")))["shape"], [64, 8])

    def test_bad_names_refused_in_zero_config(self):
        # .npy file names are mapped as HDF5 names are (view_name); only a
        # name too long once mapped is refused
        for base in [b"a b", b"a\x01b", b"a\nb", b"a\x1b[2Jb", b"caf\xc3\xa9", b"\xff", b".hidden"]:
            with self.subTest(npy=base[:40]):
                path = os.fsdecode(os.path.join(os.fsencode(self.tmp), base + b".npy"))
                np.save(path, self.x)
                with self.mount(path) as m:
                    self.assertEqual(sorted(os.listdir(m.mp)), sorted(
                        [".stats.json"] + [view_name(base) + e for e in (".dat", ".json", ".npy")]))
                    self.assertTrue(same_bits(mm_npy(m.path(view_name(base) + ".npy")),
                                              reference(self.x)))
                os.unlink(path)
        for base in [b"x" * (NAME_MAX + 1), b"\xff" * 51]:
            with self.subTest(npy=base[:40]):
                path = os.fsdecode(os.path.join(os.fsencode(self.tmp), base + b".npy"))
                np.save(path, self.x)
                line = self.refused(path, want="file name is not a valid view name")
                self.assertTrue(printable(line), f"raw bytes in {line!r}")
                os.unlink(path)
        ok = self.p("y" * NAME_MAX + ".npy")
        np.save(ok, self.x)
        with self.mount(ok) as m:
            self.assertTrue(same_bits(mm_npy(m.path("y" * NAME_MAX + ".npy")), reference(self.x)))
        # HDF5 dataset and group names are mapped (view_name), not refused;
        # a part whose mapped name passes the limit is skipped, and
        # refused with --strict
        for parts in [["a\x1b[31mb"], ["a\nb"], ["a\x7f"], ["n" * (NAME_MAX + 1)], ["g\x01", "x"],
                      ["g" * (NAME_MAX + 1), "x"], ["sp ace"], ["caf\u00e9"], [".hidden"],
                      ["ok", "..."], [" " * 51], ["g", " " * 50]]:
            with self.subTest(h5=[p[:40] for p in parts]):
                path = self.p("names.h5")
                with h5py.File(path, "w") as f:
                    f["fine"] = self.x
                    g = f
                    for p in parts[:-1]:
                        g = g.create_group(p)
                    g[parts[-1]] = self.x
                mapped = "/".join(view_name(p) for p in parts)
                too_long = any(len(view_name(p)) > NAME_MAX for p in parts)
                with self.mount(path) as m:
                    self.assertTrue(same_bits(mm_npy(m.path("fine.npy")), reference(self.x)))
                    if too_long:
                        self.assertEqual(json.loads(read_all(m.path(".skipped.json")))[0]["kind"],
                                         "name")
                        self.assertIn("1 skipped: 1 name", m.stderr)
                        self.assertTrue(printable(m.stderr.strip()), f"raw bytes in {m.stderr!r}")
                    else:
                        self.assertTrue(same_bits(mm_npy(m.path(mapped + ".npy")), reference(self.x)))
                        meta = json.loads(read_all(m.path(mapped + ".json")))
                        self.assertEqual(meta["hdf5_path"], "/" + "/".join(parts))
                        self.assertFalse(os.path.exists(m.path(".skipped.json")))
                        self.assertEqual(m.stderr, "")
                if too_long:
                    line = self.refused(path, "--strict",
                                        want=["names.h5: dataset name", "is not a valid view name"])
                    self.assertTrue(printable(line), f"raw bytes in {line!r}")
        with h5py.File(self.p("long.h5"), "w") as f:
            f.create_group("g" * NAME_MAX)["d" * NAME_MAX] = self.x
            f["e" * NAME_MAX] = self.x
        with self.mount(self.p("long.h5")) as m:
            self.assertTrue(same_bits(mm_npy(m.path("g" * NAME_MAX + "/" + "d" * NAME_MAX + ".npy")),
                                      reference(self.x)))
            self.assertIn("e" * NAME_MAX + ".dat", os.listdir(m.mp))

    def test_info_and_verify_escape_names_from_files(self):
        # HDF5 names are file content: `dsview info` and `verify` show them
        # with control characters (C0, DEL, C1) and non-UTF-8 bytes as \xNN,
        # and leave printable UTF-8 alone
        path = self.p("shown.h5")
        with h5py.File(path, "w") as f:
            f["ok\x1b[2Jred\nline\x7f"] = self.x
            f["caf\u00e9"] = self.x
            f["c1\u009bx"] = self.x
            f.create_dataset(b"raw\xff\xfe", data=self.x)  # not UTF-8
        # verify names a dataset when a chunk of it is bad: break one chunk
        # of each, so every name is printed
        path_bad = self.p("shown-bad.h5")
        with h5py.File(path_bad, "w") as f:
            for name in ("ok\x1b[2Jred\nline\x7f", "caf\u00e9", "c1\u009bx", b"raw\xff\xfe"):
                d = f.create_dataset(name, data=self.x, chunks=(16, self.x.shape[1]),
                                     compression="gzip")
                d.id.write_direct_chunk((0, 0), b"not a gzip stream")
        for cmd, rc in ((("info", path), 0), (("verify", path_bad), 1)):
            with self.subTest(cmd=cmd[0]):
                r = subprocess.run([DSVIEW, *cmd], capture_output=True)
                out = r.stdout + r.stderr
                self.assertEqual(r.returncode, rc, out)
                text = out.decode("utf-8")  # never bytes that are not UTF-8
                self.assertFalse([c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0],
                                 repr(text))
                self.assertIn("ok\\x1b[2Jred\\x0aline\\x7f", text)
                self.assertIn("c1\\xc2\\x9bx", text)
                self.assertIn("caf\u00e9", text)
                self.assertIn("raw\\xff\\xfe", text)
        # JSON: control characters are JSON's to escape, so those names come
        # back exact; a name that is not UTF-8 shows its bytes as \xNN and
        # keeps its "name" key (jansson takes UTF-8 only)
        r = subprocess.run([DSVIEW, "info", "--json", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        names = sorted(d["name"] for d in json.loads(r.stdout)["datasets"])
        self.assertEqual(names, ["/c1\u009bx", "/caf\u00e9", "/ok\x1b[2Jred\nline\x7f",
                                 "/raw\\xff\\xfe"])
