"""The CPU transform kernels per variant, as ratios to memcpy of the same output size.

bench/xform_bench.c run once a round per kernel variant (a peer; those
this processor lacks are skipped): each case turns source elements into
output elements on one core, from memory (no I/O, no FUSE), in blocks of
2^18 elements, against memcpy of the same output size timed in the same
process, in thread CPU time (time descheduled on a shared machine counts
for neither). Each metric is one case's ratio, case GB/s / memcpy GB/s;
gbs:CASE (its output GB/s) is in the result too."""
import json
import os
import subprocess
import types

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

KERNELS = ["scalar", "avx2", "avx512", "avx512vbmi", "avx512bf16"]
CASES = ["u8->f32 plain cast", "u8->bf16 plain cast", "u8->f32 affine, 1 channel",
         "u8->f32 mean/std, 3 channels HWC", "u8->bf16 mean/std, 3 channels HWC",
         "i16->f32 plain cast", "i16->f32 affine", "i16->bf16 affine",
         "i16->f32 mean/std per element, 100k rows", "u8->f32 mean/std per element, 100k rows",
         "u16->i64 plain cast", "i32->i16 clip"]


def make(run, point):
    return types.SimpleNamespace(info={"mb_out": run.s.mb, "mb": run.s.mb})


def runs(exe, mb, kernel):
    """xform_bench's JSON lines for one kernel ([] where it does not run here)."""
    out = subprocess.run([exe, str(mb), "1", kernel], capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines()
            if line.strip() and json.loads(line)["kernel"] == kernel]


def measure(run, data, peer, m, rnd):
    r = {}
    for row in runs(run.bin("xform_bench"), run.s.mb, peer):
        r[row["case"]] = row["ratio"]
        r["gbs:" + row["case"]] = row["out_GBps"]
    if not r:
        raise RuntimeError(f"xform_bench ran no case of kernel {peer}")
    return r


def missing(kernel):
    def why(run):
        if not os.path.exists(run.bin("xform_bench")):
            return f"{run.bin('xform_bench')} missing (make build/bench/xform_bench)"
        if not runs(run.bin("xform_bench"), 1, kernel):
            return f"kernel {kernel} does not run on this processor"
        return None
    return why


EXPERIMENT = Experiment(
    name="xform",
    doc=__doc__,
    settings=[Setting("mb", 128, "MB of output a case and round", quick=2)],
    data=make,
    peers=[Peer(k, f"the {k} kernels", missing=missing(k)) for k in KERNELS],
    phases=[Phase("cases", measure, cold=False)],
    metrics=[Metric(c, "x memcpy", f"{c}: GB/s over memcpy's") for c in CASES],
    targets=[Target("u8->f32 mean/std HWC, avx512 vs scalar", CASES[3], "avx512", "scalar", None),
             Target("u8->bf16 mean/std HWC, avx512bf16 vs avx512", CASES[4], "avx512bf16",
                    "avx512", None)],
)
