"""Network namespaces standing for other machines ("nodes"): each has a
veth pair to this one, its own addresses (NODE_ADDR on its side, host_addr
on ours), and reaches a server of ours that listens on 0.0.0.0 at
host_addr. A command runs in one through `nsenter --net` (its network
only: a FUSE mount made there is in our mount table, its daemon's
requests go over the veth). `shape` puts tc's netem (or tbf) on both
ends of the link to stand for a datacenter network.

    node = Node(0); node.start()       # raises NetnsUnavailable
    Mount(..., wrap=node.wrap, env=store.env(AWS_ENDPOINT_URL=node.url(port)))
    node.shape("1gbit", "1ms"); node.stop()
"""
import os
import random
import subprocess


class NetnsUnavailable(Exception):
    """Why no namespace could be made here (no root, no iproute2, no veth)."""


def _ip(*args, ns=None):
    cmd = ["ip", *(("-n", ns) if ns else ()), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise NetnsUnavailable(f"{' '.join(cmd)}: {r.stderr.strip()}")


class Node:
    def __init__(self, index):
        # names unique to this process (others may run beside it), veth
        # names within the kernel's 15 characters
        tag = f"{os.getpid() % 100000}{index}"
        self.ns = f"dsv-node-{tag}"
        self.host_if, self.node_if = f"dvh{tag}", f"dvn{tag}"
        net = f"10.{random.randrange(100, 250)}.{random.randrange(0, 250)}"
        self.host_addr, self.node_addr = f"{net}.1", f"{net}.2"
        self.started = False

    def start(self):
        if os.geteuid() != 0:
            raise NetnsUnavailable("not root: ip netns needs CAP_SYS_ADMIN and CAP_NET_ADMIN")
        try:
            _ip("netns", "add", self.ns)
        except FileNotFoundError:
            raise NetnsUnavailable("no `ip` (iproute2)")
        self.started = True
        try:
            _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.node_if)
            _ip("link", "set", self.node_if, "netns", self.ns)
            _ip("addr", "add", self.host_addr + "/24", "dev", self.host_if)
            _ip("link", "set", self.host_if, "up")
            _ip("addr", "add", self.node_addr + "/24", "dev", self.node_if, ns=self.ns)
            _ip("link", "set", self.node_if, "up", ns=self.ns)
            _ip("link", "set", "lo", "up", ns=self.ns)
        except NetnsUnavailable:
            self.stop()
            raise

    @property
    def wrap(self):
        """The prefix that runs a command in the node's network."""
        return ("nsenter", f"--net=/run/netns/{self.ns}")

    def url(self, port):
        """Our server's port as the node reaches it."""
        return f"http://{self.host_addr}:{port}"

    def shape(self, rate, delay):
        """Both directions limited to rate (tc's units: "1gbit") with
        delay added each way by netem; where the kernel has no netem, tbf
        limits the rate alone. @return what was set, in words."""
        for qdisc, what in ((["netem", "delay", delay, "rate", rate, "limit", "100000"],
                             f"netem {rate}, {delay} each way"),
                            (["tbf", "rate", rate, "burst", "256kb", "latency", "50ms"],
                             f"tbf {rate}, no delay added (no netem in this kernel)")):
            errs = [self._tc(dev, ns, qdisc) for dev, ns in ((self.host_if, None),
                                                             (self.node_if, self.ns))]
            if not any(errs):
                return what
        raise NetnsUnavailable("; ".join(e for e in errs if e))

    def _tc(self, dev, ns, qdisc):
        cmd = ["tc", *(("-n", ns) if ns else ()), "qdisc", "replace", "dev", dev, "root", *qdisc]
        r = subprocess.run(cmd, capture_output=True, text=True)
        return f"{' '.join(cmd)}: {r.stderr.strip()}" if r.returncode else ""

    def stop(self):
        if self.started:
            # the veth pair goes with the namespace
            subprocess.run(["ip", "link", "del", self.host_if], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
            self.started = False
