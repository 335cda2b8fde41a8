"""Reading without torch: a random-access source (JAX/grain style, no jax
import) and a plain iterator of shuffled, hinted batches."""
import os
import threading

import numpy as np

from . import _hints, _views


def named_paths(path_or_paths):
    """{name: path} of one view (name None) or of several read together
    (Views checks that their rows agree)."""
    if isinstance(path_or_paths, dict):
        if not path_or_paths:
            raise ValueError("no views given")
        return {k: os.fspath(p) for k, p in path_or_paths.items()}
    return {None: os.fspath(path_or_paths)}


class Views:
    """One or more views, opened lazily in the process that reads (a memmap
    or a descriptor is not carried across fork, spawn or pickling)."""

    def __init__(self, path_or_paths):
        self.paths = named_paths(path_or_paths)
        self.arrays = None
        self.fds = None
        self.lock = threading.Lock()  # the reading threads open them once
        self.rows = self._check()

    def _check(self):
        views = {k: _views.View(p) for k, p in self.paths.items()}
        self.row_bytes = sum(v.meta["row_bytes"] for v in views.values())
        rows = {k: v.rows for k, v in views.items()}
        if len(set(rows.values())) > 1:
            raise ValueError("views read together must have the same rows: "
                             + ", ".join(f"{self.paths[k]} has {n}" for k, n in rows.items()))
        return next(iter(rows.values()))

    def open(self):
        with self.lock:
            return self._open_locked()

    def _open_locked(self):
        if self.arrays is None:
            self.arrays = {k: _views.open_view(p) for k, p in self.paths.items()}
        return self.arrays

    def check_index(self, i):
        if not -self.rows <= i < self.rows:
            raise IndexError(f"{self.first}: row {i} out of range: the view has {self.rows} rows")
        return i % self.rows

    @property
    def first(self):
        return next(iter(self.paths.values()))

    def batch_index(self, rows):
        idx = np.asarray(rows)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise TypeError(f"{self.first}: a batch is a 1-d sequence of integer rows")
        if idx.size and (idx.min() < -self.rows or idx.max() >= self.rows):
            bad = idx[(idx < -self.rows) | (idx >= self.rows)][0]
            raise IndexError(f"{self.first}: row {int(bad)} out of range: "
                             f"the view has {self.rows} rows")
        return idx

    def _opened(self):
        """Each view's memmap and a descriptor of its file, opened in the
        reading process under one lock (the descriptor is None for an empty
        view, which has no file mapped)."""
        with self.lock:
            arrays = self._open_locked()
            if self.fds is None:
                fds = {}
                try:
                    for k, a in arrays.items():
                        fds[k] = os.open(a.filename, os.O_RDONLY | os.O_CLOEXEC) \
                            if isinstance(a, np.memmap) and a.filename else None
                except OSError as e:
                    for fd in fds.values():
                        if fd is not None:
                            os.close(fd)
                    raise _views._mount_error(self.paths[k], e) from e
                self.fds = fds
            return arrays, self.fds

    def read(self, key, out=None):
        """Row key (an int) or rows key (a sequence) of every view, into out
        where given ({name: array}). The rows are read with pread, one call
        per run of consecutive rows, straight into the destination: no page
        of the view is mapped, so a reader copies each byte once and its RSS
        holds only what it keeps."""
        arrays, fds = self._opened()
        one = isinstance(key, (int, np.integer))
        idx = np.array([self.check_index(int(key))]) if one else self.batch_index(key) % self.rows
        got = {}
        for k, a in arrays.items():
            dst = None if out is None else out[k]
            if dst is None:
                dst = np.empty((len(idx),) + a.shape[1:], a.dtype)
            if fds[k] is None:  # an empty view: nothing to read
                got[k] = np.take(a, idx, axis=0, out=dst)
            else:
                got[k] = _pread_rows(fds[k], a, idx, dst, self.paths[k])
            if one:
                got[k] = got[k][0]
        return got if None not in got else got[None]

    def close(self):
        """Closes the descriptors this process opened (the next read opens
        them again)."""
        with self.lock:
            fds, self.fds = self.fds or {}, None
        for fd in fds.values():
            if fd is not None:
                os.close(fd)

    def __del__(self):
        try:
            self.close()
        except OSError:
            pass

    def __getstate__(self):
        return {"paths": self.paths, "rows": self.rows, "row_bytes": self.row_bytes}

    def __setstate__(self, state):
        self.__dict__.update(state, arrays=None, fds=None, lock=threading.Lock())


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
    """A random-access source over one view or several (a dict of paths):
    len(src) rows, src[i] a numpy row (or a dict of rows). Works as a grain
    RandomAccessDataSource; pickles without its open files."""

    def __init__(self, path_or_paths):
        self.views = Views(path_or_paths)

    def __len__(self):
        return self.views.rows

    def __getitem__(self, i):
        return self.views.read(i)

    def __repr__(self):
        return f"dsview.ArraySource({self.views.paths!r})"


def shuffled_batches(n, batch_size, rng, drop_last, sort):
    order = rng.permutation(n)
    stop = n - n % batch_size if drop_last else n
    for i in range(0, stop, batch_size):
        b = order[i:i + batch_size]
        yield np.sort(b) if sort else b


def batches(path_or_paths, batch_size=256, shuffle=True, seed=None, drop_last=False,
            lookahead=4, epochs=1):
    """Yields batches of rows (numpy arrays, or dicts of them for several
    views): shuffled each epoch, each batch's rows ascending, read with one
    pread per run of rows, and hinted `lookahead` batches ahead. seed: numpy's."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    views = Views(path_or_paths)
    hinter = _hints.Hinter(views.paths.values())
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
