"""The views of a source read in this process, without a mount: what
`dsview mount SOURCE` would serve, through libdsview.so's engine (the
same bytes, the same errors)."""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from . import _lib, _sources, _views


def _options(options):
    """**options as the library's "key=value,..." string."""
    parts = []
    for k, v in options.items():
        if v is None or v is False:
            continue
        v = "1" if v is True else str(v)
        if "," in v or "," in k:
            raise ValueError(f"option {k}={v!r}: a value may not hold ','")
        parts.append(f"{k}={v}")
    return ",".join(parts)


class Reader:
    """What `dsview mount source` serves (a manifest, a file, a directory,
    a Zarr array or group, an s3:// or https:// URL), open in this
    process. options are the manifest's [dsview] keys (cache_size,
    threads, gpu, gpu_cache, disk_cache, disk_cache_size, index_cache,
    s3_endpoint, s3_region, s3_profile, s3_addressing) and, for a source that is not a
    manifest, dtype and strict. Pickles as its source and options (a
    worker process opens it again); a process made by fork may go on
    using it (the library opens it again there by itself)."""

    def __init__(self, source: _views.PathLike, **options: Any):
        self.source = os.fspath(source)
        self.options = _options(options)
        self._kw = dict(options)
        self._h: Optional[ctypes.c_void_p] = None
        self._pid: Optional[int] = None
        self._lock = threading.Lock()
        self._open()

    def _open(self):
        lib = _lib.lib()
        h = ctypes.c_void_p()
        eb = _lib.ErrBuf()
        if lib.dsv_reader_open(self.source.encode(), self.options.encode() or None,
                               ctypes.byref(h), ctypes.byref(eb)):
            raise _lib.error(eb, _lib.FORMAT)
        self._h, self._pid = h, os.getpid()
        self._views = {}
        for i in range(lib.dsv_reader_nviews(h)):
            d = _lib.ViewDesc()
            lib.dsv_reader_view_get(h, i, ctypes.byref(d))
            self._views[d.name.decode()] = i

    def handle(self) -> ctypes.c_void_p:
        """The library's reader, opened again in a process this one was
        pickled to."""
        if self._h is None:
            with self._lock:
                if self._h is None:
                    self._open()
        return cast(ctypes.c_void_p, self._h)  # _open set it or raised

    @property
    def views(self) -> List[str]:
        """The names of the views, in the mount's order."""
        self.handle()
        return list(self._views)

    @property
    def skipped(self) -> List[Dict[str, str]]:
        """What a zero-config source does not serve: [{"path", "reason"}]."""
        text = _lib.lib().dsv_reader_skipped_json(self.handle())
        return json.loads(text) if text else []

    def view(self, name: Optional[str] = None) -> Array:
        """View name as an Array; name may be left out when there is one."""
        self.handle()
        if name is None:
            if len(self._views) != 1:
                raise KeyError(f"{self.source}: name one of its {len(self._views)} views: "
                               + ", ".join(self._views))
            name = next(iter(self._views))
        if name not in self._views:
            raise KeyError(f"{self.source}: no view {name!r}; its views: "
                           + ", ".join(self._views))
        return Array(self, name)

    def stats(self) -> Dict[str, Any]:
        """The engine's counters (those of a mount's /.stats.json)."""
        lib, h = _lib.lib(), self.handle()
        n = lib.dsv_reader_stats(h, None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        lib.dsv_reader_stats(h, buf, n + 1)
        return json.loads(buf.value)

    def close(self) -> None:
        h, self._h = self._h, None
        if h is not None and self._pid == os.getpid():
            _lib.lib().dsv_reader_close(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self):
        return {"source": self.source, "_kw": self._kw}

    def __setstate__(self, state):
        self.source, self._kw = state["source"], state["_kw"]
        self.options = _options(self._kw)
        self._h, self._pid, self._lock = None, None, threading.Lock()

    def __repr__(self):
        return f"dsview.Reader({self.source!r})"


class Array:
    """One view read in-process: shape, dtype, len(), a[i], a[a:b:s],
    a[index array], np.asarray(a) and a.read(rows, out=None), each read
    decoded and transformed straight into the result."""

    def __init__(self, reader: Reader, name: str):
        self.reader, self.name = reader, name
        d = _lib.ViewDesc()
        _lib.lib().dsv_reader_view_get(reader.handle(), reader._views[name], ctypes.byref(d))
        self.shape = tuple(d.shape[i] for i in range(d.ndim))
        self.dsview_dtype = _lib.DTYPES[d.dtype]
        self.dtype = _views.numpy_dtype(self.dsview_dtype)
        self.row_bytes = d.row_bytes
        self.nbytes = d.nbytes
        self.info = json.loads(d.json.decode())
        self._sources: Optional[_sources.Sources] = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d view")
        return self.shape[0]

    @property
    def sources(self) -> _sources.Sources:
        """The view's sources (dsview.Sources): their paths and rows."""
        if self._sources is None:
            self._sources = _sources.of(self)
        return self._sources

    def source_of(self, rows: _sources.Rows) -> Tuple[np.ndarray, np.ndarray]:
        """(source index, row in that source) of each of rows, as int64
        arrays (see dsview.Sources.source_of)."""
        return self.sources.source_of(rows)

    @property
    def _i(self):
        return self.reader._views[self.name]

    def read(self, rows: Union[Sequence[int], np.ndarray],
             out: Optional[np.ndarray] = None) -> np.ndarray:
        """Rows (a sequence of integers, negatives from the end) into out
        (C-contiguous, len(rows) rows) or a new array."""
        idx = np.asarray(rows)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise TypeError(f"{self.name}: rows are a 1-d sequence of integers")
        n = self.rows
        if idx.size and (idx.min() < -n or idx.max() >= n):
            bad = idx[(idx < -n) | (idx >= n)][0]
            raise IndexError(f"{self.name}: row {int(bad)} out of range: the view has {n} rows")
        idx = np.ascontiguousarray(idx % n if idx.size else idx, dtype=np.int64)
        if out is None:
            out = np.empty((len(idx),) + self.shape[1:], self.dtype)
        elif not out.flags.c_contiguous or out.nbytes != len(idx) * self.row_bytes:
            raise ValueError(f"{self.name}: out must be a C-contiguous array of "
                             f"{len(idx)} rows of {self.row_bytes} bytes")
        if idx.size:
            eb = _lib.ErrBuf()
            if _lib.lib().dsv_reader_read_rows(self.reader.handle(), self._i,
                                               idx.ctypes.data, len(idx), out.ctypes.data,
                                               ctypes.byref(eb)):
                raise _lib.error(eb)
        return out

    def read_bytes(self, off: int, n: int) -> bytes:
        """Bytes [off, off + n) of the view's output (the mount's V.dat)."""
        out = np.empty(n, np.uint8)
        eb = _lib.ErrBuf()
        if _lib.lib().dsv_reader_read(self.reader.handle(), self._i, off, n,
                                      out.ctypes.data, ctypes.byref(eb)):
            raise _lib.error(eb)
        return out.tobytes()

    def __getitem__(self, key: Any) -> np.ndarray:
        rest: Tuple[Any, ...] = ()
        if isinstance(key, tuple):
            key, rest = (key[0], key[1:]) if key else (slice(None), ())
        if not self.shape:
            got = np.frombuffer(self.read_bytes(0, self.nbytes), self.dtype).reshape(())
            return got[(key,) + rest] if key is not Ellipsis else got
        if isinstance(key, (int, np.integer)):
            return self.read([int(key)])[0][rest]
        if isinstance(key, slice):
            got = self.read(np.arange(*key.indices(self.shape[0])))
        elif key is Ellipsis:
            got = self.read(np.arange(self.shape[0]))
        else:
            a = np.asarray(key)
            if a.dtype == bool:
                if a.shape != (self.shape[0],):
                    raise IndexError(f"{self.name}: a boolean index must have "
                                     f"{self.shape[0]} entries")
                a = np.flatnonzero(a)
            got = self.read(a)
        return got[(slice(None),) + rest] if rest else got

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        a = self[...]
        return a if dtype is None else a.astype(dtype)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        return (f"dsview.Array({self.reader.source!r}, view={self.name!r}, shape={self.shape}, "
                f"dtype={self.dsview_dtype})")

    def __getstate__(self):
        return {"reader": self.reader, "name": self.name}

    def __setstate__(self, state):
        self.__init__(state["reader"], state["name"])


def open_source(source: _views.PathLike, view: Optional[str] = None,
                **options: Any) -> Array:
    """View view of source read in this process (see Reader)."""
    return Reader(source, **options).view(view)
