"""dsview.Mount: `dsview mount` from Python, unmounted whatever happens."""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np

from . import _views
from ._views import MountError

LIVE = {}  # id -> Mount: unmounted at interpreter exit if still mounted


def dsview_binary():
    """$DSVIEW, else dsview on PATH, else the build of this source tree."""
    env = os.environ.get("DSVIEW")
    if env:
        return env
    found = shutil.which("dsview")
    if found:
        return found
    tree = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "dsview")
    if os.path.exists(tree):
        return os.path.normpath(tree)
    raise FileNotFoundError("dsview: no dsview program (install it, or set DSVIEW to its path)")


def _option_args(options):
    """mount's long options from keywords: cache_size="1G" -> --cache-size 1G,
    strict=True -> --strict, o="allow_other" -> -o allow_other."""
    args = []
    for k, v in options.items():
        if v is None or v is False:
            continue
        flag = "-o" if k == "o" else "--" + k.replace("_", "-")
        args += [flag] if v is True else [flag, str(v)]
    return args


def status_log(mp):
    """The daemon log of mountpoint mp as `dsview status --json` reports it."""
    try:
        r = subprocess.run([dsview_binary(), "status", "--json"], capture_output=True,
                           text=True, timeout=10)
        for m in json.loads(r.stdout or "[]"):
            if isinstance(m, dict) and os.path.realpath(str(m.get("mountpoint"))) == \
                    os.path.realpath(mp):
                return m.get("log")
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return None


class Mount:
    """Mounts source (a manifest, a file or a directory) and returns once the
    mount answers. With no mountpoint, a fresh temporary directory is used
    (and removed afterwards). options are `dsview mount`'s long options
    (cache_size="2G", threads=8, dtype="bfloat16", strict=True, o="..."),
    log= the daemon's log file (default: one beside a temporary
    mountpoint, or in the temporary directory). A failed mount raises
    MountError with the CLI's one-line reason.

    Use as a context manager, or call .close(): the mount is unmounted on
    leaving the block, on any exception or KeyboardInterrupt, and at
    interpreter exit if still mounted."""

    def __init__(self, source: _views.PathLike, mountpoint: Optional[_views.PathLike] = None,
                 **options: Any):
        self.source = os.fspath(source)
        self._tmp: Optional[str] = tempfile.mkdtemp(prefix="dsview-")
        self.mountpoint = os.fspath(mountpoint) if mountpoint else os.path.join(self._tmp, "mnt")
        self.log = os.fspath(options.pop("log", None) or os.path.join(self._tmp, "dsview.log"))
        self.binary = dsview_binary()
        self.pid, self.died, self.owner = None, False, os.getpid()
        try:
            self._mount(_option_args(options))
        except BaseException:
            self.close()  # a KeyboardInterrupt during mount leaves nothing
            raise

    def _mount(self, args):
        r = subprocess.run([self.binary, "mount", "--log", self.log, *args, self.source,
                            self.mountpoint], capture_output=True, text=True)
        if r.returncode != 0:
            line = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            raise MountError(f"{self.source}: mount failed: {line}")
        LIVE[id(self)] = self
        self.pid = self.stats()["pid"]

    def __enter__(self) -> Mount:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def path(self, name: str = "") -> str:
        return os.path.join(self.mountpoint, name)

    @property
    def views(self) -> List[str]:
        """Every view's name (V of V.dat), groups as relative paths."""
        out = []
        for d, _, files in os.walk(self.mountpoint):
            rel = os.path.relpath(d, self.mountpoint)
            out += [os.path.normpath(os.path.join(rel, f[:-5])) for f in files
                    if f.endswith(".json") and not f.startswith(".")]
        return sorted(out)

    def open(self, name: str) -> np.memmap:
        """dsview.open of a view of this mount."""
        return _views.open_view(self.path(name))

    def stats(self) -> Dict[str, Any]:
        """The daemon's counters (/.stats.json) as a dict; MountError naming
        the daemon's log if it is gone."""
        try:
            with open(self.path(".stats.json")) as f:
                return json.load(f)
        except OSError as e:
            self.died = True
            raise MountError(e.errno, f"{self.mountpoint}: the dsview daemon is gone "
                             f"({e.strerror}); its log: {self.log}") from e

    def close(self) -> None:
        """Unmounts (dsview umount, waiting for the daemon; a lazy detach if
        that fails) and removes the temporary directory. Safe to call twice."""
        LIVE.pop(id(self), None)
        if _views.mount_of(self.mountpoint)[0] == os.path.realpath(self.mountpoint):
            r = subprocess.run([self.binary, "umount", self.mountpoint], capture_output=True)
            if r.returncode != 0:
                subprocess.run([self.binary, "umount", "-z", self.mountpoint],
                               capture_output=True)
        if self._tmp and not self.died:  # a dead daemon's log stays to be read
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __repr__(self):
        return f"dsview.Mount({self.source!r}, {self.mountpoint!r})"


@atexit.register
def _close_all():
    """At exit of the process that mounted (a forked child that exits
    normally leaves its parent's mounts alone)."""
    for m in list(LIVE.values()):
        if m.owner == os.getpid():
            m.close()
