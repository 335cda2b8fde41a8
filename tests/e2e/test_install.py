"""make install and the mount helper: mount -t fuse.dsview (through
the installed link /sbin/mount.fuse.dsview, or through fuse3's mount.fuse3
and dsview on PATH), the man page rendered by man -l, bash completion, the
shared library (a program built on the installed headers alone, linked to
libdsview.so, and the symbols it exports).

mount(8) looks for helpers only in /sbin and runs them with its own PATH, so
the tests that go through mount(8) run in a private mount namespace
(unshare -m) where a directory of this build's links is bind-mounted over
/usr/sbin or /usr/local/bin: the machine's own directories are untouched."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

from common import DSVIEW, E2E, mounted, run
from refs import reference

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


class Install(E2E):
    def test_make_install_destdir(self):
        stage = self.p("stage")
        r = subprocess.run(["make", "-s", "-C", REPO, "install", f"DESTDIR={stage}", "PREFIX=/usr",
                            f"BIN={os.path.abspath(DSVIEW)}"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.access(os.path.join(stage, "usr/bin/dsview"), os.X_OK))
        self.assertEqual(os.readlink(os.path.join(stage, "sbin/mount.fuse.dsview")), "/usr/bin/dsview")
        man = os.path.join(stage, "usr/share/man/man1/dsview.1")
        comp = os.path.join(stage, "usr/share/bash-completion/completions/dsview")
        self.assertTrue(os.path.exists(os.path.join(stage, "usr/include/dsview/fs.h")))
        # the Python package, where Debian's Python looks for PREFIX=/usr
        pkg = os.path.join(stage, "usr/lib/python3/dist-packages/dsview")
        self.assertTrue(os.path.exists(os.path.join(pkg, "__init__.py")))
        self.assertTrue(os.path.exists(os.path.join(pkg, "py.typed")), "its type hints (PEP 561)")
        r = subprocess.run([sys.executable, "-c", "import dsview.torch, dsview; print(dsview.__file__)"],
                           capture_output=True, text=True, cwd=stage,
                           env={**os.environ, "PYTHONPATH": os.path.dirname(pkg)})
        self.assertEqual((r.returncode, r.stdout.strip()), (0, os.path.join(pkg, "__init__.py")),
                         r.stderr)
        if shutil.which("man"):
            r = subprocess.run(["man", "--warnings", "-l", man], capture_output=True, text=True,
                               env={**os.environ, "MANWIDTH": "80", "MANPAGER": "cat"})
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr, "")  # no groff warnings
            for want in ("NAME", "dsview mount", "MOUNT HELPER", "EXIT STATUS", "status"):
                self.assertIn(want, r.stdout)
        r = subprocess.run(["bash", "-c", f"source {comp}; COMP_WORDS=(dsview mount --log-l); "
                            "COMP_CWORD=2; _dsview; echo ${COMPREPLY[@]}"],
                           capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), "--log-level", r.stderr)
        self.check_installed_headers(os.path.join(stage, "usr/include"))

    # What a library user calls, through the installed headers alone; and
    # what only the library or its tests use is not declared there.
    USER_PROGRAM = """
#include <dsview/codec.h>
#include <dsview/dsview.h>
#include <dsview/fs.h>
#include <dsview/h5info.h>
#include <dsview/pack.h>
#include <dsview/source.h>
#include <dsview/view.h>
#include <dsview/xform.h>

int main(int argc, char **argv)
{
	dsv_errbuf eb = { 0 };
	dsv_source *s;
	dsv_manifest *m;
	dsv_pack_opts po;
	dsv_fs_opts fo = { 0 };
	dsv_fs *fs;
	dsv_h5_desc d;
	dsv_chunk_ref ref;
	static float out[1 << 16];
	if (argc < 3)
		return 2;
	if (dsv_source_open(argv[1], &s, &eb) == 0) {
		if (dsv_source_get_info(s)->nchunks && dsv_source_chunk(s, 0, &ref) == 0)
			dsv_source_decode_chunk(s, &ref, out, sizeof(out), NULL);
		dsv_source_close(s);
	}
	if (dsv_h5_describe(argv[1], "/x", &d, &eb) == 0)
		dsv_h5_desc_free(&d);
	dsv_pack_opts_init(&po);
	if (dsv_manifest_load(argv[2], &m, &eb) == 0) {
		dsv_view_info vi;
		if (m->nviews)
			dsv_view_get_info(m->views[0], &vi);
		if (dsv_fs_mount(m, "/mnt/x", &fo, &fs, &eb) == 0)
			dsv_fs_destroy(fs);
	}
	return dsv_strerror(eb.code)[0] == 0 || dsv_xform_kernel_name()[0] == 0;
}
"""

    def check_installed_headers(self, inc):
        src = self.p("user.c")
        with open(src, "w") as f:
            f.write(self.USER_PROGRAM)
        r = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", inc, "-c", src,
                            "-o", self.p("user.o")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = ""
        for name in sorted(os.listdir(os.path.join(inc, "dsview"))):
            with open(os.path.join(inc, "dsview", name)) as f:
                text += f.read()
        for private in ("dsv_xform_force_kernel", "dsv_h5_ro_open_hook", "dsv_source_pread",
                        "dsv_source_read_stored", "dsv_source_read_lz4_part",
                        "dsv_source_read_elems", "dsv_range_",
                        "dsv_view_log_", "dsv_lzf_encode", "dsv_zlib_encode",
                        "dsv_lz4_sized_encode", "dsv_gpu_emu", "dsv_knob", "dsv_mul_u64"):
            self.assertNotIn(private, text)


class SharedLibrary(E2E):
    """libdsview.so as make install stages it: the soname and its links, a
    program built against the installed headers alone and linked to it,
    and nothing exported but the public API."""
    installed = False

    # Opens a .npy through the public source API, prints what it found and
    # the sum of every element, decoded chunk by chunk.
    PROGRAM = r"""
#include <dsview/dsview.h>
#include <dsview/source.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	dsv_errbuf eb = { 0 };
	dsv_source *s;
	long long sum = 0;
	if (argc < 3)
		return 2;
	if (dsv_source_open(argv[2], &s, &eb) == 0)
		return 3;
	printf("missing: %d %s\n", eb.code, dsv_strerror(eb.code));
	if (dsv_source_open(argv[1], &s, &eb) != 0) {
		fprintf(stderr, "%s\n", eb.msg);
		return 1;
	}
	const dsv_source_info *in = dsv_source_get_info(s);
	printf("%s %s %s", DSV_VERSION_STRING, dsv_source_kind_name(in->kind),
	       dsv_dtype_name(in->dtype));
	for (int i = 0; i < in->ndim; i++)
		printf(" %llu", (unsigned long long)in->shape[i]);
	for (uint64_t c = 0; c < in->nchunks; c++) {
		dsv_chunk_ref ref;
		if (dsv_source_chunk(s, c, &ref) != 0)
			return 4;
		int16_t *buf = malloc(ref.raw_size);
		if (!buf || dsv_source_decode_chunk(s, &ref, buf, ref.raw_size, &eb) != 0)
			return 5;
		for (uint64_t i = 0; i < ref.nelems; i++)
			sum += buf[i];
		free(buf);
	}
	printf(" sum %lld\n", sum);
	dsv_source_close(s);
	return 0;
}
"""

    def setUp(self):
        super().setUp()
        self.stage = self.p("stage")
        if not type(self).installed:  # once for the class
            # the library as a user installs it: not the sanitized one a
            # `make test SANITIZE=...` run would pass down in MAKEFLAGS
            # (a program without the sanitizer's runtime cannot load it)
            env = {k: v for k, v in os.environ.items()
                   if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SANITIZE")}
            r = subprocess.run(["make", "-s", "-C", REPO, "install", f"DESTDIR={self.stage}",
                                "PREFIX=/usr", f"BIN={os.path.abspath(DSVIEW)}"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            type(self).installed = True
        self.lib = os.path.join(self.stage, "usr/lib")
        self.inc = os.path.join(self.stage, "usr/include")

    def version(self):
        with open(os.path.join(self.inc, "dsview/dsview.h")) as f:
            text = f.read()
        return [re.search(rf"#define DSV_VERSION_{p} (\d+)", text).group(1)
                for p in ("MAJOR", "MINOR", "PATCH")]

    def build(self, text, name):
        """Compiles text against the installed headers alone and links it to
        the staged libdsview.so; returns (CompletedProcess, executable)."""
        src, exe = self.p(name + ".c"), self.p(name)
        with open(src, "w") as f:
            f.write(text)
        r = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", self.inc, src,
                            "-L", self.lib, f"-Wl,-rpath,{self.lib}", "-ldsview", "-o", exe],
                           capture_output=True, text=True)
        return r, exe

    def exported(self, path):
        r = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {line.split()[-1] for line in r.stdout.splitlines()}

    def test_soname_and_links(self):
        major, minor, patch = self.version()
        real = f"libdsview.so.{major}.{minor}.{patch}"
        self.assertTrue(os.path.isfile(os.path.join(self.lib, real)))
        self.assertFalse(os.path.islink(os.path.join(self.lib, real)))
        self.assertEqual(os.readlink(os.path.join(self.lib, f"libdsview.so.{major}")), real)
        self.assertEqual(os.readlink(os.path.join(self.lib, "libdsview.so")), f"libdsview.so.{major}")
        self.assertTrue(os.path.isfile(os.path.join(self.lib, "libdsview.a")))
        r = subprocess.run(["readelf", "-d", os.path.join(self.lib, real)], capture_output=True,
                           text=True)
        self.assertIn(f"Library soname: [libdsview.so.{major}]", r.stdout)

    def test_program_on_the_installed_library(self):
        x = (np.arange(3000, dtype=np.int16) - 1000).reshape(300, 10)
        np.save(self.p("x.npy"), x)
        r, exe = self.build(self.PROGRAM, "user_so")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True)
        self.assertIn("Shared library: [libdsview.so.%s]" % self.version()[0], r.stdout)
        # the loader finds the staged library through the rpath alone
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        r = subprocess.run([exe], capture_output=True, text=True,
                           env={**env, "LD_TRACE_LOADED_OBJECTS": "1"})
        self.assertIn(f"=> {self.lib}/libdsview.so.", r.stdout)
        r = subprocess.run([exe, self.p("x.npy"), self.p("missing.npy")], capture_output=True,
                           text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        self.assertEqual(r.stdout, "missing: -9 not found\n%s npy int16 300 10 sum %d\n" % (
            ".".join(self.version()), int(x.sum())))

    def test_only_the_public_api_is_exported(self):
        exported = self.exported(os.path.join(self.lib, "libdsview.so"))
        text = ""
        for name in sorted(os.listdir(os.path.join(self.inc, "dsview"))):
            with open(os.path.join(self.inc, "dsview", name)) as f:
                text += f.read()
        public = set(re.findall(r"\b(dsv_\w+)\s*\(", text))
        self.assertLessEqual(exported, public)
        for name in ("dsv_strerror", "dsv_source_open", "dsv_manifest_load", "dsv_fs_mount",
                     "dsv_pack", "dsv_xform_kernel_name"):
            self.assertIn(name, exported)
        # the library's own functions, global in the archive, stay inside
        r = subprocess.run(["nm", "--defined-only", "-g", os.path.join(self.lib, "libdsview.a")],
                           capture_output=True, text=True)
        private = {f[2] for f in (line.split() for line in r.stdout.splitlines())
                   if len(f) == 3 and f[1] == "T" and f[2] not in public}
        self.assertIn("dsv_source_pread", private)
        self.assertEqual(exported & private, set())
        # and a program that calls one does not link
        r, _ = self.build("int dsv_source_pread(const void *s, void *buf, unsigned long n,\n"
                          "\t\t     unsigned long long off);\n"
                          "int main(void) { return dsv_source_pread(0, 0, 0, 0); }\n",
                          "private_so")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("undefined reference to `dsv_source_pread'", r.stderr)

class MountHelper(E2E):
    def setUp(self):
        super().setUp()
        self.x = np.arange(3000, dtype=np.uint8).reshape(300, 10)
        np.save(self.p("a.npy"), self.x)
        self.mp = self.p("mnt-helper")
        os.makedirs(self.mp, exist_ok=True)

    def in_namespace(self, over, links, mount_cmd):
        """Runs mount_cmd in a private mount namespace where directory over
        holds only links (name -> target); copies a.dat out, records
        findmnt and status, unmounts. Returns the CompletedProcess."""
        d = self.p("links-" + os.path.basename(over))
        os.makedirs(d, exist_ok=True)
        for name, target in links.items():
            if os.path.lexists(os.path.join(d, name)):
                os.unlink(os.path.join(d, name))
            os.symlink(target, os.path.join(d, name))
        out = self.p("out")
        os.makedirs(out, exist_ok=True)
        script = f"""set -e
trap 'umount -l {self.mp} 2>/dev/null || true' EXIT
mount --bind {d} {over}
{mount_cmd}
findmnt -n -o SOURCE,FSTYPE,OPTIONS {self.mp} > {out}/findmnt.txt
{DSVIEW} status --json {self.mp} > {out}/status.json
cp {self.mp}/a.dat {out}/a.dat
{DSVIEW} umount {self.mp}
"""
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                              capture_output=True, text=True, timeout=60)

    def check_out(self, r, log):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(self.p("out/findmnt.txt")) as f:
            source, fstype, opts = f.read().split()
        self.assertEqual(source, os.path.realpath(self.p("a.npy")))
        self.assertEqual(fstype, "fuse.dsview")
        self.assertIn("allow_other", opts.split(","))
        self.assertIn("ro", opts.split(","))
        with open(self.p("out/a.dat"), "rb") as f:
            self.assertEqual(f.read(), reference(self.x).tobytes())
        with open(self.p("out/status.json")) as f:
            st = json.load(f)[0]
        self.assertEqual(st["log"], log)
        self.assertFalse(mounted(self.mp))  # the namespace's mount never showed here
        with open(log) as f:
            text = f.read()
        self.assertNotIn("error", text)
        return st

    def test_mount_t_through_the_installed_link(self):
        # /sbin/mount.fuse.dsview -> dsview, as make install links it; fstab's
        # and systemd's own options are dropped, dsview's own are its options
        log = self.p("link.log")
        r = self.in_namespace("/usr/sbin", {"mount.fuse.dsview": os.path.abspath(DSVIEW)},
                              f"mount -t fuse.dsview {self.p('a.npy')} {self.mp} -o "
                              f"defaults,noauto,nofail,_netdev,x-systemd.automount,allow_other,"
                              f"cache_size=64M,log_level=info,log={log},"
                              f"disk_cache={self.p('dcache')},disk_cache_size=32M,"
                              f"index_cache={self.p('icache')}")
        st = self.check_out(r, log)
        self.assertEqual(st["cache_budget"], 64 << 20)
        self.assertEqual(st["disk_cache_size"], 32 << 20)
        self.assertEqual(len(glob.glob(os.path.join(self.p("icache"), "index-*.dsvidx"))), 1)

    def test_mount_t_through_mount_fuse3(self):
        # no link: mount(8) falls back to fuse3's mount.fuse3, which runs
        # "dsview SOURCE MOUNTPOINT -o OPTS" from its PATH (/usr/local/bin)
        if not os.path.exists("/sbin/mount.fuse3") or os.path.exists("/sbin/mount.fuse.dsview"):
            self.skipTest("needs mount.fuse3 and no installed mount.fuse.dsview")
        log = self.p("fuse3.log")
        r = self.in_namespace("/usr/local/bin", {"dsview": os.path.abspath(DSVIEW)},
                              f"mount -t fuse.dsview {self.p('a.npy')} {self.mp} "
                              f"-o ro,allow_other,log={log}")
        self.check_out(r, log)

    def test_helper_called_directly(self):
        link = self.p("mount.fuse.dsview")
        if not os.path.lexists(link):
            os.symlink(os.path.abspath(DSVIEW), link)
        log = self.p("direct.log")
        r = subprocess.run([link, self.p("a.npy"), self.mp, "-n", "-o", f"rw,allow_other,log={log}"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            self.assertTrue(mounted(self.mp))
            with open(os.path.join(self.mp, "a.dat"), "rb") as f:
                self.assertEqual(f.read(), reference(self.x).tobytes())
        finally:
            self.assertEqual(run("umount", self.mp).returncode, 0)
        # -f: everything but the mount
        r = subprocess.run([link, self.p("a.npy"), self.mp, "-f", "-o", "allow_other"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(mounted(self.mp))
        r = subprocess.run([link, self.p("a.npy"), self.mp, "-q"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("unknown option '-q'", r.stderr)
        # a dsview option with a bad value is the mount's own one-line error
        r = subprocess.run([link, self.p("a.npy"), self.mp, "-o", "readahead=3K"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--readahead '3K'", r.stderr)
        self.assertFalse(mounted(self.mp))

    def test_mount_fuse3_form(self):
        # what mount.fuse3 runs: dsview SOURCE MOUNTPOINT -o OPTS
        log = self.p("form.log")
        r = run(self.p("a.npy"), self.mp, "-o", f"rw,log={log}")
        self.assertEqual(r.returncode, 0, r.stderr)
        try:
            self.assertTrue(mounted(self.mp))
        finally:
            self.assertEqual(run("umount", self.mp).returncode, 0)
        r = run("mnut", self.mp)  # a mistyped command is not a mount
        self.assertEqual(r.returncode, 1)
        self.assertIn("unknown command 'mnut'", r.stderr)
