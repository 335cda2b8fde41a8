#!/usr/bin/python3
"""Train-time reading of a dsview mount: a map-style PyTorch Dataset over a
view's .npy. Each DataLoader worker (forked) opens its own memmap lazily, so
nothing is shared across fork and nothing is converted in Python: the bytes
arrive normalised.

    dsview mount examples/neuro.ini /mnt/dsview
    python3 examples/torch_loader.py /mnt/dsview/stim.npy
"""
import sys

import numpy as np


class ViewDataset:
    def __init__(self, path, bfloat16=False):
        self.path, self.bfloat16, self.arr = path, bfloat16, None
        self.n = np.load(path, mmap_mode="r").shape[0]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.arr is None:  # first use in this worker process
            self.arr = np.load(self.path, mmap_mode="r")
        row = np.array(self.arr[i])  # one copy out of the page cache
        try:
            import torch
            t = torch.from_numpy(row)
            return t.view(torch.bfloat16) if self.bfloat16 else t
        except ImportError:
            return row


if __name__ == "__main__":
    ds = ViewDataset(sys.argv[1])
    try:
        import torch
        loader = torch.utils.data.DataLoader(ds, batch_size=256, shuffle=True, num_workers=8)
        for batch in loader:
            print(batch.shape, batch.dtype)
            break
    except ImportError:
        print(len(ds), ds[0].shape, ds[0].dtype, "(torch not installed; numpy rows)")
