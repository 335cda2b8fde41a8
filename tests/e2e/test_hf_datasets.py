"""Hugging Face `datasets`' own cache files, written by the library itself
(the project venv) as its users make them, offline, with its cache in the
test's directory: load_dataset("json") then a tokenizing map() (the
cache-*.arrow a user finds under ~/.cache/huggingface/datasets), a
save_to_disk() copy (data-*.arrow), a shuffle() (its indices file) and a
Dataset.from_dict() of lists, saved.
Each token file is mounted (zero-config, and a manifest naming the column)
and its flat stream compared byte for byte with what datasets returns for
ds["input_ids"]; the indices file is refused with the reason, and the
shuffled rows datasets returns are the data file's rows in the order that
file keeps."""
import json
import os

import numpy as np

from common import E2E, check_preads, check_whole, read_all, refused_at, venv_python

WRITER = r'''
import json, os, sys
d = sys.argv[1]
os.environ.update(HF_DATASETS_CACHE=os.path.join(d, "hf_cache"),
                  HF_HOME=os.path.join(d, "hf_home"), HF_DATASETS_OFFLINE="1",
                  HF_HUB_OFFLINE="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
import numpy as np
import pyarrow as pa
import datasets

rng = np.random.default_rng(39)
src = os.path.join(d, "texts.jsonl")
with open(src, "w") as f:
    for _ in range(2700):
        n = int(rng.integers(1, 120))
        f.write(json.dumps({"text": "".join(chr(c) for c in rng.integers(97, 123, n))}) + "\n")

def tokenize(batch):
    # a stand-in tokenizer: one id per character, spread over a GPT-2-sized vocabulary
    return {"input_ids": [[(ord(c) * 7919 + i * 104729) % 50257 for i, c in enumerate(t)]
                          for t in batch["text"]]}

raw = datasets.load_dataset("json", data_files=src, split="train")
tok = raw.map(tokenize, batched=True, remove_columns=["text"])
saved = os.path.join(d, "saved")
tok.save_to_disk(saved)
shuf = tok.shuffle(seed=5)
# a dataset made in memory from lists, saved (ids past int32: int64 values)
lists = [rng.integers(0, 2**40, int(rng.integers(0, 60))).tolist() for _ in range(1500)]
mem = datasets.Dataset.from_dict({"input_ids": lists})
mem.save_to_disk(os.path.join(d, "from_dict"))

def flat(ds):
    """datasets' own read of the column, flattened in row order."""
    return np.concatenate([np.asarray(r, dtype=np.int64) for r in ds["input_ids"]])

np.save(os.path.join(d, "tok.npy"), flat(tok))
np.save(os.path.join(d, "mem.npy"), flat(mem))
np.save(os.path.join(d, "lengths.npy"), np.array([len(r) for r in tok["input_ids"]], np.int64))
np.save(os.path.join(d, "shuf.npy"), flat(shuf))
# the row order the shuffle's indices file holds, as pyarrow reads it
np.save(os.path.join(d, "shuf_order.npy"),
        pa.ipc.open_stream(shuf.cache_files[-1]["filename"]).read_all()
        .column("indices").to_numpy().astype(np.int64))
print(json.dumps({
    "cache": tok.cache_files[0]["filename"],
    "indices": shuf.cache_files[-1]["filename"],
    "saved": sorted(f for f in os.listdir(saved) if f.endswith(".arrow")),
    "feature": str(tok.features["input_ids"]),
    "mem_feature": str(mem.features["input_ids"]),
    "version": datasets.__version__,
}))
'''


class HFDatasetsTest(E2E):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.files = json.loads(venv_python(WRITER, cls.tmp, timeout=300))

    def ref(self, name):
        return np.load(self.p(name))

    def test_written_where_users_find_them(self):
        cache = self.files["cache"]
        self.assertTrue(cache.startswith(self.p("hf_cache") + os.sep), cache)
        self.assertRegex(os.path.basename(cache), r"^cache-[0-9a-f]+\.arrow$")
        self.assertNotEqual(self.files["indices"], cache)
        self.assertEqual(self.files["saved"], ["data-00000-of-00001.arrow"])
        self.assertIn("int32", self.files["feature"])
        self.assertIn("int64", self.files["mem_feature"])

    def test_map_cache_zero_config(self):
        ids = self.ref("tok.npy")
        with self.mount(self.files["cache"]) as m:
            meta = check_whole(self, m, "input_ids", ids, "int64")
            src = meta["sources"][0]
            self.assertEqual((src["kind"], src["dtype"]), ("runs", "int32"))
            check_preads(self, m, "input_ids", ids, seed=39)
            self.assertEqual(sorted(os.listdir(m.mp)), [".stats.json", "input_ids.dat",
                                                       "input_ids.json", "input_ids.npy"])

    def test_manifest_names_the_column(self):
        ids = self.ref("tok.npy")
        ini = (f"[tok]\nsource = {self.files['cache']}:input_ids\ndtype = int32\n\n"
               f"[saved]\nsource = saved/data-*.arrow:input_ids\n\n"
               f"[windows]\nsource = {self.files['cache']}\nwindow = 129\nstride = 128\n\n"
               f"[mem]\nsource = from_dict/data-*.arrow\n")
        with self.mount(self.write_ini(ini)) as m:
            got = check_whole(self, m, "tok", ids.astype(np.int32), "int32")
            self.assertEqual(got["shape"], [len(ids)])
            check_whole(self, m, "saved", ids, "int64")
            n = (len(ids) - 129) // 128 + 1
            check_whole(self, m, "windows",
                        np.stack([ids[i * 128:i * 128 + 129] for i in range(n)]), "int64")
            meta = check_whole(self, m, "mem", self.ref("mem.npy"), "int64")
            self.assertEqual(meta["sources"][0]["dtype"], "int64")

    def test_indices_file_refused_data_file_served(self):
        idx = self.files["indices"]
        refused_at(self, f"[v]\nsource = {idx}\n", 2,
                   [os.path.basename(idx), "indices file", "flatten_indices"])
        refused_at(self, f"[v]\nsource = {idx}:indices\n", 2,
                   [os.path.basename(idx), "indices file"])
        # the shuffled rows datasets returns are the data file's rows in the
        # order the indices file keeps: the data file, served, gives them
        ids, lens = self.ref("tok.npy"), self.ref("lengths.npy")
        starts = np.concatenate([[0], np.cumsum(lens)])
        with self.mount(self.files["cache"]) as m:
            x = np.memmap(m.path("input_ids.dat"), dtype=np.int64, mode="r")
            got = np.concatenate([x[starts[i]:starts[i + 1]]
                                  for i in self.ref("shuf_order.npy")])
            del x
            self.assertEqual(got.tobytes(), self.ref("shuf.npy").tobytes())

    def test_cache_directory_mount(self):
        # the dataset's cache directory as it is: json-train.arrow (the
        # text only: nothing served), the map's cache file (a directory of
        # its columns), the shuffle's indices file (skipped, with why)
        d = os.path.dirname(self.files["cache"])
        cache = os.path.basename(self.files["cache"])
        idx = os.path.basename(self.files["indices"])
        with self.mount(d) as m:
            self.assertEqual(sorted(os.listdir(m.mp)), [".skipped.json", ".stats.json", cache])
            check_whole(self, m, cache + "/input_ids", self.ref("tok.npy"), "int64")
            why = {e["path"]: e["reason"] for e in json.loads(read_all(m.path(".skipped.json")))}
            self.assertEqual(sorted(why), sorted([idx, "json-train.arrow:/text"]))
            self.assertIn("indices file", why[idx])
            self.assertIn("column text is a utf8 column", why["json-train.arrow:/text"])


if __name__ == "__main__":
    import unittest
    unittest.main()
