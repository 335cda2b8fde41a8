#!/usr/bin/python3
"""A language-model training loop over the token windows of tokens.ini: a
PyTorch DataLoader whose forked workers each open the int64 view with
np.load(mmap_mode="r"); every item is one (1025,) int64 window, split into
input (first 1024 tokens) and target (last 1024). No Python-side astype: the
mount already serves int64.

    dsview mount examples/tokens.ini /mnt/dsview
    python3 examples/tokens_loader.py /mnt/dsview/tokens.npy [--workers 4] [--batch 32] [--epochs 1]

Prints one summary line: windows, batches, and the sum of every token seen
(a checksum the e2e test compares with numpy)."""
import argparse

import numpy as np
import torch


class TokenWindows(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path, self.arr = path, None
        a = np.load(path, mmap_mode="r")
        assert a.dtype == np.int64 and a.ndim == 2, (a.dtype, a.shape)
        self.n, self.width = a.shape
        del a

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.arr is None:  # opened once per worker, after the fork
            self.arr = np.load(self.path, mmap_mode="r")
        return torch.from_numpy(np.array(self.arr[i]))  # int64: no conversion


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    ds = TokenWindows(args.path)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers,
                                         generator=torch.Generator().manual_seed(0))
    seen = batches = total = 0
    for _ in range(args.epochs):
        for batch in loader:
            assert batch.dtype == torch.int64 and batch.shape[1] == ds.width
            inputs, targets = batch[:, :-1], batch[:, 1:]  # what a model would take
            assert inputs.shape == targets.shape
            seen += batch.shape[0]
            batches += 1
            total += int(batch.sum())
    print(f"windows {seen} batches {batches} width {ds.width} token_sum {total}")


if __name__ == "__main__":
    main()
