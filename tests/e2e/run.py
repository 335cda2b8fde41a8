#!/usr/bin/python3
"""Runs the end-to-end tests (tests/e2e/test_*.py) with unittest and ends with
one summary line 'N passed, N failed, N skipped'. Needs root, /dev/fuse,
DSVIEW pointing at the binary, and Debian's numpy/h5py/hdf5plugin."""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class Result(unittest.TextTestResult):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.passed = 0

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1


def main():
    pattern = sys.argv[1] if len(sys.argv) > 1 else "test_*.py"
    suite = unittest.defaultTestLoader.discover(HERE, pattern=pattern, top_level_dir=HERE)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Result, stream=sys.stdout)
    t = time.time()
    res = runner.run(suite)
    failed = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    print(f"e2e: {time.time() - t:.0f} s")
    print(f"{res.passed} passed, {failed} failed, {len(res.skipped)} skipped")
    return 1 if failed or res.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
