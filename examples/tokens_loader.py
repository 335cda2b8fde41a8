#!/usr/bin/python3
"""A language-model training loop over the token windows of tokens.ini,
read with dsview.torch.loader: whole shuffled batches of (1025,) int64
windows, hinted to the mount ahead of the reads, split into input (first
1024 tokens) and target (last 1024). No Python-side astype: the mount
already serves int64.

    dsview mount examples/tokens.ini /mnt/dsview
    python3 examples/tokens_loader.py /mnt/dsview/tokens.npy [--workers 4] [--batch 32] [--epochs 1]

(From the source tree without `make install`: PYTHONPATH=python.) Prints
one summary line: windows, batches, and the sum of every token seen (a
checksum the e2e test compares with numpy)."""
import argparse

import torch

import dsview.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    loader = dsview.torch.loader(args.path, batch_size=args.batch, num_workers=args.workers, seed=0)
    width = dsview.info(args.path)["shape"][1]
    seen = batches = total = 0
    for _ in range(args.epochs):
        for batch in loader:
            assert batch.dtype == torch.int64 and batch.shape[1] == width
            inputs, targets = batch[:, :-1], batch[:, 1:]  # what a model would take
            assert inputs.shape == targets.shape
            seen += batch.shape[0]
            batches += 1
            total += int(batch.sum())
    print(f"windows {seen} batches {batches} width {width} token_sum {total}")


if __name__ == "__main__":
    main()
