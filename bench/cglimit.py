"""Control groups for the benchmarks and tests that run where storage or
memory is the bottleneck: a group whose read bandwidth from one block
device is capped, and/or whose memory (page cache included) is limited.

cgroup v1 (blkio.throttle.read_bps_device, memory.limit_in_bytes) where its
controllers are mounted under /sys/fs/cgroup/{blkio,memory}; else cgroup v2
(io.max rbps, memory.max) where /sys/fs/cgroup is the unified hierarchy.
A process joins with join(); what it starts afterwards (a FUSE daemon that
forks, a forked reader) is in the group too. Reads are charged to the
process that issues them, so the reader of a plain file and the daemon of a
mount must both be inside: a child that joins, then mounts and reads, does
both. Root only."""
import os
import time

ROOT = "/sys/fs/cgroup"
V2 = os.path.exists(os.path.join(ROOT, "cgroup.controllers"))


def disk_of(path):
    """'MAJ:MIN' of the whole disk holding path (a partition's parent), or
    None when path is on no block device (tmpfs, overlay, a network
    filesystem): then the cap needs a loop device holding the data."""
    st = os.stat(path)
    sysdir = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    if not os.path.exists(sysdir):
        return None
    real = os.path.realpath(sysdir)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    with open(os.path.join(real, "dev")) as f:
        return f.read().strip()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Group:
    """A new control group named name: read_bps caps reads from disk
    ('MAJ:MIN') to that many bytes/s (0: no cap), mem limits its memory to
    that many bytes (0: no limit). remove() when done."""

    def __init__(self, name, disk=None, read_bps=0, mem=0):
        self.dirs = []
        if V2:
            d = os.path.join(ROOT, name)
            os.makedirs(d, exist_ok=True)
            self.dirs.append(d)
            if read_bps:
                _write(os.path.join(d, "io.max"), f"{disk} rbps={read_bps}\n")
            if mem:
                _write(os.path.join(d, "memory.max"), f"{mem}\n")
                _write(os.path.join(d, "memory.swap.max"), "0\n")
            return
        if read_bps:
            d = os.path.join(ROOT, "blkio", name)
            os.makedirs(d, exist_ok=True)
            self.dirs.append(d)
            _write(os.path.join(d, "blkio.throttle.read_bps_device"), f"{disk} {read_bps}\n")
        if mem:
            d = os.path.join(ROOT, "memory", name)
            os.makedirs(d, exist_ok=True)
            self.dirs.append(d)
            _write(os.path.join(d, "memory.limit_in_bytes"), f"{mem}\n")
            self.oom_control = os.path.join(d, "memory.oom_control")

    def join(self, pid=0):
        for d in self.dirs:
            _write(os.path.join(d, "cgroup.procs"), f"{pid or os.getpid()}\n")

    def oom_kills(self):
        """OOM kills in the group so far (v1 memory.oom_control, v2
        memory.events), 0 when it has no memory limit."""
        for d in self.dirs:
            for name, key in (("memory.oom_control", "oom_kill"), ("memory.events", "oom_kill")):
                p = os.path.join(d, name)
                if os.path.exists(p):
                    with open(p) as f:
                        for line in f:
                            k, v = line.split()
                            if k == key:
                                return int(v)
        return 0

    def remove(self, wait=10.0):
        """Removes the group once its last process (a daemon that is still
        exiting) has left."""
        for d in self.dirs:
            end = time.monotonic() + wait
            while True:
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.1)
