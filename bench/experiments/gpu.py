"""The GPU backend's LZ4 decode and transform against the CPU on every core.

bench/gpu_bench.c run once a round per peer: LZ4 chunks of uint8 image
rows (64 KiB blocks) of 256 KiB, 1 MiB and 4 MiB, decoded and scaled by
1/255 to float32 and to bfloat16, --mb MB of output each, from memory
(no I/O, no FUSE). Peer gpu: the device, end to end (staging in pinned
memory, both PCIe copies; kernel:CASE the kernels alone, CUDA events),
best of 2 after a warm-up, every chunk's bytes compared with the CPU's
(a difference fails the run). Peer cpu: dsv_lz4_decode then
dsv_xform_run on --threads threads (0: every core), best of 3. Each
metric is one case's GB/s of output. Where no GPU is usable (a build
without CUDA, no device, no driver) the gpu peer is skipped with
gpu_bench's reason, which the result's "skipped" and data's "device"
say: no GPU figure is made up from the CPU or the emulation."""
import json
import os
import subprocess
import types

from bench.harness import Experiment, Metric, Peer, Phase, Setting, Target

CASES = [f"{out} {kib} KiB" for kib in (256, 1024, 4096) for out in ("float32", "bfloat16")]


def rows(run, mb, peer):
    """gpu_bench's JSON objects for one peer."""
    args = [run.bin("gpu_bench"), str(mb), peer, str(run.s.threads)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def device(run):
    """(name, None) of the GPU gpu_bench measures, or (None, why not);
    asked once a run (a 1 MB pass where there is one)."""
    if not hasattr(run, "gpu_device"):
        first = rows(run, 1, "gpu")[0]
        run.gpu_device = (first.get("device"), first.get("why"))
    return run.gpu_device


def make(run, point):
    name, why = device(run) if os.path.exists(run.bin("gpu_bench")) else (None, "no gpu_bench")
    return types.SimpleNamespace(info={"mb_out": run.s.mb, "mb": run.s.mb,
                                       "device": name or f"none ({why})"})


def measure(run, data, peer, handle, rnd):
    r = {}
    for row in rows(run, run.s.mb, peer):
        case = f"{row['output']} {row['chunk_KiB']} KiB"
        if peer == "gpu":
            r[case] = row["e2e_GBps"]
            r["kernel:" + case] = row["kernel_GBps"]
            r["cpu:" + case] = row["cpu_GBps"]  # the CPU in the same process
        else:
            r[case] = row["cpu_GBps"]
    if not r:
        raise RuntimeError(f"gpu_bench measured no case for peer {peer}")
    return r


def built(run):
    exe = run.bin("gpu_bench")
    return None if os.path.exists(exe) else f"{exe} missing (make build/bench/gpu_bench)"


def no_gpu(run):
    name, why = (None, None) if built(run) else device(run)
    return built(run) or (None if name else f"no GPU usable here: {why}")


EXPERIMENT = Experiment(
    name="gpu",
    doc=__doc__,
    settings=[Setting("mb", 256, "MB of output a case and round", quick=4),
              Setting("threads", 0, "the CPU peer's threads (0: every core)")],
    data=make,
    peers=[Peer("gpu", "the device, end to end", missing=no_gpu),
           Peer("cpu", "dsv_lz4_decode + dsv_xform_run on every core", missing=built)],
    phases=[Phase("cases", measure, cold=False)],
    metrics=[Metric(c, "GB/s", f"{c} chunks to output, GB/s of output") for c in CASES],
    targets=[Target("float32 1 MiB chunks, gpu end to end vs cpu", "float32 1024 KiB", "gpu",
                    "cpu", None),
             Target("bfloat16 4 MiB chunks, gpu end to end vs cpu", "bfloat16 4096 KiB", "gpu",
                    "cpu", None)],
)
