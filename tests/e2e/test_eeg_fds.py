"""EEG recordings whose data lie in a file beside the header (BrainVision
.vhdr + .eeg, EEGLAB .set + .fdt) under a small limit of open files: a
directory of more recordings than the descriptor budget is mounted and
every recording served, the data files' descriptors counted in the
budget (closed and opened again, checked), as every source's file is."""
import os

import numpy as np
import scipy.io

from common import E2E, mm_npy
from test_brainvision import want_of, write_by_hand
from test_eeglab import fields, want

NOFILE = 64  # a budget of 48 descriptors (three quarters)
LIMITED = ("prlimit", f"--nofile={NOFILE}:{NOFILE}", "--")
N = 40  # recordings of each format: 80 data files and 80 headers


class EegDescriptors(E2E):
    def test_more_recordings_than_the_budget(self):
        d = self.p("many")
        os.makedirs(d)
        rng = np.random.default_rng(5)
        refs = {}
        for i in range(N):
            x = rng.integers(-3000, 3000, (4, 300 + i))
            vhdr = write_by_hand(d, f"bv{i:02d}", x, "INT_16", [0.5, 0.1, 1.0, 2.0],
                                 orientation="MULTIPLEXED")
            refs[f"bv{i:02d}"] = want_of(vhdr).astype(np.float32)
            a = (rng.standard_normal((3, 200 + i)) * 20).astype(np.float32)
            scipy.io.savemat(os.path.join(d, f"set{i:02d}.set"), fields(a, fdt=f"set{i:02d}.fdt"))
            a.T.astype("<f4").tofile(os.path.join(d, f"set{i:02d}.fdt"))
            refs[f"set{i:02d}"] = want(a)
        with self.mount(d, wrap=LIMITED) as m:
            st = m.stats()
            self.assertEqual(st["source_fd_budget"], NOFILE * 3 // 4)
            self.assertLessEqual(st["source_fds"], st["source_fd_budget"])
            for name in sorted(refs):  # twice: the second pass reopens
                np.testing.assert_array_equal(mm_npy(m.path(name + ".npy")), refs[name],
                                              err_msg=name)
            for name in sorted(refs, reverse=True):
                np.testing.assert_array_equal(mm_npy(m.path(name + ".npy")), refs[name],
                                              err_msg=name)
            st = m.stats()
            self.assertLessEqual(st["source_fds"], st["source_fd_budget"])
            self.assertGreater(st["source_reopens"], 0)
            self.assertEqual(st["source_replaced"], 0)
