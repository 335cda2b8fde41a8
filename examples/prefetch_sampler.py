#!/usr/bin/python3
"""Sampler hints for dsview: tell the mount which rows the next batches
will read, so it makes them and stores them in the page cache before the
DataLoader workers fault them (docs/performance.md, "Sampler hints").

    from prefetch_sampler import HintingBatchSampler
    batches = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(ds), 256, False)
    loader = torch.utils.data.DataLoader(
        ds, batch_sampler=HintingBatchSampler(batches, "/mnt/dsview/stim.npy", lookahead=4),
        num_workers=4)

The workers read the view as before (each its own np.load(mmap_mode="r")
after the fork); only the sampler, in the main process, talks to the mount.
Hints are advice: a row hinted and never read costs the daemon one row of
work, a row read and never hinted is read as it always was.

hint(fd, rows) is the call itself: an ioctl on an open V.dat or V.npy with
the view rows (0 <= row < the view's rows; OSError EINVAL for anything
else, and then nothing is queued). Python's fcntl.ioctl copies at most 1024
bytes from an immutable buffer, so the request goes in a bytearray."""
import fcntl
import os
import struct
from collections import deque

import numpy as np

PREFETCH_MAX = 2046  # rows per ioctl (dsview/fs.h DSV_PREFETCH_MAX)
_SIZE = 8 + 8 * PREFETCH_MAX  # struct dsv_prefetch_rows: u32 n, u32 flags, i64 rows[]
DSV_IOC_PREFETCH = (1 << 30) | (_SIZE << 16) | (ord("d") << 8) | 1  # _IOW('d', 1, ...)


def hint(fd, rows):
    """Queues view rows (any integer sequence) to be made ahead of reads,
    PREFETCH_MAX per ioctl."""
    rows = np.asarray(rows, dtype="<i8").ravel()
    for i in range(0, len(rows), PREFETCH_MAX):
        part = rows[i:i + PREFETCH_MAX]
        buf = bytearray(_SIZE)
        struct.pack_into("<II", buf, 0, len(part), 0)
        buf[8:8 + 8 * len(part)] = part.tobytes()
        fcntl.ioctl(fd, DSV_IOC_PREFETCH, buf, True)


class HintingBatchSampler:
    """Wraps a batch sampler (anything iterable over lists of row indices):
    yields the same batches in the same order, and before yielding batch k
    hints batch k + lookahead to the view at path (its .npy or .dat)."""

    def __init__(self, batches, path, lookahead=4):
        self.batches, self.path, self.lookahead = batches, path, lookahead
        self.fd = None

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        ahead = deque()
        for batch in self.batches:
            hint(self.fd, batch)
            ahead.append(batch)
            if len(ahead) > self.lookahead:
                yield ahead.popleft()
        while ahead:
            yield ahead.popleft()

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
