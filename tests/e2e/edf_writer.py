"""Writes the EDF/BDF fixtures of test_edf.py with pyedflib (run under the
project venv, common.venv_python), as the EEG 2025 challenge's copy of
the HBN releases was written (emgio -> pyedflib, BDF+C, physical extrema
from each channel's own data, 1 s records, a "BDF Annotations" signal),
and the other layouts pyedflib writes: EDF+C, plain EDF and BDF, several
sample rates in one file, records of 0.5 s. Beside each NAME.edf/.bdf,
NAME.ref.npz holds what pyedflib reads back: for every signal its
digital samples (readSignal(digital=True)), its physical ones
(readSignal(), float64), and the header's labels, units, sample rates,
physical and digital extrema. argv[1]: the directory to write into."""
import os
import sys

import numpy as np
import pyedflib

root = sys.argv[1]
rng = np.random.default_rng(39)


def eeg(n, t):
    """n channels of t samples, in microvolts: noise plus a slow wave,
    each channel its own amplitude."""
    amp = rng.uniform(5, 120, (n, 1))
    wave = np.sin(np.linspace(0, 40, t))[None, :] * amp
    return wave + rng.standard_normal((n, t)) * amp / 4


def header(label, rate, x, bits, unit="uV"):
    lim = 2 ** (bits - 1)
    # emgio's extrema: the channel's own, here to 2 decimals or whole
    q = 100.0 if len(label) % 2 else 1.0
    return {"label": label, "dimension": unit, "sample_frequency": rate,
            "physical_min": float(np.floor(x.min() * q) / q),
            "physical_max": float(np.ceil(x.max() * q) / q),
            "digital_min": -lim, "digital_max": lim - 1, "transducer": "", "prefilter": ""}


def write(name, kind, signals, record=1.0, annotations=()):
    """signals: (label, rate, data, unit) each; kind: a pyedflib FILETYPE."""
    path = os.path.join(root, name)
    bits = 24 if kind in (pyedflib.FILETYPE_BDF, pyedflib.FILETYPE_BDFPLUS) else 16
    w = pyedflib.EdfWriter(path, len(signals), file_type=kind)
    w.setSignalHeaders([header(lab, rate, x, bits, unit) for lab, rate, x, unit in signals])
    if record != 1.0:
        w.setDatarecordDuration(record)
    for onset, dur, text in annotations:
        w.writeAnnotation(onset, dur, text)
    w.writeSamples([x for _, _, x, _ in signals])
    w.close()
    r = pyedflib.EdfReader(path)
    n = r.signals_in_file
    hd = [r.getSignalHeader(i) for i in range(n)]
    np.savez(os.path.join(root, name.rsplit(".", 1)[0] + ".ref.npz"),
             **{f"digital{i}": r.readSignal(i, digital=True) for i in range(n)},
             **{f"physical{i}": r.readSignal(i) for i in range(n)},
             labels=np.array([h["label"] for h in hd]),
             units=np.array([h["dimension"] for h in hd]),
             rates=np.array([r.getSampleFrequency(i) for i in range(n)], np.float64),
             pmin=np.array([h["physical_min"] for h in hd], np.float64),
             pmax=np.array([h["physical_max"] for h in hd], np.float64),
             dmin=np.array([h["digital_min"] for h in hd], np.int64),
             dmax=np.array([h["digital_max"] for h in hd], np.int64))
    r.close()


def chans(n, rate, secs, unit="uV", prefix="E"):
    x = eeg(n, int(rate * secs))
    return [(f"{prefix}{i + 1}", rate, x[i], unit) for i in range(n)]


# the challenge's layout, smaller: 9 channels + Cz, 100 Hz, 1 s records,
# BDF+C with annotations (pyedflib adds the "BDF Annotations" signal)
hbn = chans(9, 100, 37) + [("Cz", 100, eeg(1, 3700)[0], "uV")]
write("hbn_like.bdf", pyedflib.FILETYPE_BDFPLUS, hbn,
      annotations=[(0.5, -1, "break cnt"), (12.25, 0.5, "stim")])
# the challenge's full width: 128 channels + Cz, 80 s (dsview reads it in
# several chunks, each a few channels' whole time)
write("hbn_full.bdf", pyedflib.FILETYPE_BDFPLUS,
      chans(128, 100, 80) + [("Cz", 100, eeg(1, 8000)[0], "uV")])
# two more recordings of other lengths, for a collection
write("hbn_b.bdf", pyedflib.FILETYPE_BDFPLUS, chans(10, 100, 23))
write("hbn_c.bdf", pyedflib.FILETYPE_BDFPLUS, chans(10, 100, 5))
# clinical EDF+C: 6 EEG channels at 256 Hz, 2 at 64 Hz (skipped), half-second records
write("clinic.edf", pyedflib.FILETYPE_EDFPLUS,
      chans(6, 256, 20) + chans(2, 64, 20, unit="mV", prefix="RESP"), record=0.5,
      annotations=[(1.0, -1, "eyes closed")])
# plain EDF and plain BDF (no annotation signal)
write("plain.edf", pyedflib.FILETYPE_EDF, chans(3, 128, 11))
write("plain24.bdf", pyedflib.FILETYPE_BDF, chans(4, 50, 9))
