"""Sampler hints: tell the mount which rows a reader will read next, so it
makes them and stores them in the page cache of the view's file before the
reader faults them (docs/performance.md, "Sampler hints").

The ioctl is DSV_IOC_PREFETCH of include/dsview/fs.h: on an open V.dat or
V.npy, struct dsv_prefetch_rows { u32 n; u32 flags; i64 rows[2046]; }.
Pages are stored per file: hint the file the reader maps."""
from __future__ import annotations

import fcntl
import os
import struct
from collections import deque
from typing import Dict, Sequence, Tuple, Union

import numpy as np

from . import _views

PREFETCH_MAX = 2046  # rows per ioctl (dsview/fs.h DSV_PREFETCH_MAX)
_SIZE = 8 + 8 * PREFETCH_MAX
DSV_IOC_PREFETCH = (1 << 30) | (_SIZE << 16) | (ord("d") << 8) | 1  # _IOW('d', 1, ...)


def _rows_array(rows, nrows, what):
    """rows as int64, checked whole against [0, nrows) before anything is sent."""
    a = np.asarray(rows)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{what}: hint rows must be integers, not {a.dtype}")
    a = a.astype("<i8", copy=False).ravel()
    if a.size and (a.min() < 0 or a.max() >= nrows):
        bad = a[(a < 0) | (a >= nrows)][0]
        raise IndexError(f"{what}: row {int(bad)} out of range: the view has {nrows} rows "
                         f"(nothing was hinted)")
    return a


def _send(fd, rows, what):
    """The ioctl, PREFETCH_MAX rows at a time (Python's fcntl.ioctl copies at
    most 1024 bytes from an immutable buffer, hence the bytearray)."""
    buf = bytearray(_SIZE)
    for i in range(0, len(rows), PREFETCH_MAX):
        part = rows[i:i + PREFETCH_MAX]
        struct.pack_into("<II", buf, 0, len(part), 0)
        buf[8:8 + 8 * len(part)] = part.tobytes()
        try:
            fcntl.ioctl(fd, DSV_IOC_PREFETCH, buf, True)
        except OSError as e:
            raise _views._mount_error(what, e) from e


def _data_path(path_or_fd):
    """The file a hint goes to: a path, a descriptor (its /proc link) or an
    array that np.memmap or dsview.open made (its .filename)."""
    if isinstance(path_or_fd, int):
        return os.readlink(f"/proc/self/fd/{path_or_fd}")
    name = getattr(path_or_fd, "filename", None)
    if isinstance(path_or_fd, np.ndarray):
        if name is None:
            raise ValueError("hint: this array maps no file (pass the view's path)")
        return name
    return os.fspath(path_or_fd)


# (data path, st_dev) -> (data path, the view's rows): a mount's views keep their shape
_ROWS: Dict[Tuple[str, int], Tuple[str, int]] = {}


def _view_rows(path, fd):
    """(data path, rows) of the view whose file is path, .json read once per mount."""
    dev = (os.fstat(fd) if fd is not None else os.stat(os.path.dirname(path) or ".")).st_dev
    got = _ROWS.get((path, dev))
    if got is None:
        v = _views.View(path)
        if v.data != path and os.path.splitext(path)[1] == ".json":
            raise ValueError(f"{path}: hints go to a view's .npy or .dat, not its .json")
        got = _ROWS[(path, dev)] = (v.data, v.rows)
        if len(_ROWS) > 256:
            _ROWS.pop(next(iter(_ROWS)))
    return got


def hint(path_or_fd: Union[str, "os.PathLike[str]", int, np.ndarray],
         rows: Union[Sequence[int], np.ndarray]) -> None:
    """Queues view rows (any integer sequence) to be made ahead of reads.
    path_or_fd: V.npy, V.dat or V under a mount, an open descriptor of one,
    or a memmap of one. Rows outside the view raise IndexError and nothing
    is queued; a file that is not a view's data raises ValueError."""
    path = _data_path(path_or_fd)
    fd = path_or_fd if isinstance(path_or_fd, int) else None
    try:
        data, nrows = _view_rows(path, fd)
    except FileNotFoundError:
        _views.View(path)  # says which: no mount (ValueError) or no view
        raise
    a = _rows_array(rows, nrows, path)
    if not a.size:
        return
    if fd is not None:
        _send(fd, a, path)
        return
    fd = os.open(data, os.O_RDONLY)
    try:
        _send(fd, a, data)
    finally:
        os.close(fd)


class Hinter:
    """Hints batches to the data files of one or more views, keeping an open
    descriptor of each and their row count for the checks. Opened lazily, in
    the process that iterates (a DataLoader's main process)."""

    def __init__(self, paths):
        self.paths = list(paths)
        self.fds, self.rows = None, None

    def _open(self):
        views = [_views.View(p) for p in self.paths]
        self.rows = min(v.rows for v in views)
        self.fds = [(os.open(v.data, os.O_RDONLY), v.data) for v in views]

    def __call__(self, batch):
        if self.fds is None:
            self._open()
        a = _rows_array(batch, self.rows, self.paths[0])
        for fd, path in self.fds:
            _send(fd, a, path)

    def close(self):
        for fd, _ in self.fds or ():
            os.close(fd)
        self.fds = None

    def __getstate__(self):  # descriptors stay in the process that opened them
        return {"paths": self.paths, "fds": None, "rows": None}


class NoHints:
    """A Hinter that sends nothing."""

    def __call__(self, batch):
        pass

    def close(self):
        pass


AnyHinter = Union[Hinter, NoHints]


def hinted(batches, hinter, lookahead):
    """Yields batches in order; batch k + lookahead is hinted before batch k
    is yielded (each batch is hinted once, before it is read)."""
    ahead = deque()
    for b in batches:
        hinter(b)
        ahead.append(b)
        if len(ahead) > lookahead:
            yield ahead.popleft()
    while ahead:
        yield ahead.popleft()
