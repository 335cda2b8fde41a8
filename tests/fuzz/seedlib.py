"""What the seed writers of make_corpus.py share: where the corpus lies,
put(), the project venv's python (make venv) and .npy bytes."""
import io
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
VENV_PY = os.path.join(HERE, "..", "..", "build", "venv", "bin", "python")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def npy_bytes(a):
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def npy_header(descr, shape, fortran=False, version=1, pad_to=64):
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    hl = 4 if version >= 2 else 2
    total = 8 + hl + len(h) + 1
    h += " " * ((pad_to - total % pad_to) % pad_to) + "\n"
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<I" if hl == 4 else "<H", len(h)) + h.encode()
