#!/usr/bin/python3
"""What the loader's order costs (make bench-loader-state): a stride-1
window view of a 50 M-token uint16 stream (49,998,976 windows of 1,025
tokens) read in-process by dsview.torch.loader, shuffled: the time to the
first batch and the peak RSS (the order is a keyed bijection: no
permutation of the windows is held), and the cost of state_dict().

  /usr/bin/python3 bench/loader_state_bench.py"""
import os
import resource
import shutil
import sys
import tempfile
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import dsview  # noqa: E402
import dsview.torch as dtorch  # noqa: E402


def main():
    d = tempfile.mkdtemp(prefix="dsview-state-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    try:
        np.lib.format.open_memmap(os.path.join(d, "tokens.npy"), "w+", np.uint16,
                                  (50_000_000,)).flush()
        with open(os.path.join(d, "m.ini"), "w") as f:
            f.write("[t]\nsource = tokens.npy\ndtype = int64\nwindow = 1025\nstride = 1\n"
                    "window_axis = 0\n")
        x = dsview.open(os.path.join(d, "m.ini"), "t")
        t = time.perf_counter()
        loader = dtorch.loader(x, batch_size=8, seed=0)
        batches = iter(loader)
        next(batches)
        first = time.perf_counter() - t
        n = 10000
        cost = timeit.timeit(loader.state_dict, number=n) / n
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{x.shape[0]:,} windows of {x.shape[1]}: first batch {first * 1e3:.1f} ms, "
              f"peak RSS {rss:.0f} MB, state_dict() {cost * 1e6:.1f} us "
              f"(target < 1 ms: {'met' if cost < 1e-3 else 'NOT met'})")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
