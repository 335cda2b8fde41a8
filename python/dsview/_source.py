"""Reading without torch: a random-access source (JAX/grain style, no jax
import) and a plain iterator of shuffled, hinted batches."""
import os

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
    """Memmaps of one or more views, opened lazily in the process that reads
    (a memmap is not carried across fork, spawn or pickling)."""

    def __init__(self, path_or_paths):
        self.paths = named_paths(path_or_paths)
        self.arrays = None
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

    def read(self, key, out=None):
        """Row key (an int) or rows key (a sequence: one fancy index, as fast
        as it is when the rows are sorted) of every view, into out where
        given ({name: array})."""
        arrays = self.open()
        if isinstance(key, (int, np.integer)):
            i = self.check_index(int(key))
            got = {k: np.array(a[i]) for k, a in arrays.items()}
        else:
            idx = self.batch_index(key)
            got = {}
            for k, a in arrays.items():
                dst = None if out is None else out[k]
                got[k] = np.take(a, idx, axis=0, out=dst) if dst is not None else a[idx]
        return got if None not in got else got[None]

    def __getstate__(self):
        return {"paths": self.paths, "arrays": None, "rows": self.rows,
                "row_bytes": self.row_bytes}


class ArraySource:
    """A random-access source over one view or several (a dict of paths):
    len(src) rows, src[i] a numpy row (or a dict of rows). Works as a grain
    RandomAccessDataSource; pickles without its memmaps."""

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
    fancy index, and hinted `lookahead` batches ahead. seed: numpy's."""
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
