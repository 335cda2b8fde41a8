"""The Python package's type hints as a user's checker sees them: every
public function and method of dsview and dsview.torch annotated in full;
mypy (Debian's python3-mypy) finds the package through its py.typed
marker (on PYTHONPATH, as an installed package, not as a source tree
given to it), reports a user's wrong argument and wrong use of a result,
passes right use, and passes the package itself."""
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from common import PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)
import dsview  # noqa: E402

try:
    import dsview.torch as dtorch
except ImportError:
    dtorch = None

try:
    import mypy  # noqa: F401
except ImportError:
    mypy = None

# torch's own hints are not what is checked here (and take minutes to read)
CONFIG = "[mypy]\ncache_dir = {cache}\n[mypy-torch.*]\nfollow_imports = skip\n" \
         "follow_imports_for_stubs = True\n"

USER = textwrap.dedent("""\
    import numpy as np
    import dsview
    import dsview.torch

    a = dsview.open("/mnt/x/v.npy")
    s: dsview.Sources = dsview.sources("/mnt/x/v.npy")
    src, row = s.source_of(np.arange(3))
    first: np.ndarray = src
    with dsview.Mount("m.ini") as m:
        names: list = m.views
    lo = dsview.torch.loader("/mnt/x/v.npy", batch_size={batch}, seed=1)
    state: {state} = lo.state_dict()
    lo.load_state_dict(state)
""")


def public(obj):
    """The public functions of a module or class (and __init__)."""
    for name, f in vars(obj).items():
        if isinstance(f, property) and not name.startswith("_"):
            yield name, f.fget
        elif inspect.isfunction(f) and (not name.startswith("_") or name == "__init__"):
            yield name, f


class Typing(unittest.TestCase):
    def test_public_api_annotated(self):
        names = [getattr(dsview, n) for n in dsview.__all__ if callable(getattr(dsview, n))]
        if dtorch is not None:
            names += [dtorch.loader, dtorch.mixture, dtorch.as_tensor, dtorch.ViewDataset,
                      dtorch.HintedBatchSampler, dtorch.Loader]
        missing = []
        for obj in names:
            for name, f in (public(obj) if inspect.isclass(obj) else [(obj.__name__, obj)]):
                if not callable(f):
                    continue
                sig = inspect.signature(f)
                for p in sig.parameters.values():
                    if p.name != "self" and p.annotation is inspect.Parameter.empty:
                        missing.append(f"{getattr(obj, '__name__', obj)}.{name}({p.name})")
                if name != "__init__" and sig.return_annotation is inspect.Signature.empty:
                    missing.append(f"{getattr(obj, '__name__', obj)}.{name} -> ?")
        self.assertEqual(missing, [], "public functions without annotations")
        self.assertTrue(os.path.isfile(os.path.join(PYTHON_DIR, "dsview", "py.typed")))

    def mypy(self, *args, cwd):
        with open(os.path.join(cwd, "mypy.ini"), "w") as f:
            f.write(CONFIG.format(cache=os.path.join(cwd, "cache")))
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        env.pop("MYPYPATH", None)
        return subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini",
                               *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=300)

    def test_mypy_sees_the_hints(self):
        if mypy is None:
            self.skipTest("no mypy (python3-mypy)")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "good.py"), "w") as f:
                f.write(USER.format(batch=64, state="dict"))
            with open(os.path.join(d, "bad.py"), "w") as f:
                f.write(USER.format(batch='"64"', state="int"))
            good = self.mypy("good.py", cwd=d)
            self.assertEqual(good.returncode, 0, good.stdout + good.stderr)
            bad = self.mypy("bad.py", cwd=d)
            self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
            self.assertIn('Argument "batch_size" to "loader" has incompatible type "str"; '
                          'expected "int"', bad.stdout)
            self.assertIn('expression has type "Dict[str, Any]", variable has type "int"',
                          bad.stdout)
            self.assertIn('Argument 1 to "load_state_dict" of "Loader" has incompatible type '
                          '"int"', bad.stdout)
            self.assertEqual(bad.stdout.count("error:"), 3, bad.stdout)
            pkg = self.mypy("--disallow-incomplete-defs", os.path.join(PYTHON_DIR, "dsview"),
                            cwd=d)
            self.assertEqual(pkg.returncode, 0, pkg.stdout + pkg.stderr)
