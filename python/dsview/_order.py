"""The order a loader reads an epoch in, and how it is cut between ranks,
as a pure function of (seed, epoch, world size, cursor): nothing depends on
the process, so a loader given a saved state yields exactly the batches
the uninterrupted one would have, and another number of ranks can share
the rest of the epoch.

An epoch is a sequence of n global positions; position p holds sample
order(p), a keyed bijection of [0, n) (a Feistel network over the
smallest even power of two >= n, walked until it lands inside [0, n)), so
no permutation of n samples is ever held in memory. Ranks take global
steps of world_size * batch_size positions: rank r the r-th batch_size of
each step. The cursor counts the positions of whole steps taken; the last
step, shorter than a whole one, is split evenly between the ranks (or
dropped with drop_last)."""
import numpy as np

_ROUNDS = 4
_MUL = np.uint64(0x9E3779B97F4A7C15)


class Order:
    """order(positions) of an epoch: the samples at those global
    positions, shuffled by (seed, epoch) or in order."""

    def __init__(self, n, seed, epoch, shuffle=True):
        self.n, self.shuffle = int(n), shuffle
        bits = max(2, (self.n - 1).bit_length())
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
        ss = np.random.SeedSequence([int(seed) & (2**63 - 1), int(epoch)])
        self.keys = ss.generate_state(_ROUNDS, np.uint64)

    def _feistel(self, x):
        h = np.uint64(self.half)
        left, right = x >> h, x & self.mask
        for k in self.keys:
            f = ((right ^ k) * _MUL) >> np.uint64(64 - self.half) if self.half else right
            left, right = right, (left ^ f) & self.mask
        return (left << h) | right

    def __call__(self, positions):
        p = np.asarray(positions, dtype=np.uint64)
        if not self.shuffle or self.n <= 1:
            return p.astype(np.int64)
        out = self._feistel(p)
        out_of_range = out >= np.uint64(self.n)
        while out_of_range.any():  # cycle-walking: a few rounds at most
            out[out_of_range] = self._feistel(out[out_of_range])
            out_of_range = out >= np.uint64(self.n)
        return out.astype(np.int64)


class Plan:
    """The batches of one rank: n samples, batch_size each, world_size
    ranks, this one rank."""

    def __init__(self, n, batch_size, world_size=1, rank=0, shuffle=True, seed=0,
                 drop_last=False):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of a world of {world_size}: 0 <= rank < world_size")
        self.n, self.batch_size, self.world_size, self.rank = int(n), batch_size, world_size, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last

    @property
    def step(self):
        return self.world_size * self.batch_size

    def __len__(self):
        """Batches of this rank in a whole epoch."""
        return self.batches_from(0)

    def batches_from(self, cursor):
        whole, tail = divmod(self.n - cursor, self.step)
        return whole + (1 if tail and not self.drop_last and self._tail(cursor + whole * self.step)[1] else 0)

    def _tail(self, start):
        """This rank's share [a, b) of the last, short step from start."""
        rest = self.n - start
        share = -(-rest // self.world_size)  # ceil
        a = min(self.n, start + self.rank * share)
        return a, min(self.n, a + share) - a

    def batches(self, epoch, cursor=0):
        """(samples, cursor after the step) of this rank from cursor on."""
        order = Order(self.n, self.seed, epoch, self.shuffle)
        B, c = self.batch_size, cursor
        while c + self.step <= self.n:
            a = c + self.rank * B
            yield order(np.arange(a, a + B, dtype=np.uint64)), c + self.step
            c += self.step
        if c < self.n and not self.drop_last:
            a, k = self._tail(c)
            if k:
                yield order(np.arange(a, a + k, dtype=np.uint64)), self.n
