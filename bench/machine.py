"""What a result says about where it ran: the machine (CPU model, cores,
kernel, memory, load average) and the commit of the tree."""
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    """The 'model name' of /proc/cpuinfo ('' where it has none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def mem_total_gb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


def load():
    return [round(x, 2) for x in os.getloadavg()]


def machine():
    """The machine's fixed facts and its load average now."""
    u = os.uname()
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": u.release,
            "host": u.nodename, "mem_gb": mem_total_gb(), "load_before": load()}


def commit():
    """{'commit': HEAD, 'dirty': uncommitted changes to tracked files}."""
    def git(*args):
        try:
            r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
        except OSError:  # no git here (a copied tree)
            return None
        return r.stdout.strip() if r.returncode == 0 else None
    head = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": head, "dirty": bool(status) if status is not None else None}
