#!/usr/bin/python3
"""Runs the end-to-end tests (tests/e2e/test_*.py) with unittest and ends with
one summary line 'N passed, N failed, N skipped'. Needs root, /dev/fuse,
DSVIEW pointing at the binary, and Debian's numpy/h5py/hdf5plugin.

  run.py [PATTERN|NAME]...   e.g. run.py test_faults.py, run.py 'test_v*.py',
                             run.py test_load.Soak test_readers.Workers.test_8_workers_no_cache
A test counts once: failed if it or any of its subtests failed or errored
(a class whose setUpClass failed counts as one failure)."""
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
        self.failed_ids = set()

    def _mark(self, test):
        test = getattr(test, "test_case", test)  # a subtest counts for its test
        self.failed_ids.add(test.id() if hasattr(test, "id") else str(test))

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._mark(test)

    def addError(self, test, err):
        super().addError(test, err)
        self._mark(test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._mark(test)

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.failed_ids.add(test.id())


def main():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("e2e: needs root and /dev/fuse")
        print("0 passed, 1 failed")
        return 1
    loader = unittest.defaultTestLoader
    suite = unittest.TestSuite()
    for arg in sys.argv[1:] or ["test_*.py"]:
        if arg.endswith(".py"):
            suite.addTests(loader.discover(HERE, pattern=arg, top_level_dir=HERE))
        else:
            suite.addTests(loader.loadTestsFromName(arg))
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Result, stream=sys.stdout)
    t = time.time()
    res = runner.run(suite)
    # a test whose subtest, tearDown or cleanup failed never reaches
    # addSuccess, so passed and failed are disjoint
    passed = res.passed
    failed = len(res.failed_ids)
    print(f"e2e: {time.time() - t:.0f} s")
    sys.stdout.flush()
    print(f"{passed} passed, {failed} failed, {len(res.skipped)} skipped")
    return 1 if failed or res.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
