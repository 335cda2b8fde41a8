"""Reading without torch: a random-access source (JAX/grain style, no jax
import) and a plain iterator of shuffled, hinted batches."""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, Iterator, Mapping, Optional, Union

import numpy as np

from . import _hints, _sources, _views

# what names a view: a path on a mount or a dsview.Array; several in a dict
ViewsArg = Union[_views.PathLike, Any, Mapping[str, Union[_views.PathLike, Any]]]


def _handle(v):
    """What reads one view: a dsview.Array (in-process) as it is, a path
    on a mount as a MountRows."""
    if hasattr(v, "read") and hasattr(v, "reader"):
        return v
    return MountRows(os.fspath(v))


def named_views(views):
    """{name: reader} of one view (name None) or of several read together
    (a dict; Views checks that their rows agree). A view is a path on a
    mount or a dsview.Array."""
    if isinstance(views, dict):
        if not views:
            raise ValueError("no views given")
        return {k: _handle(v) for k, v in views.items()}
    return {None: _handle(views)}


class MountRows:
    """A view of a mount read with pread, one call per run of rows: its
    memmap and a descriptor opened in the reading process under one lock
    (neither is carried across fork, spawn or pickling)."""

    def __init__(self, path):
        self.path = path
        v = _views.View(path)
        self.shape, self.row_bytes, self.rows = v.shape, v.meta["row_bytes"], v.rows
        self.array, self.fd = None, None
        self.lock = threading.Lock()

    def open(self):
        """The view's memmap and a descriptor of its file (None for an
        empty view, which has no file mapped)."""
        with self.lock:
            if self.array is None:
                self.array = _views.open_view(self.path)
            if self.fd is None and isinstance(self.array, np.memmap) and self.array.filename:
                try:
                    self.fd = os.open(self.array.filename, os.O_RDONLY | os.O_CLOEXEC)
                except OSError as e:
                    raise _views._mount_error(self.path, e) from e
            return self.array, self.fd

    @property
    def dtype(self):
        return self.open()[0].dtype

    @property
    def dsview_dtype(self):
        return self.open()[0].dsview_dtype

    def read(self, idx, out):
        a, fd = self.open()
        if fd is None:  # an empty view: nothing to read
            return np.take(a, idx, axis=0, out=out)
        return _pread_rows(fd, a, idx, out, self.path)

    def close(self):
        with self.lock:
            fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __getstate__(self):
        return {"path": self.path, "shape": self.shape, "row_bytes": self.row_bytes,
                "rows": self.rows}

    def __setstate__(self, state):
        self.__dict__.update(state, array=None, fd=None, lock=threading.Lock())


class Views:
    """One or more views read together (paths on a mount or dsview.Arrays,
    see named_views), opened lazily in the process that reads."""

    def __init__(self, views):
        self.views = named_views(views)
        self.paths = {k: getattr(h, "path", None) for k, h in self.views.items()}
        self.row_bytes = sum(h.row_bytes for h in self.views.values())
        rows = {k: h.rows for k, h in self.views.items()}
        if len(set(rows.values())) > 1:
            raise ValueError("views read together must have the same rows: "
                             + ", ".join(f"{self.name(k)} has {n}" for k, n in rows.items()))
        self.rows = next(iter(rows.values()))

    def name(self, k):
        h = self.views[k]
        return h.path if isinstance(h, MountRows) else repr(h)

    @property
    def first(self):
        return self.name(next(iter(self.views)))

    def sources(self, k=None):
        """The Sources of view k (the first where k is None)."""
        if k is None:
            k = next(iter(self.views))
        if k not in self.views:
            raise KeyError(f"no view {k!r} among {', '.join(map(str, self.views))}")
        h = self.views[k]
        return _sources.of(h.path if isinstance(h, MountRows) else h)

    def hint_paths(self):
        """The views a mount can be hinted for (in-process ones have none)."""
        return [h.path for h in self.views.values() if isinstance(h, MountRows)]

    def open(self):
        """{name: an array-like with shape, dtype and dsview_dtype}."""
        return {k: h.open()[0] if isinstance(h, MountRows) else h for k, h in self.views.items()}

    def check_index(self, i):
        if not -self.rows <= i < self.rows:
            raise IndexError(f"{self.first}: row {i} out of range: the view has {self.rows} rows")
        return i % self.rows

    def batch_index(self, rows):
        idx = np.asarray(rows)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise TypeError(f"{self.first}: a batch is a 1-d sequence of integer rows")
        if idx.size and (idx.min() < -self.rows or idx.max() >= self.rows):
            bad = idx[(idx < -self.rows) | (idx >= self.rows)][0]
            raise IndexError(f"{self.first}: row {int(bad)} out of range: "
                             f"the view has {self.rows} rows")
        return idx

    def read(self, key, out=None):
        """Row key (an int) or rows key (a sequence) of every view, into out
        where given ({name: array}). Rows of a mount are read with pread,
        one call per run of consecutive rows, straight into the
        destination (no page of the view is mapped, so a reader copies
        each byte once and its RSS holds only what it keeps); rows of a
        dsview.Array are made straight into it in this process."""
        one = isinstance(key, (int, np.integer))
        idx = np.array([self.check_index(int(key))]) if one else self.batch_index(key) % self.rows
        got = {}
        for k, h in self.views.items():
            dst = None if out is None else out[k]
            if dst is None:
                dst = np.empty((len(idx),) + tuple(h.shape[1:]), h.dtype)
            got[k] = h.read(idx, dst)
            if one:
                got[k] = got[k][0]
        return got if None not in got else got[None]

    def close(self):
        """Closes the descriptors this process opened for mounts' views
        (the next read opens them again)."""
        for h in self.views.values():
            if isinstance(h, MountRows):
                h.close()

    def __del__(self):
        try:
            self.close()
        except (OSError, AttributeError):  # AttributeError: a constructor that failed
            pass


def _pread_rows(fd, a, idx, dst, path):
    """Rows idx of view a (its memmap: file offset and row size) into dst
    with one pread per run of consecutive rows."""
    row = a.strides[0]
    if not dst.flags.c_contiguous or dst.nbytes != len(idx) * row:
        raise ValueError(f"{path}: out must be a C-contiguous array of "
                         f"{len(idx)} rows of {row} bytes")
    buf = memoryview(dst.reshape(-1).view(np.uint8))
    i, n = 0, len(idx)
    while i < n:
        j = i + 1
        while j < n and idx[j] == idx[j - 1] + 1:
            j += 1
        want, off, at = (j - i) * row, a.offset + int(idx[i]) * row, i * row
        while want:
            try:
                got = os.preadv(fd, [buf[at:at + want]], off)
            except OSError as e:
                raise _views._mount_error(path, e) from e
            if got <= 0:
                raise OSError(f"{path}: the view ends at byte {off}, inside row {idx[i]}")
            want, off, at = want - got, off + got, at + got
        i = j
    return dst


class ArraySource:
    """A random-access source over one view or several (a dict of them; a
    view is a path on a mount or a dsview.Array read in-process):
    len(src) rows, src[i] a numpy row (or a dict of rows). Works as a grain
    RandomAccessDataSource; pickles without its open files."""

    def __init__(self, views: ViewsArg):
        self.views = Views(views)

    def __len__(self) -> int:
        return self.views.rows

    def __getitem__(self, i: int) -> Union[np.ndarray, Dict[str, np.ndarray]]:
        return self.views.read(i)

    def __repr__(self):
        return f"dsview.ArraySource({self.views.first})"


def shuffled_batches(n, batch_size, rng, drop_last, sort):
    order = rng.permutation(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        b = order[i:i + batch_size]
        yield np.sort(b) if sort else b


def batches(path_or_paths: ViewsArg, batch_size: int = 256, shuffle: bool = True,
            seed: Optional[int] = None, drop_last: bool = False, lookahead: int = 4,
            epochs: int = 1) -> Iterator[Union[np.ndarray, Dict[str, np.ndarray]]]:
    """Yields batches of rows (numpy arrays, or dicts of them for several
    views): shuffled each epoch, each batch's rows ascending, read with one
    pread per run of rows, and hinted `lookahead` batches ahead. seed: numpy's."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    views = Views(path_or_paths)
    paths = views.hint_paths()
    hinter: _hints.AnyHinter = _hints.Hinter(paths) if paths else _hints.NoHints()
    rng = np.random.default_rng(seed)
    try:
        for _ in range(epochs):
            if shuffle:
                order = shuffled_batches(views.rows, batch_size, rng, drop_last, True)
            else:
                stop = views.rows - views.rows % batch_size if drop_last else views.rows
                order = (np.arange(i, min(i + batch_size, views.rows))
                         for i in range(0, stop, batch_size))
            src = _hints.hinted(order, hinter, lookahead) if shuffle else order
            for b in src:
                yield views.read(b)
    finally:
        hinter.close()
        views.close()
