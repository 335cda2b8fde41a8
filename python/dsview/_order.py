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

    def state(self):
        """What a saved state must match, and what it carries, of the plan."""
        return {"seed": self.seed, "shuffle": self.shuffle, "samples": self.n,
                "world_size": self.world_size, "batch_size": self.batch_size,
                "drop_last": self.drop_last}

    def restore(self, state):
        """Checks state was saved by a plan of this data and takes its order."""
        if state["samples"] != self.n:
            raise ValueError(f"the state is of {state['samples']} samples; this loader has "
                             f"{self.n}: a state resumes the same data")
        if state["cursor"] % (state["world_size"] * state["batch_size"]) and \
                state["cursor"] != state["samples"]:
            raise ValueError(f"cursor {state['cursor']} is not at a whole step of "
                             f"{state['world_size']} x {state['batch_size']} samples")
        self.seed, self.shuffle = state["seed"], state["shuffle"]


def _apportion(total, weights):
    """total split in proportion to weights, whole numbers summing to total
    (largest remainders)."""
    w = np.asarray(weights, dtype=np.float64)
    share = w / w.sum() * total
    counts = np.floor(share).astype(np.int64)
    rest = total - int(counts.sum())
    counts[np.argsort(-(share - counts), kind="stable")[:rest]] += 1
    return counts


class MixturePlan:
    """The batches of one rank over several datasets of sizes[d] samples,
    each batch from one dataset, carrying its index d. An epoch has as many
    batches as the datasets have together (sum of ceil(n_d / batch_size),
    floor with drop_last); without weights each dataset gives its own
    batches, every sample once an epoch; with weights the epoch's batches
    are shared out by weight, a dataset's samples read round after round
    of its own order (a small dataset repeats, a large one is read in
    part). The order of the batches is a keyed bijection of the epoch's
    batch positions, so the state is the batch cursor alone; ranks take
    global steps of world_size batches."""

    def __init__(self, sizes, batch_size, weights=None, world_size=1, rank=0, seed=0,
                 drop_last=False):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of a world of {world_size}: 0 <= rank < world_size")
        self.sizes = [int(n) for n in sizes]
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError(f"a mixture needs datasets of at least one sample: {self.sizes}")
        if weights is not None:
            weights = [float(w) for w in weights]
            if len(weights) != len(self.sizes) or min(weights) < 0 or sum(weights) <= 0:
                raise ValueError(f"weights {weights}: one a dataset, none negative, not all 0")
        self.weights, self.batch_size, self.drop_last = weights, batch_size, drop_last
        self.world_size, self.rank, self.seed, self.shuffle = world_size, rank, seed, True
        per = [n // batch_size if drop_last else -(-n // batch_size) for n in self.sizes]
        self.n = sum(per)  # the epoch's batches: the cursor counts these
        self.counts = np.array(per) if weights is None else _apportion(self.n, weights)
        self.first = np.concatenate([[0], np.cumsum(self.counts)])

    def __len__(self):
        return self.batches_from(0)

    def batches_from(self, cursor):
        whole, tail = divmod(self.n - cursor, self.world_size)
        return whole + (1 if self.rank < tail and not self.drop_last else 0)

    def _rows(self, d, j, epoch):
        """The samples of dataset d's j-th batch of the epoch."""
        n, B = self.sizes[d], self.batch_size
        seed = self.seed * 1000003 + d
        if self.weights is None:
            pos = np.arange(j * B, min((j + 1) * B, n), dtype=np.uint64)
            return Order(n, seed, epoch)(pos)
        p = np.arange(j * B, (j + 1) * B, dtype=np.int64)
        rounds, at = p // n, (p % n).astype(np.uint64)
        out = np.empty(len(p), np.int64)
        for r in np.unique(rounds):  # a batch straddles at most a few rounds
            sel = rounds == r
            out[sel] = Order(n, seed, epoch * 65536 + int(r))(at[sel])
        return out

    def batches(self, epoch, cursor=0):
        """((dataset, samples), cursor after the step) of this rank."""
        order = Order(self.n, self.seed, epoch)
        W, c = self.world_size, cursor
        while c < self.n:
            step_end = min(c + W, self.n)
            if c + self.rank < step_end and (step_end - c == W or not self.drop_last):
                slot = int(order(np.array([c + self.rank], dtype=np.uint64))[0])
                d = int(np.searchsorted(self.first, slot, side="right") - 1)
                yield (d, self._rows(d, slot - int(self.first[d]), epoch)), step_end
            elif step_end - c < W and self.drop_last:
                return
            c = step_end

    def state(self):
        return {"seed": self.seed, "sizes": self.sizes, "weights": self.weights,
                "samples": self.n, "world_size": self.world_size,
                "batch_size": self.batch_size, "drop_last": self.drop_last}

    def restore(self, state):
        if state.get("sizes") != self.sizes or state.get("weights") != self.weights or \
                state["batch_size"] != self.batch_size or state["drop_last"] != self.drop_last:
            raise ValueError("the state is of another mixture (datasets' sizes, weights, "
                             "batch size or drop_last differ): a state resumes the same one")
        self.seed = state["seed"]
