"""A view of a dsview mount: where its files are, what its .json says, and
its bytes as a read-only numpy.memmap."""
from __future__ import annotations

import errno
import json
import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

import numpy as np

if TYPE_CHECKING:
    from ._reader import Array

# the output dtypes a view serves (its .json "dtype") as numpy reads them
_NUMPY = {
    "float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "float64": "<f8",
    "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
    "int32": "<i4", "uint32": "<u4", "int64": "<i8", "uint64": "<u8",
}
_EXTS = (".npy", ".dat", ".json")
PathLike = Union[str, "os.PathLike[str]"]


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype a view's output dtype (its .json "dtype") is read as,
    whatever is installed: bfloat16 as its bits, uint16 (numpy has no
    bfloat16; the V.npy header says <u2 too), with .dsview_dtype saying
    "bfloat16" on what dsview returns."""
    return np.dtype(_NUMPY[name])


class MountError(OSError):
    """A mount that failed (the CLI's one-line reason) or whose daemon died
    (the daemon's log path)."""


def _unescape(s):
    out, i = "", 0
    while i < len(s):
        if s[i] == "\\" and s[i + 1:i + 4].isdigit():
            out += chr(int(s[i + 1:i + 4], 8))
            i += 4
        else:
            out += s[i]
            i += 1
    return out


def mount_of(path: PathLike) -> Tuple[str, str]:
    """(mountpoint, fstype) of the mount holding path (its nearest
    existing parent when path does not exist)."""
    p = os.path.realpath(path)
    best = ("/", "")
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            mp = _unescape(left.split()[4])
            if (p == mp or p.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best[0]):
                best = (mp, right.split()[0] if right else "")
    return best


def on_mount(path: PathLike) -> bool:
    """Whether path lies on a dsview mount."""
    return mount_of(path)[1] == "fuse.dsview"


class View:
    """A view's files: base is the path without extension; data is the file
    the caller named (.npy or .dat; .dat for a bare name)."""

    def __init__(self, path: PathLike):
        path = os.fspath(path)
        base, ext = os.path.splitext(path)
        if ext not in _EXTS:
            base, ext = path, ".dat"
        self.base = base
        self.data = base + (".dat" if ext == ".json" else ext)
        if not on_mount(path):
            raise ValueError(f"{path}: not on a dsview mount")
        try:
            with open(base + ".json") as f:
                self.meta = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"{path}: no such view ({base}.json is missing)") from None
        except OSError as e:
            raise _mount_error(path, e) from e
        self.shape = tuple(self.meta["shape"])
        self.dtype = self.meta["dtype"]
        self.rows = self.shape[0] if self.shape else 0

    @property
    def offset(self):
        return self.meta["npy_header_bytes"] if self.data.endswith(".npy") else 0


def _mount_error(path, e):
    """The error of a read on a mount: a MountError (an OSError) when its
    daemon is gone, saying so and naming the daemon's log where `dsview
    status` knows it; e itself otherwise."""
    if e.errno not in (errno.ENOTCONN, errno.ECONNABORTED):
        return e
    mp = mount_of(path)[0]
    log = _log_of(mp)
    where = f"; its log: {log}" if log else f"; 'dsview umount {mp}' detaches it"
    return MountError(e.errno, f"{path}: the dsview daemon of {mp} is gone{where}")


def _log_of(mp):
    """The daemon log of mountpoint mp as the Mount objects of this process
    or `dsview status --json` know it, or None."""
    from . import _mount  # here: _mount imports this module
    for m in list(_mount.LIVE.values()):
        if os.path.realpath(m.mountpoint) == os.path.realpath(mp):
            return m.log
    return _mount.status_log(mp)


def info(path: PathLike) -> Dict[str, Any]:
    """The view's .json as a dict (shape, dtype, attrs, dimension_names,
    sources, transform, ...). path: V.npy, V.dat, V.json or V under a mount."""
    return View(path).meta


def open_any(source: PathLike, view: Optional[str] = None,
             **options: Any) -> Union[np.memmap, Array]:
    """A view as an array. source on a dsview mount (V.npy, V.dat, V, or
    the mountpoint with view naming one): its read-only numpy.memmap (see
    open_view). Anything else `dsview mount` takes (a manifest, a file, a
    directory, a Zarr array or group, an s3:// or https:// URL): view
    (optional when there is one) read in this process, with no mount, as a
    dsview.Array; options as dsview.Reader takes them."""
    path = os.fspath(source)
    if "://" not in path and on_mount(path):
        if options:
            raise TypeError(f"{path}: {', '.join(options)} apply to a source read "
                            "in-process; a mount was set up with its own")
        return open_view(os.path.join(path, view) if view is not None else path)
    from . import _reader  # here: it loads libdsview.so, which a mount's reader needs not
    return _reader.open_source(path, view, **options)


def open_view(path: PathLike) -> np.memmap:
    """A read-only numpy.memmap of a view (V.npy, V.dat or the name V under a
    mount) with the shape and dtype of its .json. bfloat16 views come back
    as their bits, uint16 (numpy_dtype); every memmap has .dsview_dtype,
    "bfloat16" for those."""
    v = View(path)
    dt = numpy_dtype(v.dtype)
    try:
        if 0 in v.shape:  # nothing to map: an empty array of the same kind
            a = np.zeros(v.shape, dt).view(np.memmap)
            a.flags.writeable = False
        else:
            a = np.memmap(v.data, dt, "r", shape=v.shape, offset=v.offset)
    except OSError as e:
        raise _mount_error(v.data, e) from e
    a.dsview_dtype = v.dtype  # type: ignore[attr-defined]
    return a
