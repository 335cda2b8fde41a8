"""libdsview.so through ctypes: the in-process reader of dsview/reader.h.
Nothing is compiled at install; the library is found at first use:
$DSVIEW_LIBRARY, the build of the source tree this package lies in, the
dynamic loader's search (ld.so.cache, LD_LIBRARY_PATH), then the usual
install prefixes."""
import ctypes
import errno
import os
import threading

SONAME = "libdsview.so.0"
_PREFIXES = ("/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64")
MAX_DIMS = 32  # DSV_MAX_DIMS

# dsv_err codes (dsview/dsview.h)
NOMEM, IO, FORMAT, UNSUPPORTED, CORRUPT, CHECKSUM, TRUNCATED, INVALID, NOTFOUND = \
    -1, -2, -3, -4, -5, -6, -7, -8, -9
DTYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
          "float16", "float32", "float64", "bfloat16")


class ErrBuf(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("file", ctypes.c_char * 4096),
                ("where", ctypes.c_char * 4096), ("line", ctypes.c_int),
                ("key", ctypes.c_char * 64), ("reason", ctypes.c_char * 1024),
                ("msg", ctypes.c_char * 1280)]


class ViewDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("json", ctypes.c_char_p), ("dtype", ctypes.c_int),
                ("ndim", ctypes.c_int), ("shape", ctypes.c_uint64 * MAX_DIMS),
                ("rows", ctypes.c_uint64), ("row_bytes", ctypes.c_uint64),
                ("nbytes", ctypes.c_uint64)]


class LibraryNotFound(ImportError):
    """libdsview.so could not be loaded."""


_lib = None
_lock = threading.Lock()


def _candidates():
    env = os.environ.get("DSVIEW_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "..", "..", "build", SONAME)  # python/dsview in the tree
    if os.path.exists(tree):
        yield os.path.normpath(tree)
    yield SONAME
    for p in _PREFIXES:
        yield os.path.join(p, SONAME)


def _declare(lib):
    P, I, S, U64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64
    E = ctypes.POINTER(ErrBuf)
    sig = {
        "dsv_reader_open": (I, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P), E]),
        "dsv_reader_close": (None, [P]),
        "dsv_reader_nviews": (S, [P]),
        "dsv_reader_find": (I, [P, ctypes.c_char_p]),
        "dsv_reader_view_get": (I, [P, S, ctypes.POINTER(ViewDesc)]),
        "dsv_reader_skipped_json": (ctypes.c_char_p, [P]),
        "dsv_reader_read": (I, [P, S, U64, S, P, E]),
        "dsv_reader_read_rows": (I, [P, S, P, S, P, E]),
        "dsv_reader_stats": (I, [P, ctypes.c_char_p, S]),
        "dsv_strerror": (ctypes.c_char_p, [I]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


def lib():
    """The loaded library (loaded once), or LibraryNotFound saying how to
    get one."""
    global _lib
    with _lock:
        if _lib is None:
            tried = []
            for c in _candidates():
                try:
                    _lib = _declare(ctypes.CDLL(c))
                    break
                except (OSError, AttributeError) as e:
                    tried.append(f"{c}: {e}")
            else:
                raise LibraryNotFound(
                    "dsview: cannot load the in-process reader's library (" + "; ".join(tried)
                    + "). Install it with 'make install' in dsview's source tree, or set "
                    "DSVIEW_LIBRARY to the path of libdsview.so.0")
        return _lib


def error(eb, default_code=IO):
    """The Python exception of a failed call, from its error buffer."""
    code = eb.code or default_code
    msg = eb.msg.decode(errors="replace") or lib().dsv_strerror(code).decode()
    if code == NOMEM:
        return MemoryError(msg)
    if code == NOTFOUND:
        return FileNotFoundError(errno.ENOENT, msg)
    if code in (IO, CORRUPT, CHECKSUM, TRUNCATED):
        return OSError(errno.EIO, msg)
    return ValueError(msg)
