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
dropped with drop_last).

Drawn with replacement (a Plan's replacement=True, weights), position p
holds a keyed hash of (seed, epoch, p) reduced to a sample, uniformly or
by weight, so the same cursor arithmetic resumes and reshards it. A
user's own sampler (SamplerPlan) is iterated again on resume and the
samples before the cursor passed over."""
import itertools
import zlib

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


_C1, _C2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _mix(x):
    """splitmix64's finaliser: a bijection of uint64 that spreads each
    bit over all of them."""
    x = (x ^ (x >> np.uint64(30))) * _C1
    x = (x ^ (x >> np.uint64(27))) * _C2
    return x ^ (x >> np.uint64(31))


class Draws:
    """draws(positions): the samples an epoch draws with replacement at
    those positions, each from a keyed hash of (seed, epoch, position):
    uniform over [0, n), or by weights (the inverse of their cumulative
    sum; a sample of weight 0 is never drawn). Nothing is held per draw."""

    def __init__(self, n, seed, epoch, weights=None):
        self.n = int(n)
        ss = np.random.SeedSequence([int(seed) & (2**63 - 1), int(epoch), 0x5EED])
        self.keys = ss.generate_state(2, np.uint64)
        self.cdf = None
        if weights is not None:
            c = np.cumsum(weights, dtype=np.float64)
            self.cdf = c / c[-1]

    def __call__(self, positions):
        x = _mix(_mix(np.asarray(positions, dtype=np.uint64) ^ self.keys[0]) ^ self.keys[1])
        if self.cdf is None:
            return (x % np.uint64(self.n)).astype(np.int64)
        u = (x >> np.uint64(11)).astype(np.float64) * 2.0**-53  # [0, 1), 53 bits
        return np.minimum(np.searchsorted(self.cdf, u, side="right"), self.n - 1).astype(np.int64)


def _checked_weights(weights, n):
    """weights as float64, one a sample, finite, none negative, not all 0."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    if len(w) != n or not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise ValueError(f"weights: one a sample ({n}; got {len(w)}), finite, none negative, "
                         f"not all 0")
    return w


def _sampling(positions, replacement, weights_crc):
    """An epoch's sampling in words, for a refused state."""
    how = "without replacement" if not replacement else \
        "drawn by weights" if weights_crc is not None else "drawn with replacement"
    return f"{positions} samples an epoch {how}"


class Plan:
    """The batches of one rank: an epoch of num_samples positions (default
    the n samples) over n samples, batch_size each, world_size ranks, this
    one rank. Without replacement a position holds a sample of the
    epoch's permutation (so num_samples <= n: a sample at most once); with
    replacement (or weights) a draw."""

    def __init__(self, n, batch_size, world_size=1, rank=0, shuffle=True, seed=0,
                 drop_last=False, num_samples=None, replacement=False, weights=None):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} of a world of {world_size}: 0 <= rank < world_size")
        self.size = int(n)
        self.n = self.size if num_samples is None else int(num_samples)
        if self.n < 1 and num_samples is not None:
            raise ValueError(f"num_samples must be at least 1, not {num_samples}")
        if weights is not None and not replacement:
            raise ValueError("weights draw samples with replacement: give replacement=True")
        if not replacement and self.n > self.size:
            raise ValueError(f"num_samples {self.n} > the {self.size} samples: without "
                             f"replacement an epoch reads a sample at most once "
                             f"(replacement=True draws)")
        self.weights = None if weights is None else _checked_weights(weights, self.size)
        self.batch_size, self.world_size, self.rank = batch_size, world_size, rank
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.replacement = bool(replacement)

    def _weights_crc(self):
        return None if self.weights is None else zlib.crc32(self.weights.tobytes())

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
        order = Draws(self.size, self.seed, epoch, self.weights) if self.replacement \
            else Order(self.size, self.seed, epoch, self.shuffle)
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
        return {"seed": self.seed, "shuffle": self.shuffle, "samples": self.size,
                "positions": self.n, "replacement": self.replacement,
                "weights_crc32": self._weights_crc(), "world_size": self.world_size,
                "batch_size": self.batch_size, "drop_last": self.drop_last}

    def restore(self, state):
        """Checks state was saved by a plan of this data and takes its order."""
        if state.get("sampler"):
            raise ValueError(f"the state is of another sampling (sampler {state['sampler']}); "
                             f"this loader's is its own order: a state resumes the same one")
        if state["samples"] != self.size:
            raise ValueError(f"the state is of {state['samples']} samples; this loader has "
                             f"{self.size}: a state resumes the same data")
        positions = state.get("positions", state["samples"])
        saved = _sampling(positions, state.get("replacement"), state.get("weights_crc32"))
        mine = _sampling(self.n, self.replacement, self._weights_crc())
        if saved != mine or state.get("weights_crc32") != self._weights_crc():
            other = " (other weights)" if saved == mine else ""
            raise ValueError(f"the state is of {saved}{other}; this loader's of {mine}: a "
                             f"state resumes the same sampling")
        if state["cursor"] % (state["world_size"] * state["batch_size"]) and \
                state["cursor"] != positions:
            raise ValueError(f"cursor {state['cursor']} is not at a whole step of "
                             f"{state['world_size']} x {state['batch_size']} samples")
        self.seed, self.shuffle = state["seed"], state["shuffle"]


class SamplerPlan:
    """The batches of a user's sampler (any iterable of sample indices with
    a length, e.g. torch's WeightedRandomSampler or a DistributedSampler,
    which shards itself), batch_size each, iterated anew every epoch
    (set_epoch(epoch) called first where it has one). The cursor counts
    the samples taken; a resumed epoch iterates the sampler again and
    passes over them, exact where the sampler gives the same order for the
    same epoch (a seeded generator): dsview cannot check that."""

    world_size, rank, seed, shuffle = 1, 0, None, None

    def __init__(self, sampler, n, batch_size, drop_last=False):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        try:
            self.n = len(sampler)
        except TypeError:
            raise TypeError(f"sampler {type(sampler).__name__}: an iterable of sample indices "
                            f"with a length (len(sampler))") from None
        self.sampler, self.size, self.batch_size = sampler, int(n), batch_size
        self.drop_last, self.name = drop_last, type(sampler).__name__

    @property
    def step(self):
        return self.batch_size

    def __len__(self):
        return self.batches_from(0)

    def batches_from(self, cursor):
        whole, tail = divmod(self.n - cursor, self.batch_size)
        return whole + (1 if tail and not self.drop_last else 0)

    def batches(self, epoch, cursor=0):
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
        it, c = itertools.islice(iter(self.sampler), cursor, None), cursor
        while True:
            rows = np.fromiter(itertools.islice(it, self.batch_size), dtype=np.int64)
            if not len(rows) or (len(rows) < self.batch_size and self.drop_last):
                return
            bad = rows[(rows < 0) | (rows >= self.size)]
            if len(bad):
                raise IndexError(f"sampler {self.name} gave sample {int(bad[0])}; the data "
                                 f"has {self.size} (0 to {self.size - 1})")
            c += len(rows)
            yield rows, c

    def state(self):
        return {"seed": None, "shuffle": None, "samples": self.size, "positions": self.n,
                "sampler": self.name, "world_size": 1, "batch_size": self.batch_size,
                "drop_last": self.drop_last}

    def restore(self, state):
        if (state.get("sampler"), state["samples"], state.get("positions"),
                state["batch_size"], state["drop_last"]) != \
                (self.name, self.size, self.n, self.batch_size, self.drop_last):
            raise ValueError(f"the state is of another sampling (sampler "
                             f"{state.get('sampler')}, {state['samples']} samples, "
                             f"{state.get('positions')} an epoch, batch size "
                             f"{state['batch_size']}, drop_last {state['drop_last']}); this "
                             f"loader's: sampler {self.name}, {self.size}, {self.n}, "
                             f"{self.batch_size}, {self.drop_last}")


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
