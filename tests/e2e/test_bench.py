"""The benchmarks' quick runs: every experiment of bench/ run with --quick
(small data, one round, targets not judged) through `python3 -m bench`,
as a user runs it, so that none rots; its JSON result checked for what
the report needs; the report drawn from those results into a scratch
docs directory; and the runner's refusals of a bad setting or peer."""
import glob
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import unittest

import numpy as np

from common import DSVIEW, E2E

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
from bench.experiments import NAMES, load  # noqa: E402

# the settings a quick run adds so that every peer runs (h5gzip's "old"
# build: this one, which the run then compares with itself)
EXTRA = {name: ["--dsview_old", DSVIEW] for name in ("h5gzip", "mem", "tree", "epoch")}
BINS = [os.path.join(ROOT, "build", "bench", name)
        for name in ("nullfs", "codec_bench", "codec_speed", "xform_bench", "gpu_bench")]
# what a peer may be skipped for here: what this machine lacks
LACKS = "does not run on this processor|no GPU usable here: "


def bench(*args, timeout=240):
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


# Rough seconds of each quick run here, to share them between two lanes
# run side by side (the runs that make control groups share a lane: their
# groups' names are fixed).
COST = {"s3": 26, "loader": 15, "eeg": 12, "store": 10, "read": 10, "scale": 10, "codecs": 8,
        "epoch": 6, "ab": 6, "shuffle": 6, "gpu_mount": 5, "soak": 5, "grid": 4, "blocks": 4,
        "seq": 4, "levers": 4, "views": 3, "inproc": 3, "tree": 3}
CGROUPS = ("store", "mem")


def lanes(names):
    """names in two lists of about equal cost, CGROUPS in the first."""
    out, cost = [[], []], [0, 0]
    for name in sorted(names, key=lambda n: (n not in CGROUPS, -COST.get(n, 2))):
        k = 0 if name in CGROUPS else cost.index(min(cost))
        out[k].append(name)
        cost[k] += COST.get(name, 2)
    return out


class Quick(E2E):
    """Every experiment's quick run (two at a time), then one test each
    checking its result."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.results, cls.runs = {}, {}

        def lane(names):
            for name in names:
                out = os.path.join(cls.tmp, name)
                cls.runs[name] = (out, bench("run", name, "--quick", "--dsview", DSVIEW,
                                             "--workdir", cls.tmp, "--out", out,
                                             *EXTRA.get(name, ())))
        threads = [threading.Thread(target=lane, args=(names,)) for names in lanes(NAMES)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

    def run_quick(self, name):
        out, r = self.runs[name]
        if r.returncode and "no network namespace here" in r.stderr:
            self.skipTest(r.stderr.strip().splitlines()[-1])  # as test_s3.py does
        self.assertEqual(r.returncode, 0, f"{name} --quick failed:\n{r.stdout}\n{r.stderr}")
        files = glob.glob(os.path.join(out, f"{name}-*-quick.json"))
        self.assertEqual(len(files), 1, os.listdir(out))
        with open(files[0]) as f:
            res = json.load(f)
        self.check_result(load(name), res)
        self.assertEqual(glob.glob(os.path.join(self.tmp, f"dsview-{name}-*")), [],
                         "the run left its work directory")
        Quick.results[name] = files[0]
        return res

    def check_result(self, exp, res):
        self.assertTrue(res["quick"])
        self.assertEqual(res["settings"]["rounds"], 1)
        for key in ("cpu", "cores", "kernel", "load_before", "load_after"):
            self.assertIn(key, res["machine"])
        self.assertRegex(res["commit"], "^[0-9a-f]{40}$")
        want = [p.name for p in exp.peers]
        built = all(os.path.exists(b) for b in BINS)
        for peer, why in res["skipped"].items():  # only what this machine cannot run
            self.assertRegex(why, LACKS if built else LACKS + "|missing \\(make build/bench/",
                             peer)
        self.assertEqual(sorted(res["peers"] + list(res["skipped"])), sorted(want))
        points = res["settings"][exp.sweep] if exp.sweep else [None]
        self.assertEqual([pt["point"] for pt in res["points"]], points)
        declared = {m.key for m in exp.metrics}
        for peer in res["peers"]:  # a peer may sit a point out (store's mem regime)
            self.assertTrue(any(declared & set(pt["rounds"][peer][0]) for pt in res["points"]),
                            f"{peer}: no declared metric")
        for pt in res["points"]:
            for peer in res["peers"]:
                rounds = pt["rounds"][peer]
                self.assertEqual(len(rounds), 1)
                for k, v in rounds[0].items():
                    if k.startswith(("fail_", "oom_")):  # a pass that failed, an OOM kill
                        self.assertEqual(v, 0, f"{peer} {k}")
                    self.assertTrue(v is not None and math.isfinite(v) and v > -1e-9,
                                    f"{peer} {k} = {v}")
                    self.assertAlmostEqual(pt["medians"][peer][k],
                                           float(np.median([r[k] for r in rounds])))
            for t in pt["targets"]:
                self.assertIsNone(t["met"], "a quick run judged a target")
            self.assertEqual(len(pt["targets"]),
                             sum(t.at is None or t.at == pt["point"] for t in exp.targets))


def _quick_test(name):
    def test(self):
        self.run_quick(name)
    test.__doc__ = f"python3 -m bench run {name} --quick"
    return test


for _name in NAMES:
    setattr(Quick, f"test_{_name}", _quick_test(_name))


def _soak_series(self):
    """soak's samples: seconds rising, epochs from 1, the daemon's RSS and
    its descriptors (every source held open) in each; the report draws them."""
    res = self.run_quick("soak")
    pt = res["points"][0]
    self.assertEqual(pt["series_keys"][:2], ["seconds", "epoch"])
    rows = pt["series"]
    self.assertGreaterEqual(len(rows), 2)
    self.assertEqual([r[0] for r in rows], sorted(r[0] for r in rows))
    self.assertEqual(rows[0][1], 1)
    sources = res["settings"]["sources"]
    for _, _, rss, fds in rows:
        self.assertGreater(rss, 1.0)
        self.assertGreaterEqual(fds, sources)
    self.assertEqual(pt["rounds"]["dsv"][0]["fail_batches"], 0)
    self.assertGreaterEqual(pt["rounds"]["dsv"][0]["checked"], 1)
    docs = self.p("soak-docs")
    os.makedirs(docs)
    shutil.copy(os.path.join(ROOT, "docs", "benchmarks", "README.md"), docs)
    files = glob.glob(os.path.join(self.runs["soak"][0], "soak-*-quick.json"))
    r = bench("report", "--quick", "--docs", docs, "--results", self.p("none"), *files)
    self.assertEqual(r.returncode, 0, r.stderr)
    with open(os.path.join(docs, "plots", "soak.png"), "rb") as f:
        self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


Quick.test_soak_series = _soak_series


class Report(E2E):
    def test_report_of_quick_results(self):
        """The report draws every quick result: a table, a plot and a README row."""
        out = self.p("res")
        r = bench("run", "nifti", "--quick", "--dsview", DSVIEW, "--workdir", self.tmp,
                  "--out", out, "--rounds", "2")
        self.assertEqual(r.returncode, 0, r.stderr)
        docs = self.p("docs")
        os.makedirs(docs)
        shutil.copy(os.path.join(ROOT, "docs", "benchmarks", "README.md"), docs)
        r = bench("report", "--quick", "--results", out, "--docs", docs)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(docs, "results", "nifti.md")) as f:
            md = f.read()
        self.assertIn("| nifti |", md)
        self.assertIn("| npy |", md)
        self.assertIn("not judged", md)
        with open(os.path.join(docs, "plots", "nifti.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        with open(os.path.join(docs, "README.md")) as f:
            readme = f.read()
        row = readme.split("| nifti |")[1].split("\n")[0]
        self.assertIn("targets not judged](results/nifti.md), [plot](plots/nifti.png)", row)
        self.assertIn("python3 -m bench run nifti", row)
        self.assertIn("| read |", readme)
        self.assertIn("not run yet", readme)
        with open(os.path.join(docs, "results", "nifti.json")) as f:
            self.assertEqual(json.load(f)["settings"]["rounds"], 2)


class Harness(unittest.TestCase):
    """The runner's own rules on an experiment whose peers only record what
    the runner does: a fresh setup and teardown for every phase, the page
    cache dropped before each cold phase only, the order of peers reversed
    every other round, medians of the rounds, targets judged."""

    def test_rounds_cold_starts_medians_targets(self):
        from bench import benchlib, harness
        log = []
        figures = {"a": [3.0, 1.0, 2.0], "b": [1.0, 1.0, 4.0]}

        def setup(name):
            def s(run, data):
                log.append(("setup", name))
                return name
            return s

        def measure(run, data, peer, handle, rnd):
            self.assertEqual(handle, peer)
            log.append(("measure", peer, rnd))
            return {"x": figures[peer][rnd]}

        def warm(run, data, peer, handle, rnd):
            log.append(("warm", peer, rnd))
            return {"y": 1.0}
        exp = harness.Experiment(
            name="probe", doc="probe", settings=[], data=lambda run, point: types.SimpleNamespace(),
            peers=[harness.Peer(p, p, setup(p), lambda run, h: log.append(("teardown", h)))
                   for p in ("a", "b")],
            phases=[harness.Phase("cold", measure), harness.Phase("warm", warm, cold=False,
                                                                  peers=("b",))],
            metrics=[harness.Metric("x", "u")],
            targets=[harness.Target("a over b", "x", "a", "b", 1.5),
                     harness.Target("b itself", "x", "b", None, 1.0, "<=")])
        drop = benchlib.drop_caches
        benchlib.drop_caches = lambda: log.append(("drop",)) or True
        self.addCleanup(setattr, benchlib, "drop_caches", drop)
        tmp = tempfile.mkdtemp(prefix="dsv-harness-")
        self.addCleanup(shutil.rmtree, tmp)
        path = harness.run(exp, {"workdir": tmp, "settle": "0", "prefault_gb": "0"}, out_dir=tmp)
        with open(path) as f:
            res = json.load(f)
        measured = [e[1:] for e in log if e[0] == "measure"]
        self.assertEqual(measured, [("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2)])
        # every phase: (drop if cold), setup, measure, teardown
        b0 = log.index(("measure", "b", 0))
        self.assertEqual(log[b0 - 2:b0 + 6], [("drop",), ("setup", "b"), ("measure", "b", 0),
                                              ("teardown", "b"), ("setup", "b"), ("warm", "b", 0),
                                              ("teardown", "b"), ("drop",)])
        self.assertEqual(sum(e == ("drop",) for e in log), 6)
        pt = res["points"][0]
        self.assertEqual(pt["rounds"]["a"], [{"x": 3.0}, {"x": 1.0}, {"x": 2.0}])
        self.assertEqual(pt["medians"], {"a": {"x": 2.0}, "b": {"x": 1.0, "y": 1.0}})
        self.assertEqual([(t["value"], t["met"]) for t in pt["targets"]], [(2.0, True), (1.0, True)])
        self.assertEqual(res["settings"]["rounds"], 3)
        self.assertEqual(os.listdir(tmp), [os.path.basename(path)])  # work directory removed


class ReadmePerf(unittest.TestCase):
    def test_rows_rewritten_in_place(self):
        """The README's performance rows take the read experiment's 224 point
        and the loader experiment's 4-worker point; the other lines stay."""
        from bench import report
        med = {p: {"cold_gbs": 1.11 * k, "warm_gbs": 2.22 * k, "shuf1_rows": 1111.0 * k,
                   "shufw_rows": 3333.0 * k}
               for k, p in enumerate(("dsv_npy", "dsv_lz4", "f32_mm", "u8_numpy"), 1)}
        med["dsv_hint"] = {"shuf1_rows": 9876.0, "shufw_rows": 5432.0}
        res = {"started": "2031-01-02T03:04:05Z", "settings": {"workers": 4, "mb": 1024, "rounds": 3},
               "points": [{"point": 64, "medians": {}}, {"point": 224, "medians": med}]}
        tmp = tempfile.mkdtemp(prefix="dsv-readme-")
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "README.md")
        shutil.copy(os.path.join(ROOT, "README.md"), path)
        loader = {"started": "2031-02-03T00:00:00Z", "quick": False,
                  "settings": {"side": 224, "mb": 1024, "rounds": 1},
                  "points": [{"point": 1, "medians": {}},
                             {"point": 4, "medians": {"dsview": {"rows_s": 1234.4},
                                                      "f32": {"rows_s": 567.0},
                                                      "python": {"rows_s": 89.0}}}]}
        self.assertEqual(report.write_readme_perf(path, {"read": res, "loader": loader}),
                         ["read", "loader"])
        with open(path) as f:
            new = f.read().split("\n")
        with open(os.path.join(ROOT, "README.md")) as f:
            old = f.read().split("\n")
        self.assertEqual(len(new), len(old))
        want = {"| sequential cold, GB/s (`python3 -m bench run read`, 2031-01-02) | "
                "1.11 | 2.22 | 3.33 | 4.44 |",
                "| sequential warm, GB/s (same run) | 2.22 | 4.44 | 6.66 | 8.88 |",
                "| shuffled rows/s, 1 reader (same run) | 1,111 (9,876 with hints) | 2,222 | "
                "3,333 | 4,444 |",
                "| shuffled rows/s, 4 workers (same run) | 3,333 (5,432 with hints) | 6,666 | "
                "9,999 | 13,332 |",
                "| DataLoader epoch rows/s, 4 workers (`python3 -m bench run loader`, 2031-02-03, "
                "one round) | 1,234 (`dsview.torch.loader`) | - | 567 | 89 |"}
        changed = {b for a, b in zip(old, new) if a != b}
        self.assertEqual(changed | want, want)
        self.assertTrue(want <= set(new), want - set(new))
        for key, value in (("workers", 2), ("mb", 128), ("rounds", 1)):  # not as the README says
            bad = dict(res, settings=dict(res["settings"], **{key: value}))
            self.assertEqual(report.write_readme_perf(path, {"read": bad}), [], key)
        for key, value in (("side", 64), ("mb", 512)):
            bad = dict(loader, settings=dict(loader["settings"], **{key: value}))
            self.assertEqual(report.write_readme_perf(path, {"loader": bad}), [], key)


class SweepPlot(unittest.TestCase):
    def test_sets_of_a_kind_drawn_against_their_count(self):
        """Sweep points named kind:count (the scale experiment's sets) draw
        one line per kind and peer over the counts, on a log axis."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from bench import report
        self.assertEqual(report.kind_count("npy:1000"), ("npy", 1000))
        self.assertIsNone(report.kind_count(224))
        self.assertIsNone(report.kind_count("rows"))
        pts = [{"point": f"{k}:{n}", "medians": {"a": {"x": n / 10}, "b": {"x": n / 20}}}
               for k, n in (("npy", 100), ("npy", 10000), ("h5", 100))]
        fig, ax = plt.subplots()
        self.addCleanup(plt.close, fig)
        report.sweep_axis(ax, {"peers": ["a", "b"], "sweep": "sets"}, pts, {"key": "x"})
        lines = {ln.get_label(): list(ln.get_xdata()) for ln in ax.get_lines()}
        self.assertEqual(lines, {"a npy": [100, 10000], "b npy": [100, 10000], "a h5": [100],
                                 "b h5": [100]})
        self.assertEqual(ax.get_xscale(), "log")


class Refused(unittest.TestCase):
    def test_unknown_setting(self):
        r = bench("run", "nifti", "--quick", "--nosuch", "1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nifti: no setting 'nosuch'", r.stderr)
        self.assertIn("mb", r.stderr)

    def test_unknown_peer(self):
        r = bench("run", "nifti", "--quick", "--peers", "nifti,nosuch")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nifti: no peer 'nosuch' (peers: nifti, npy)", r.stderr)

    def test_unknown_experiment(self):
        r = bench("run", "nosuch")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no experiment 'nosuch'", r.stderr)

    def test_bad_value(self):
        r = bench("run", "nifti", "--quick", "--mb", "lots")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("nifti: setting 'mb'", r.stderr)


if __name__ == "__main__":
    unittest.main()
