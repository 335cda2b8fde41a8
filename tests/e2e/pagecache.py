"""How much of a file is in the page cache: mincore over a shared
read-only mapping of it, as fincore does, touching no page. The e2e tests
and the benches (bench/benchlib.py) share it."""
import ctypes
import mmap
import os

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]


def resident_pages(path):
    """(pages in the page cache, pages) of the file, or (None, pages) when
    it cannot be mapped or asked."""
    size = os.path.getsize(path)
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    if size == 0:
        return 0, 0
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return None, pages
        try:
            vec = np.zeros(pages, np.uint8)
            if _libc.mincore(addr, size, vec.ctypes.data) != 0:
                return None, pages
            return int(np.count_nonzero(vec & 1)), pages
        finally:
            _libc.munmap(addr, size)
    finally:
        os.close(fd)


def resident(path):
    """Fraction of the file's pages in the page cache (NaN when unknown)."""
    n, pages = resident_pages(path)
    if pages == 0:
        return 1.0
    return float("nan") if n is None else n / pages
