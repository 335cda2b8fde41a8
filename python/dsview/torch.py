"""PyTorch over dsview's views (on a mount, or read in-process): a
map-style dataset of one view or several read together, a batch sampler
that hints each batch's rows to the mount ahead of the reads, and
loader(), a Loader that puts them together:

    loader = dsview.torch.loader("/mnt/dsview/stim.npy", batch_size=256, num_workers=4)
    for x in loader:        # float32 (or bfloat16, ...) tensors, normalised by the mount
        ...
    state = loader.state_dict()          # resume later: loader.load_state_dict(state)

loader() hands whole batches to the dataset: each batch's rows ascending
(batches shuffled), read with one pread per run of consecutive rows
straight into the batch's tensor, by threads of the calling process
(num_workers of them) or, with workers="processes", by DataLoader worker
processes, each straight into the shared memory the batch travels in.
Under torch.distributed each rank reads and hints only its share of each
global step; the order is a function of the seed and the epoch alone, so
a saved state resumes on the same or another number of ranks
(docs/long-jobs.md). An epoch run to its end moves to the next by itself.
stateful_sampler() gives the same batches as a sampler for a DataLoader of
your own (torchdata's StatefulDataLoader checkpoints it). A plain
DataLoader(ViewDataset(...), batch_size=...) works too, one row per
__getitem__ and unhinted."""
from __future__ import annotations

from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np
import torch
import torch.utils.data as tud

from . import _hints, _order, _source
from ._loader import Loader, MixtureDataset, StatefulSampler

# a batch (or row): a tensor, or a dict of them for views read together
Batch = Union[torch.Tensor, Dict[str, torch.Tensor]]


def _torch_dtype(a, path):
    """The tensor dtype a view's rows become (bfloat16 views: the bits
    reinterpreted) and the numpy dtype that holds them."""
    if getattr(a, "dsview_dtype", None) == "bfloat16":
        return torch.bfloat16, np.dtype("<i2")
    try:
        return torch.from_numpy(np.zeros(0, a.dtype)).dtype, a.dtype
    except TypeError:
        raise TypeError(f"{path}: this torch has no {a.dtype} tensors "
                        f"(read the view with dsview.open instead)") from None


def _empty(shape, tdtype, shared):
    """A tensor to read into; in a DataLoader worker its storage is shared
    memory already, so sending the batch to the main process copies nothing."""
    if shared:
        try:
            elem = torch.empty(0, dtype=tdtype)
            st = elem._typed_storage() if hasattr(elem, "_typed_storage") else elem.storage()
            return elem.new(st._new_shared(int(np.prod(shape)))).resize_(*shape)
        except (AttributeError, RuntimeError, TypeError):
            return torch.empty(shape, dtype=tdtype).share_memory_()
    return torch.empty(shape, dtype=tdtype)


def as_tensor(a: np.ndarray, dsview_dtype: Optional[str] = None) -> torch.Tensor:
    """Array a (what dsview returns: a memmap, rows of a dsview.Array) as a
    tensor sharing its memory where it is C-contiguous. A bfloat16 view's
    bits (uint16; dsview_dtype "bfloat16", or a's .dsview_dtype) become
    torch.bfloat16 through int16, which torch.from_numpy takes on every
    version (before 2.3 it refuses uint16)."""
    if (dsview_dtype or getattr(a, "dsview_dtype", None)) == "bfloat16":
        return _tensor(a, torch.bfloat16)
    return _tensor(a, None)


def _tensor(a, tdtype):
    t = torch.from_numpy(np.ascontiguousarray(a).view(np.int16) if tdtype is torch.bfloat16
                         else np.ascontiguousarray(a))
    return t.view(torch.bfloat16) if tdtype is torch.bfloat16 else t


class ViewDataset(tud.Dataset):
    """A map-style dataset over one view (a path: V.npy, V.dat or V under a
    mount; or a dsview.Array, read in-process) or several read together
    ({"stim": path, "robs": path}: items are dicts). ds[i] is row i as a tensor; ds[[i, j, ...]] is those rows as one
    batch tensor, read with pread into it. The views are opened in each
    process at first use, so fork, spawn and forkserver workers all work."""

    def __init__(self, views: _source.ViewsArg):
        self.views = _source.Views(views)
        self.paths = self.views.paths
        self._types = None

    def __len__(self) -> int:
        return self.views.rows

    def _dtypes(self):
        if self._types is None:
            self._types = {k: _torch_dtype(a, self.views.name(k)) for k, a in self.views.open().items()}
        return self._types

    def __getitem__(self, key: Union[int, Sequence[int], np.ndarray]) -> Batch:
        types = self._dtypes()
        if isinstance(key, (int, np.integer)):
            got = self.views.read(key)
            rows = got if isinstance(got, dict) else {None: got}
            out = {k: _tensor(r, types[k][0]) for k, r in rows.items()}
            return out if None not in out else out[None]
        return self._batch(self.views.batch_index(key), types)

    def _batch(self, idx, types):
        shared = tud.get_worker_info() is not None
        arrays = self.views.open()
        out, dst = {}, {}
        for k, a in arrays.items():
            tdtype, ndtype = types[k]
            out[k] = _empty((len(idx),) + a.shape[1:], tdtype, shared)
            holder = out[k].view(torch.int16) if tdtype is torch.bfloat16 else out[k]
            dst[k] = holder.numpy().view(a.dtype)
        self.views.read(idx, out=dst)
        return out if None not in out else out[None]

    def make_hinter(self, hint: bool = True) -> Any:
        """What tells a mount the rows that come next (nothing for views
        read in-process, or with hint False)."""
        paths = self.views.hint_paths()
        return _hints.Hinter(paths) if hint and paths else _hints.NoHints()

    def __getstate__(self):
        return {"views": self.views, "paths": self.paths, "_types": None}


class HintedBatchSampler(tud.Sampler):
    """Batches of a sampler (RandomSampler, DistributedSampler, any iterable
    of rows, with batch_size) or of a batch sampler (batch_size None), in the
    same order, each batch's rows ascending; batch k + lookahead is hinted
    to the views before batch k is handed out. Pass it as a DataLoader's
    sampler with batch_size=None over a ViewDataset (loader() does)."""

    def __init__(self, sampler: Any, paths: Any, batch_size: Optional[int] = None,
                 drop_last: bool = False, lookahead: int = 4, sort: bool = True,
                 hint: bool = True):
        if batch_size is not None:
            sampler = tud.BatchSampler(sampler, batch_size, drop_last)
        if lookahead < 0:
            raise ValueError(f"lookahead must be 0 or more, not {lookahead}")
        self.batches, self.lookahead, self.sort = sampler, lookahead, sort
        paths = list(paths.values() if isinstance(paths, dict) else paths)
        self.hinter: _hints.AnyHinter = (_hints.Hinter(paths) if hint and paths
                                         else _hints.NoHints())

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]

    def set_epoch(self, epoch: int) -> None:
        inner = getattr(self.batches, "sampler", self.batches)
        inner.set_epoch(epoch)

    def _sorted(self):
        for b in self.batches:
            yield sorted(b) if self.sort else list(b)

    def __iter__(self) -> Iterator[List[int]]:
        try:
            yield from _hints.hinted(self._sorted(), self.hinter, self.lookahead)
        finally:
            self.hinter.close()  # the mount stays free to unmount between epochs


def _distributed(distributed):
    if distributed is None:
        return torch.distributed.is_available() and torch.distributed.is_initialized()
    return distributed


# batches read ahead by the threads at most: 3 batches of 256 rows of 600 KB;
# more only adds memory to a reader that copies as fast as it can
AHEAD_BYTES = 512 << 20


def _world(distributed, world_size, rank):
    """(world size, rank): as given, else torch.distributed's where it is
    initialised (distributed None) or asked for, else (1, 0)."""
    if world_size is not None or rank is not None:
        if world_size is None or rank is None:
            raise ValueError("give world_size and rank together")
        return int(world_size), int(rank)
    if _distributed(distributed):
        return torch.distributed.get_world_size(), torch.distributed.get_rank()
    return 1, 0


def _dataset(data):
    if isinstance(data, ViewDataset):
        return data
    if isinstance(data, tud.Dataset):
        raise TypeError(f"loader takes a ViewDataset, a view's path, a dsview.Array or a dict "
                        f"of them, not a {type(data).__name__} (for a subset of rows, name them "
                        f"in the manifest: rows = @idx.npy)")
    return ViewDataset(data)


def _readers(num_workers, workers, batch_size, row_bytes, kwargs):
    """(readers, depth) of a loader: threads up to what AHEAD_BYTES of
    batches allow, checked against the keywords given."""
    if workers not in ("threads", "processes"):
        raise ValueError(f"workers must be 'threads' or 'processes', not {workers!r}")
    if workers != "threads" or num_workers == 0:
        return num_workers, 0
    bad = sorted(set(kwargs) - {"pin_memory"})
    if bad:
        raise TypeError(f"loader: {', '.join(bad)} apply to worker processes: "
                        f"pass workers='processes'")
    fit = AHEAD_BYTES // max(1, batch_size * row_bytes)
    depth = max(2, min(num_workers + 1, fit))
    return min(num_workers, depth), depth


def _source_maps(sets, source_index):
    """Each dataset's Sources where source_index asks for them (True: the
    first view of each; a name: that view of a dict), else None."""
    if source_index is None or source_index is False:
        return None
    key = None if source_index is True else source_index
    return [d.views.sources(key) for d in sets]


def mixture(datasets: Sequence[Union[ViewDataset, _source.ViewsArg]],
            weights: Optional[Sequence[float]] = None, batch_size: int = 256,
            num_workers: int = 0, drop_last: bool = False, lookahead: int = 4,
            distributed: Optional[bool] = None, seed: Optional[int] = None, hint: bool = True,
            workers: str = "threads", world_size: Optional[int] = None,
            rank: Optional[int] = None, source_index: Union[bool, str] = False,
            **kwargs: Any) -> Loader:
    """(dataset index, batch) pairs over several datasets (each a
    ViewDataset, a view's path, a dsview.Array or a dict of them read
    together), every batch from one of them, shuffled by seed and epoch.
    Without weights an epoch reads every sample of every dataset once
    (datasets in proportion to their sizes); with weights (one a dataset)
    the epoch's batches are shared out by weight. A Loader: state_dict(),
    load_state_dict() and the other keywords as loader() takes them (with
    source_index, (dataset index, batch, source index) triples)."""
    sets = [_dataset(d) for d in datasets]
    if lookahead < 0:
        raise ValueError(f"lookahead must be 0 or more, not {lookahead}")
    world, me = _world(distributed, world_size, rank)
    plan = _order.MixturePlan([len(d) for d in sets], batch_size, weights, world, me,
                              0 if seed is None else seed, drop_last)
    readers, depth = _readers(num_workers, workers, batch_size,
                              max(d.views.row_bytes for d in sets), kwargs)
    return Loader(MixtureDataset(sets), plan, readers, workers, lookahead, hint, depth, kwargs,
                  _source_maps(sets, source_index))


def loader(data: Union[ViewDataset, _source.ViewsArg], batch_size: int = 256,
           shuffle: Optional[bool] = None, num_workers: int = 0, drop_last: bool = False,
           lookahead: int = 4, distributed: Optional[bool] = None, seed: Optional[int] = None,
           hint: bool = True, workers: str = "threads", world_size: Optional[int] = None,
           rank: Optional[int] = None, source_index: Union[bool, str] = False,
           replacement: bool = False, num_samples: Optional[int] = None,
           weights: Optional[Sequence[float]] = None, sampler: Optional[Iterable[int]] = None,
           start_step: int = 0, **kwargs: Any) -> Loader:
    """Batches of data (a ViewDataset, a view's path, a dsview.Array or a
    dict of them), read whole and hinted (see the module's doc), as a
    dsview.torch.Loader: state_dict() / load_state_dict() resume an epoch
    where it stopped (docs/long-jobs.md), stats() says how long the loop
    waited. shuffle and seed (default 0) give the order, the same in every
    process; distributed: shard by rank (default: when torch.distributed
    is initialised), or world_size and rank given; hint=False sends no
    hints (to measure what they bring). source_index=True yields (batch,
    index) pairs: index an int64 tensor, for each row of the batch the
    source file (of the view's concatenated sources) it came from; for a
    dict of views, source_index="name" says whose sources.

    An epoch reads every sample once (shuffled unless shuffle=False), or
    num_samples of them (at most all); replacement=True draws num_samples
    (default: as many as the data has) with replacement, uniformly or by
    weights (one a sample), each draw a hash of (seed, epoch, position),
    so it resumes and reshards as the shuffle does. sampler: a sampler of
    your own instead (an iterable of sample indices with a length, e.g.
    WeightedRandomSampler, or a DistributedSampler, which shards itself:
    no world_size then), iterated anew each epoch; a resumed epoch
    iterates it again and passes over what was read, so it resumes
    exactly only where it gives the same order again (a seeded
    generator). start_step: the first epoch starts at that step (batches
    of each rank already taken), as a loader restored there would.

    num_workers readers: with workers="threads" (the default) threads of
    this process, since a batch is one copy out of the page cache (the GIL
    is released during it) and needs no process to cross; 0 reads in the
    caller's thread; at most AHEAD_BYTES of batches are read ahead, so
    large rows get fewer threads than asked. workers="processes" reads
    with DataLoader worker processes, for datasets that do Python work per
    batch; DataLoader's keywords (persistent_workers, prefetch_factor,
    multiprocessing_context, pin_memory, ...) go to it. With threads only
    pin_memory is taken."""
    ds = _dataset(data)
    if lookahead < 0:
        raise ValueError(f"lookahead must be 0 or more, not {lookahead}")
    plan = _plan(ds, batch_size, shuffle, drop_last, distributed, seed, world_size, rank,
                 replacement, num_samples, weights, sampler)
    readers, depth = _readers(num_workers, workers, batch_size, ds.views.row_bytes, kwargs)
    out = Loader(ds, plan, readers, workers, lookahead, hint, depth, kwargs,
                 _source_maps([ds], source_index))
    out.cursor = _start_cursor(plan, start_step)
    return out


def stateful_sampler(data: Union[ViewDataset, _source.ViewsArg], batch_size: int = 256,
                     shuffle: Optional[bool] = None, drop_last: bool = False, lookahead: int = 4,
                     distributed: Optional[bool] = None, seed: Optional[int] = None,
                     hint: bool = True, world_size: Optional[int] = None,
                     rank: Optional[int] = None, replacement: bool = False,
                     num_samples: Optional[int] = None,
                     weights: Optional[Sequence[float]] = None,
                     sampler: Optional[Iterable[int]] = None,
                     start_step: int = 0) -> StatefulSampler:
    """loader()'s batches as a sampler of whole batches for a DataLoader of
    your own, with state_dict() / load_state_dict(), so torchdata's
    StatefulDataLoader (or any trainer that saves samplers) checkpoints
    it. data: the ViewDataset the DataLoader reads (or what ViewDataset
    takes, for its length and hints); the other keywords are loader()'s:

        ds = dsview.torch.ViewDataset(path)
        sampler = dsview.torch.stateful_sampler(ds, batch_size=256, seed=0)
        dl = StatefulDataLoader(ds, sampler=sampler, batch_size=None, num_workers=4)

    Its state is a loader's (docs/long-jobs.md): either restores the
    other, on the same or another number of ranks."""
    ds = _dataset(data)
    if lookahead < 0:
        raise ValueError(f"lookahead must be 0 or more, not {lookahead}")
    plan = _plan(ds, batch_size, shuffle, drop_last, distributed, seed, world_size, rank,
                 replacement, num_samples, weights, sampler)
    return StatefulSampler(plan, ds.make_hinter(hint), lookahead,
                           _start_cursor(plan, start_step))


def _start_cursor(plan, start_step):
    """The cursor of an epoch begun at step start_step of this rank."""
    if not 0 <= start_step <= len(plan):
        raise ValueError(f"start_step {start_step}: an epoch has {len(plan)} steps of this rank "
                         f"(0 to {len(plan)})")
    return min(plan.n, start_step * plan.step)


def _plan(ds, batch_size, shuffle, drop_last, distributed, seed, world_size, rank,
          replacement, num_samples, weights, sampler):
    """loader()'s order: a user's sampler, or the keyed shuffle or draws
    sharded over the ranks."""
    if sampler is None:
        world, me = _world(distributed, world_size, rank)
        return _order.Plan(len(ds), batch_size, world, me, shuffle is not False,
                           0 if seed is None else seed, drop_last, num_samples, replacement,
                           weights)
    given = [k for k, v in (("shuffle", shuffle), ("replacement", replacement or None),
                            ("num_samples", num_samples), ("weights", weights),
                            ("world_size", world_size), ("rank", rank), ("seed", seed))
             if v is not None] + (["distributed"] if distributed else [])
    if given:
        raise ValueError(f"sampler= decides the order and the shard itself; "
                         f"{', '.join(given)} cannot go with it")
    return _order.SamplerPlan(sampler, len(ds), batch_size, drop_last)
