"""The experiments, one module each, each defining EXPERIMENT (a
bench.harness.Experiment). NAMES is the order `bench list` and the
report use."""
import importlib

NAMES = ["read", "views", "grid", "inproc", "nifti", "pack", "tokens", "h5gzip", "shard",
         "loader_state", "xform", "mem", "codecs", "store", "tree",
         "xform_mount", "levers", "epoch", "blocks",
         "seq", "s3", "gpu", "gpu_mount", "ab", "readers", "shuffle", "loader", "scale", "eeg",
         "soak"]


def load(name):
    if name not in NAMES:
        raise SystemExit(f"no experiment '{name}' (experiments: {', '.join(NAMES)})")
    return importlib.import_module(f"bench.experiments.{name}").EXPERIMENT
