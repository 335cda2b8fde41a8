"""dsview.Mount from Python: it returns once the mount answers, lists the
views, reads the stats, and unmounts on leaving its block, on an exception,
on KeyboardInterrupt (SIGINT) and at interpreter exit, leaving nothing
mounted and no daemon; a failed mount and a daemon that died raise with the
reason. The package imports and reads without torch, and `pip install
./python` works with no network into a temporary prefix."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

from common import DSVIEW, E2E, PYTHON_DIR, alive, dsview_pids_for, mounted
from refs import reference

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402


class PyMount(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        os.environ["DSVIEW"] = os.path.abspath(DSVIEW)  # the build under test
        cls.x = np.random.default_rng(2710).integers(0, 256, (200, 6, 5), dtype=np.uint8)
        np.save(os.path.join(cls.tmp, "x.npy"), cls.x)
        cls.ini = os.path.join(cls.tmp, "m.ini")
        with open(cls.ini, "w") as f:
            f.write("[v]\nsource = x.npy\nscale = 0.5\n[w]\nsource = x.npy\ndtype = float16\n")

    def gone(self, m, pid):
        """Nothing left of Mount m whose daemon was pid."""
        self.assertFalse(mounted(m.mountpoint), "still mounted")
        for _ in range(40):
            if not alive(pid):
                break
            time.sleep(0.05)
        self.assertFalse(alive(pid), "daemon still running")

    def test_context_manager(self):
        with dsview.Mount(self.ini, threads=4, cache_size="64M") as m:
            self.assertTrue(mounted(m.mountpoint))
            self.assertEqual(m.views, ["v", "w"])
            st = m.stats()
            self.assertEqual(st["views"], 2)
            a = m.open("v.npy")
            np.testing.assert_array_equal(np.array(a), reference(self.x, scale=0.5))
            pid, tmp = m.pid, os.path.dirname(m.mountpoint)
        # a memmap still open at exit: the mount is detached all the same,
        # and the daemon ends with the last reference
        self.assertFalse(mounted(m.mountpoint), "still mounted")
        del a
        self.gone(m, pid)
        self.assertFalse(os.path.exists(tmp), "temporary mountpoint left")
        m.close()  # twice is fine

    def test_exception_and_close(self):
        with self.assertRaisesRegex(RuntimeError, "boom"):
            with dsview.Mount(self.ini, mountpoint=self.p("mnt-given")) as m:
                pid = m.pid
                raise RuntimeError("boom")
        self.gone(m, pid)
        self.assertTrue(os.path.isdir(self.p("mnt-given")), "a given mountpoint stays")
        m = dsview.Mount(self.ini)
        pid = m.pid
        m.close()
        self.gone(m, pid)

    def script(self, body):
        path = self.p("s.py")
        with open(path, "w") as f:
            f.write(f"import sys, time\nsys.path.insert(0, {PYTHON_DIR!r})\nimport dsview\n"
                    + textwrap.dedent(body))
        return subprocess.Popen([sys.executable, path, self.ini], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def test_sigint_and_exit(self):
        p = self.script("""\
            with dsview.Mount(sys.argv[1]) as m:
                print(m.mountpoint, m.pid, flush=True)
                time.sleep(60)
            """)
        mp, pid = p.stdout.readline().split()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        self.assertIn("KeyboardInterrupt", err)
        self.assertFalse(mounted(mp), "SIGINT left the mount")
        self.assertEqual(dsview_pids_for(mp), [])
        self.assertFalse(alive(int(pid)))
        # a plain object, never closed: unmounted at interpreter exit
        p = self.script("""\
            m = dsview.Mount(sys.argv[1])
            print(m.mountpoint, m.pid, flush=True)
            """)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        mp, pid = out.split()
        self.assertFalse(mounted(mp), "exit left the mount")
        self.assertFalse(alive(int(pid)))

    def test_failed_mount_and_dead_daemon(self):
        bad = self.p("bad.ini")
        with open(bad, "w") as f:
            f.write("[v]\nsource = x.npy\nscael = 2\n")
        with self.assertRaises(dsview.MountError) as cm:
            dsview.Mount(bad, mountpoint=self.p("mnt-bad"))
        msg = str(cm.exception)
        self.assertRegex(msg, r"bad\.ini: mount failed: dsview: .*bad\.ini:3: .*scael")
        self.assertFalse(mounted(self.p("mnt-bad")))
        m = dsview.Mount(self.ini)
        try:
            os.kill(m.pid, signal.SIGKILL)
            time.sleep(0.2)
            with self.assertRaises(dsview.MountError) as cm:
                m.stats()
            self.assertIn(f"its log: {m.log}", str(cm.exception))
            with self.assertRaises(dsview.MountError) as cm:  # an OSError
                dsview.open(m.path("v.npy"))
            self.assertIn(f"is gone; its log: {m.log}", str(cm.exception))
        finally:
            m.close()
        self.assertFalse(mounted(m.mountpoint))
        self.assertTrue(os.path.exists(m.log), "a dead daemon's log is kept")
        shutil.rmtree(os.path.dirname(m.log))
        # a mount made by the CLI: dsview status knows no log of a dead daemon
        with self.mount(self.ini, expect_exit=True) as cm_mount:
            os.kill(cm_mount.pid, signal.SIGKILL)
            time.sleep(0.2)
            with self.assertRaises(dsview.MountError) as cm:
                dsview.open(cm_mount.path("w"))
            self.assertIn(f"w: the dsview daemon of {cm_mount.mp} is gone; 'dsview umount "
                          f"{cm_mount.mp}' detaches it", str(cm.exception))

    def test_import_without_torch(self):
        code = textwrap.dedent(f"""\
            import sys
            sys.modules["torch"] = None  # import torch raises ImportError
            sys.path.insert(0, {PYTHON_DIR!r})
            import dsview
            with dsview.Mount(sys.argv[1]) as m:
                n = sum(len(b) for b in dsview.batches(m.path("v"), batch_size=64, seed=1))
                print(n, dsview.ArraySource(m.path("w.npy"))[3].dtype)
            try:
                import dsview.torch
            except ImportError:
                print("no dsview.torch")
            """)
        r = subprocess.run([sys.executable, "-c", code, self.ini], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split("\n")[:2], ["200 float16", "no dsview.torch"])

    def test_pip_install_offline(self):
        src, prefix = self.p("pkg"), self.p("prefix")
        shutil.copytree(PYTHON_DIR, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                       "__pycache__"))
        env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "http_proxy": "http://0.0.0.0:9", "https_proxy": "http://0.0.0.0:9"}
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                            "--no-index", "--no-deps", "--prefix", prefix, src],
                           capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        inits = [os.path.join(d, "__init__.py") for d, _, _ in os.walk(prefix)
                 if os.path.basename(d) == "dsview"]
        self.assertEqual(len(inits), 1, inits)
        site = os.path.dirname(os.path.dirname(inits[0]))
        r = subprocess.run([sys.executable, "-S", "-c", "import dsview, numpy; print(dsview.__file__)"],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": site + ":/usr/lib/python3/dist-packages"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), inits[0])
        # the installed package reads in-process through the installed
        # library, found by the loader's path (here LD_LIBRARY_PATH)
        lib = os.path.join(prefix, "libdir")
        os.makedirs(lib)
        so = os.path.realpath(os.path.join(PYTHON_DIR, "..", "build", "libdsview.so.0"))
        shutil.copy(so, os.path.join(lib, "libdsview.so.0"))
        np.save(self.p("x.npy"), np.arange(12, dtype=np.int16).reshape(4, 3))
        code = f"import dsview; print(dsview.open({self.p('x.npy')!r})[[3, 0]].tolist())"
        env = {k: v for k, v in os.environ.items() if k != "DSVIEW_LIBRARY"}
        env["PYTHONPATH"] = site + ":/usr/lib/python3/dist-packages"
        r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           env={**env, "LD_LIBRARY_PATH": lib})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[[9.0, 10.0, 11.0], [0.0, 1.0, 2.0]]")
        # and says how to get one when it cannot
        r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                           env={**env, "DSVIEW_LIBRARY": self.p("nope.so")})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryNotFound", r.stderr)
        self.assertIn("make install", r.stderr)
        self.assertIn("DSVIEW_LIBRARY", r.stderr)
