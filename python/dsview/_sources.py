"""Which source a row of a view came from: a view's sources concatenated
along axis 0, as its .json lists them (each source's rows among the
concatenated rows, windows counted as rows), and the view's `rows`
selection (a slice or an index array) applied after the concatenation."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _views

Rows = Union[int, Sequence[int], np.ndarray]


class Sources:
    """The sources of one view: len(s) of them, s[i] (or iteration) a dict
    with "path", "dataset" (None but for HDF5) and "rows" ([first, stop)
    among the concatenated rows), and s.source_of(rows): for each row of
    the view (negatives from the end), the index of its source and the row
    in that source (a window's index in it, for a view of windows)."""

    def __init__(self, meta: Mapping[str, Any], name: str = "view"):
        self.name = name
        srcs = meta.get("sources") or []
        if not srcs:
            raise ValueError(f"{name}: its .json lists no sources")
        self.table: List[Dict[str, Any]] = [
            {"path": s["path"], "dataset": s.get("dataset"), "rows": tuple(s["rows"])}
            for s in srcs]
        self.bounds = np.array([s["rows"][0] for s in srcs] + [srcs[-1]["rows"][1]], np.int64)
        self.count = int(meta["shape"][0]) if meta.get("shape") else 1
        self._select = _selection(meta.get("rows"), int(self.bounds[-1]), self.count, name)

    def __len__(self) -> int:
        return len(self.table)

    def __getitem__(self, i: int) -> Dict[str, Any]:
        return dict(self.table[i])

    def __iter__(self):
        return (dict(s) for s in self.table)

    def concatenated(self, rows: Rows) -> np.ndarray:
        """The rows of the concatenation (before the view's `rows`) that
        the view's rows are."""
        idx = np.asarray(rows)
        if idx.ndim > 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise TypeError(f"{self.name}: rows are an integer or a 1-d sequence of them")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and (idx.min() < -self.count or idx.max() >= self.count):
            bad = idx[(idx < -self.count) | (idx >= self.count)].flat[0]
            raise IndexError(f"{self.name}: row {int(bad)} out of range: "
                             f"the view has {self.count} rows")
        idx = idx % self.count if self.count else idx
        return idx if self._select is None else self._select(idx)

    def source_of(self, rows: Rows) -> Tuple[np.ndarray, np.ndarray]:
        """(source index, row in that source) of each of rows, as int64
        arrays of rows' shape."""
        c = self.concatenated(rows)
        src = np.searchsorted(self.bounds, c, side="right") - 1
        return src.astype(np.int64), (c - self.bounds[src]).astype(np.int64)

    def __repr__(self) -> str:
        return f"dsview.Sources({self.name!r}, {len(self)} sources)"


def _selection(rows: Optional[Mapping[str, Any]], total: int, count: int,
               name: str) -> Optional[Callable[[np.ndarray], np.ndarray]]:
    """The view's `rows` as a function of view rows to concatenated rows
    (None when there is no selection)."""
    if not rows:
        return None
    if "index" in rows:
        index = np.load(rows["index"], mmap_mode="r")
        if index.ndim != 1 or len(index) != count:
            raise ValueError(f"{name}: its rows index {rows['index']} has changed "
                             f"({index.shape}, the view has {count} rows)")
        return lambda idx: np.asarray(index[idx], dtype=np.int64) % total
    r = range(total)[slice(rows.get("start"), rows.get("stop"), rows.get("step") or 1)]
    if len(r) != count:
        raise ValueError(f"{name}: its rows {rows} select {len(r)} of {total} rows, "
                         f"not the view's {count}")
    return lambda idx: r.start + idx * r.step


def of(view: Any) -> Sources:
    """The Sources of a view: a path on a mount (V.npy, V.dat, V.json or
    V), a dsview.Array read in-process, or its .json as a dict."""
    if isinstance(view, Mapping):
        return Sources(view)
    info = getattr(view, "info", None)
    if isinstance(info, Mapping) and hasattr(view, "reader"):
        return Sources(info, getattr(view, "name", "view"))
    path = os.fspath(view)
    return Sources(_views.View(path).meta, path)
