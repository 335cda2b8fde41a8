"""dsview.torch.loader's loader: one type whatever reads the batches
(threads of this process, or DataLoader worker processes), with a state
that resumes an epoch where it stopped, on the same or another number of
ranks (the order: _order.py), and a measure of how long the training loop
waited for data."""
from __future__ import annotations

import time
import weakref
from collections import deque
from typing import Any, Dict, Iterator, List, Optional

import torch
import torch.utils.data as tud

from . import _hints

STATE_VERSION = 1


class _PlanSampler(tud.Sampler):
    """The loader's batches from its cursor on, each batch's rows
    ascending, hinted lookahead batches ahead: what a DataLoader's
    sampler yields (asked anew at every epoch, so persistent workers
    stay)."""

    def __init__(self, loader):
        self._loader = weakref.ref(loader)  # no cycle: a loader let go closes its files

    @property
    def loader(self):
        return self._loader()

    def __len__(self):
        return self.loader.plan.batches_from(self.loader.cursor)

    def __iter__(self):
        return self.loader._hinted_batches()

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)


class Loader:
    """Batches of a ViewDataset in the order of an _order.Plan (or, over a
    MixtureDataset, (dataset index, batch) pairs in the order of an
    _order.MixturePlan). Iterating
    runs the rest of the current epoch (all of it after set_epoch or at
    the start), then moves to the next epoch. state_dict() / load_state_dict()
    save and restore the epoch, the seed and the global sample cursor (the
    StatefulDataLoader protocol, so torchdata can drive it)."""

    def __init__(self, dataset: Any, plan: Any, num_workers: int, workers: str, lookahead: int,
                 hint: bool, depth: int, kwargs: Dict[str, Any],
                 sources: Optional[List[Any]] = None):
        self.dataset, self.plan, self.lookahead = dataset, plan, lookahead
        self.sources = sources  # with source_index: each dataset's Sources
        self.epoch, self.cursor = 0, 0
        self._stats = {"batches": 0, "rows": 0, "bytes": 0, "wait_s": 0.0}
        self.hinter = dataset.make_hinter(hint)
        self.threads = num_workers if workers == "threads" else 0
        self.depth, self.pin = depth, kwargs.get("pin_memory", False) and torch.cuda.is_available()
        self.sampler = _PlanSampler(self)
        self._dl = None
        if workers == "processes" or num_workers == 0:
            kwargs = {"collate_fn": _as_is, **kwargs}  # a mixture's (d, batch) stays a tuple
            self._dl = tud.DataLoader(dataset, sampler=self.sampler, batch_size=None,
                                      num_workers=num_workers if workers == "processes" else 0,
                                      **kwargs)

    def __len__(self) -> int:
        """Batches of this rank in the rest of the current epoch."""
        return self.plan.batches_from(self.cursor)

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch `epoch` from its beginning at the next iteration
        (as DistributedSampler.set_epoch; not needed: an epoch run to its
        end moves to the next by itself)."""
        self.epoch, self.cursor = int(epoch), 0

    def _hinted_batches(self):
        self._after = deque()
        try:
            for rows, after in _hints.hinted(_batch_rows(self.plan, self.epoch, self._start),
                                             _HintPair(self.hinter), self.lookahead):
                self._after.append((after, rows))
                yield rows
        finally:
            self.hinter.close()  # the mount stays free to unmount between epochs

    def _read(self, item):
        got = self.dataset[item]
        if not self.pin:
            return got
        return _pinned(got)

    def _threaded(self):
        from concurrent.futures import ThreadPoolExecutor
        ahead = deque()
        try:
            with ThreadPoolExecutor(self.threads, thread_name_prefix="dsview-read") as pool:
                for rows in self._hinted_batches():
                    ahead.append(pool.submit(self._read, rows))
                    if len(ahead) >= self.depth:
                        yield ahead.popleft().result()
                while ahead:
                    yield ahead.popleft().result()
        finally:
            self.dataset.views.close()

    def __iter__(self) -> Iterator[Any]:
        if self.cursor >= self.plan.n:  # a state saved at an epoch's end
            self.set_epoch(self.epoch + 1)
        self._start = self.cursor  # an epoch left part way goes on from there
        source = iter(self._dl) if self._dl is not None else self._threaded()
        try:
            while True:
                t = time.perf_counter()
                try:
                    batch = next(source)
                except StopIteration:
                    break
                self._count(batch, time.perf_counter() - t)
                self.cursor, item = self._after.popleft()
                yield batch if self.sources is None else self._with_sources(batch, item)
            self.set_epoch(self.epoch + 1)
        finally:
            if self._dl is None or self._dl.num_workers == 0:
                self.dataset.views.close()  # the mount stays free to unmount between epochs

    def _with_sources(self, batch, item):
        """batch and, beside it, the source index of each of its rows:
        (batch, index), or (d, batch, index) in a mixture."""
        d, rows = item if isinstance(item, tuple) else (0, item)
        index = torch.from_numpy(self.sources[d].source_of(rows)[0])
        return (batch, index) if not isinstance(item, tuple) else (batch[0], batch[1], index)

    def _count(self, batch, waited):
        if isinstance(batch, tuple):  # a mixture's (dataset, batch)
            batch = batch[1]
        parts = batch.values() if isinstance(batch, dict) else (batch,)
        first = next(iter(parts))
        self._stats["batches"] += 1
        self._stats["rows"] += int(first.shape[0])
        self._stats["bytes"] += sum(t.numel() * t.element_size() for t in parts)
        self._stats["wait_s"] += waited

    def stats(self) -> Dict[str, float]:
        """What the training loop got and how long it waited for it:
        batches, rows, bytes, wait_s (seconds blocked in next())."""
        return dict(self._stats)

    def state_dict(self) -> Dict[str, Any]:
        """The position to resume from: nothing that depends on this
        process, so it restores in a new one (and on another number of
        ranks). Taken between batches, it stands after the last batch
        yielded."""
        return _state(self.plan, self.epoch, self.cursor)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes at state's epoch and cursor with its seed: the next
        iteration yields the batches the saved loader had still to yield
        (the rest of the epoch split over this loader's ranks where the
        world size changed)."""
        self.epoch, self.cursor = _restored(self.plan, state)


class StatefulSampler(tud.Sampler):
    """The batches of a loader's order (lists of rows, each ascending; or
    (dataset, rows) in a mixture) as a DataLoader's sampler, with
    batch_size=None over a ViewDataset, hinted lookahead batches ahead,
    and the Stateful protocol of torchdata: state_dict() is the position
    after the last batch this sampler gave out (a loader's state, the same
    fields), load_state_dict() resumes there. torchdata's
    StatefulDataLoader takes the sampler's state as it hands each batch to
    a worker and keeps it until that batch reaches the loop, so its
    checkpoints stand after the batches the loop got, not after those the
    workers read ahead.

    An iteration starts where the last one ended (an epoch read to its end
    moves to the next), or where load_state_dict() or set_epoch() put it;
    one left part way is begun again from the same place, as a
    DataLoader's epoch is. A state saved after an epoch's last batch
    resumes to an empty rest of that epoch, and the next iteration reads
    the next epoch, as torchdata's own samplers do."""

    def __init__(self, plan: Any, hinter: Any, lookahead: int, cursor: int = 0):
        self.plan, self.hinter, self.lookahead = plan, hinter, lookahead
        self._begin = (0, cursor)
        self.epoch, self.cursor = self._begin

    def __len__(self) -> int:
        """Batches of this rank in a whole epoch."""
        return len(self.plan)

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch `epoch` from its beginning at the next iteration;
        the epoch the sampler is at (restored part way) goes on where it is,
        so a trainer that calls set_epoch before every epoch resumes."""
        if int(epoch) != self._begin[0]:
            self._begin = (int(epoch), 0)
            self.epoch, self.cursor = self._begin

    def __iter__(self) -> Iterator[Any]:
        epoch, start = self._begin  # a state saved after an epoch's last batch: none left
        self.epoch, self.cursor = epoch, start
        try:
            for rows, after in _hints.hinted(_batch_rows(self.plan, epoch, start),
                                             _HintPair(self.hinter), self.lookahead):
                self.cursor = after
                yield rows
        finally:
            self.hinter.close()  # the mount stays free to unmount between epochs
        self._begin = (epoch + 1, 0)
        self.epoch, self.cursor = self._begin

    def state_dict(self) -> Dict[str, Any]:
        """The position after the last batch given out (no I/O, nothing
        that depends on this process)."""
        return _state(self.plan, self.epoch, self.cursor)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The next iteration starts at state's epoch and cursor (a
        sampler's or a Loader's state), split over this sampler's ranks
        where the world size changed."""
        self._begin = _restored(self.plan, state)
        self.epoch, self.cursor = self._begin


def _batch_rows(plan, epoch, start):
    """(rows ascending as a list, or (dataset, rows) in a mixture; cursor
    after) of plan's epoch from position start on."""
    for item, after in plan.batches(epoch, start):
        d, rows = item if isinstance(item, tuple) else (None, item)
        rows.sort()  # ascending: runs of rows read at once
        yield (rows.tolist() if d is None else (d, rows.tolist())), after


def _state(plan, epoch, cursor):
    """A position in plan's epochs as a loader's state."""
    return {"version": STATE_VERSION, "epoch": epoch, "cursor": cursor, **plan.state()}


def _restored(plan, state):
    """(epoch, cursor) of a saved state, checked against plan (which takes
    its order)."""
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"a loader state of version {state.get('version')!r}; this "
                         f"dsview reads version {STATE_VERSION}")
    plan.restore(state)
    return state["epoch"], state["cursor"]


def _as_is(batch):
    """A DataLoader's collate_fn for whole batches the dataset made."""
    return batch


def _pinned(got):
    if isinstance(got, tuple):
        return got[0], _pinned(got[1])
    return {k: t.pin_memory() for k, t in got.items()} if isinstance(got, dict) \
        else got.pin_memory()


class MixtureDataset(tud.Dataset):
    """Several datasets (ViewDatasets) read by (index, rows) items: item
    (d, rows) is (d, datasets[d][rows])."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        self.views = _AllViews([ds.views for ds in self.datasets])

    def __len__(self):
        return sum(len(ds) for ds in self.datasets)

    def __getitem__(self, item):
        d, rows = item
        return d, self.datasets[d][rows]

    def make_hinter(self, hint):
        return _MixHinter([ds.make_hinter(hint) for ds in self.datasets])


class _AllViews:
    def __init__(self, views):
        self.all = views

    def close(self):
        for v in self.all:
            v.close()


class _MixHinter:
    """Hints a mixture's (dataset, rows) batches to that dataset's views."""

    def __init__(self, hinters):
        self.hinters = hinters

    def __call__(self, item):
        d, rows = item
        self.hinters[d](rows)

    def close(self):
        for h in self.hinters:
            h.close()


class _HintPair:
    """A Hinter over (rows, cursor) pairs: hints the rows."""

    def __init__(self, hinter):
        self.hinter = hinter

    def __call__(self, pair):
        self.hinter(pair[0])
