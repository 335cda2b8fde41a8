"""dsview from Python: the views of a dsview mount as numpy memmaps, the
mount itself from a script, and sampler hints for shuffled readers.

    import dsview
    with dsview.Mount("neuro.ini") as m:          # unmounted on leaving, whatever happens
        x = dsview.open(m.path("stim.npy"))       # read-only numpy.memmap, shape and dtype of stim.json
        for batch in dsview.batches(m.path("stim.npy"), batch_size=256, seed=0):
            ...                                   # shuffled, hinted, one pread per run of rows

dsview.torch (imported on its own: it imports torch) has ViewDataset and
loader(). Errors name the path: ValueError for a path not on a dsview mount,
FileNotFoundError for a missing view, IndexError for hinted rows out of
range (nothing queued), MountError (an OSError) for a failed mount or a
daemon that died, with the CLI's reason or the daemon's log."""
from ._hints import PREFETCH_MAX, hint
from ._mount import Mount, MountError
from ._source import ArraySource, batches
from ._sources import Sources
from ._sources import of as sources
from ._views import info, on_mount
from ._views import open_any as open

__all__ = ["open", "info", "hint", "Mount", "MountError", "ArraySource", "batches", "on_mount",
           "PREFETCH_MAX", "Reader", "Array", "Sources", "sources"]


def __getattr__(name):
    """Reader and Array load libdsview.so when first named."""
    if name in ("Reader", "Array"):
        from . import _reader
        return getattr(_reader, name)
    raise AttributeError(f"module 'dsview' has no attribute {name!r}")
__version__ = "0.1.0"
