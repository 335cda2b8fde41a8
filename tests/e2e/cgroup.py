"""Control groups for the tests and benchmarks that run where memory or
storage is the bottleneck (test_memory.py, bench/experiments/store.py and mem.py): a group
whose memory, page cache included, is limited with no swap, and/or whose
read bandwidth from one block device is capped.

cgroup v2 (memory.max, io.max rbps) where the unified hierarchy offers the
controller, else cgroup v1 (memory.limit_in_bytes,
blkio.throttle.read_bps_device) where a v1 hierarchy holds it; the mounts
are found in /proc/self/mountinfo. A group is made at the root of each
hierarchy it needs and removed by remove(). A process joins with add();
what it starts afterwards (a FUSE daemon that forks, a forked reader) is in
the group too. Reads are charged to the process that issues them, so the
reader of a plain file and the daemon of a mount must both be inside: a
child that joins, then mounts and reads, does both. Root only."""
import os
import time

V1_NAME = {"memory": "memory", "io": "blkio"}  # a v2 controller's v1 name


def _mounts():
    """(mount point, filesystem type, super options) of each mount."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, r = left.split(), right.split()
            if len(fields) > 4 and len(r) > 2:
                out.append((fields[4], r[0], r[2].split(",")))
    return out


def hierarchy(controller):
    """('v2', root) or ('v1', root) of a hierarchy with controller
    ("memory" or "io"), preferring v2; or (None, the reason)."""
    v1 = None
    for mp, fstype, opts in _mounts():
        if fstype == "cgroup2":
            try:
                with open(os.path.join(mp, "cgroup.controllers")) as f:
                    if controller in f.read().split():
                        return "v2", mp
            except OSError:
                pass
        elif fstype == "cgroup" and V1_NAME[controller] in opts and v1 is None:
            v1 = mp
    if v1:
        return "v1", v1
    return None, f"no cgroup hierarchy with the {controller} controller is mounted"


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


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _keyed(path, key):
    """The value of key in a flat-keyed file (memory.events, memory.stat)."""
    for line in (_read(path) or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return None


def _home(version, root, controller, pid):
    """The directory of pid's cgroup in a hierarchy."""
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            num, ctl, rel = line.rstrip("\n").split(":", 2)
            if (version == "v2" and num == "0" and ctl == "") or \
               (version == "v1" and V1_NAME[controller] in ctl.split(",")):
                d = os.path.join(root, rel.lstrip("/"))
                return d if os.path.isdir(d) else root
    return root


class Group:
    """A new control group named PREFIX-PID-NS: mem limits its memory to
    that many bytes, swap off (0: no limit); read_bps caps its reads from
    disk ('MAJ:MIN') to that many bytes/s (0: no cap). Raises OSError where
    the kernel refuses, with nothing left behind. remove() when done."""

    def __init__(self, prefix, mem=0, disk=None, read_bps=0):
        self.name = f"{prefix}-{os.getpid()}-{time.monotonic_ns()}"
        self.dirs = {}  # controller -> (version, root, directory)
        self.homes = {}  # directory -> the creating process's cgroup there
        self.enabled = []  # (root, controller) switched on for the root's children
        try:
            if mem:
                self._make("memory")
                self._limit_memory(mem)
            if read_bps:
                version, _, d = self._make("io")
                if version == "v2":
                    _write(os.path.join(d, "io.max"), f"{disk} rbps={read_bps}\n")
                else:
                    _write(os.path.join(d, "blkio.throttle.read_bps_device"), f"{disk} {read_bps}\n")
        except BaseException:
            self.remove()
            raise

    def _make(self, controller):
        version, root = hierarchy(controller)
        if version is None:
            raise OSError(root)
        d = os.path.join(root, self.name)
        if version == "v2":
            ctl = _read(os.path.join(root, "cgroup.subtree_control")) or ""
            if controller not in ctl.split():
                _write(os.path.join(root, "cgroup.subtree_control"), f"+{controller}")
                self.enabled.append((root, controller))
        if d not in self.homes:
            home = _home(version, root, controller, os.getpid())
            os.mkdir(d)
            self.homes[d] = home
        self.dirs[controller] = (version, root, d)
        return self.dirs[controller]

    def _limit_memory(self, mem):
        version, _, d = self.dirs["memory"]
        if version == "v2":
            _write(os.path.join(d, "memory.max"), f"{mem}\n")
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                _write(os.path.join(d, "memory.swap.max"), "0\n")
            return
        _write(os.path.join(d, "memory.limit_in_bytes"), f"{mem}\n")
        try:
            _write(os.path.join(d, "memory.swappiness"), "0\n")
            _write(os.path.join(d, "memory.memsw.limit_in_bytes"), f"{mem}\n")
        except OSError:
            pass  # no swap accounting: no swap to worry about, or just less strict

    def _mem(self, v2_name, v1_name):
        version, _, d = self.dirs["memory"]
        return os.path.join(d, v2_name if version == "v2" else v1_name)

    def add(self, pid=0):
        """Moves process pid (0: this one), every thread, into the group."""
        for d in self.homes:
            _write(os.path.join(d, "cgroup.procs"), f"{pid or os.getpid()}\n")

    def leave(self, pid=0):
        """Moves process pid (0: this one) back to the groups the creating
        process was in."""
        for home in self.homes.values():
            _write(os.path.join(home, "cgroup.procs"), f"{pid or os.getpid()}\n")

    def members(self):
        """The pids in the group (in its first hierarchy)."""
        for d in self.homes:
            return [int(x) for x in (_read(os.path.join(d, "cgroup.procs")) or "").split()]
        return []

    def oom_kills(self):
        """OOM kills in the group so far (v2 memory.events, v1
        memory.oom_control); 0 without a memory limit, None where the
        kernel does not count them."""
        if "memory" not in self.dirs:
            return 0
        return _keyed(self._mem("memory.events", "memory.oom_control"), "oom_kill")

    def peak(self):
        """Peak memory in bytes (None where the kernel does not keep it:
        v2 before Linux 5.19)."""
        text = _read(self._mem("memory.peak", "memory.max_usage_in_bytes"))
        return int(text) if text else None

    def usage(self):
        text = _read(self._mem("memory.current", "memory.usage_in_bytes"))
        return int(text) if text else None

    def anon_file(self):
        """(anonymous, page cache) bytes charged to the group."""
        stat = self._mem("memory.stat", "memory.stat")
        if self.dirs["memory"][0] == "v2":
            return _keyed(stat, "anon"), _keyed(stat, "file")
        return _keyed(stat, "rss"), _keyed(stat, "cache")

    def remove(self, wait=10.0):
        """Moves what is left in the group (a daemon still exiting) back to
        the creating process's groups, then removes it, waiting up to wait
        seconds for the kernel to let it go."""
        for d, home in self.homes.items():
            for pid in (_read(os.path.join(d, "cgroup.procs")) or "").split():
                try:
                    _write(os.path.join(home, "cgroup.procs"), pid)
                except OSError:
                    pass  # it exited meanwhile
            end = time.monotonic() + wait
            while True:
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.1)
        for root, controller in self.enabled:
            try:
                _write(os.path.join(root, "cgroup.subtree_control"), f"-{controller}")
            except OSError:
                pass  # another group of the root's uses it
        self.homes, self.dirs, self.enabled = {}, {}, []
