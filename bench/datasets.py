"""The data sets of the codecs and seq experiments, made the same way
each time (the generator's seed is the caller's):

  photos   python3-skimage's photographs cut into 224x224x3 uint8 tiles
           (astronaut, chelsea, coffee, hubble, ihc, motorcycle L+R,
           retina, rocket), chunks of 7 tiles
  sparse   MNIST-like 28x28 uint8 strokes on black
  volume   smooth int16 volumes 64^3 (smoothed noise plus structure, x300)
  eeg      float32 64 channels x 1000 samples (rhythms + 1/f noise)
  tokens   uint16 token ids (Zipf over 50,257)

Each returns (array, rows a chunk or None: the caller's). MB (the
caller sets it) is the size of each but photos (all 74 tiles)."""
import numpy as np

MB = 16


def photos():
    from skimage import data
    tiles = []
    for name in ("astronaut", "chelsea", "coffee", "hubble_deep_field", "immunohistochemistry",
                 "stereo_motorcycle", "retina", "rocket"):
        im = getattr(data, name)()
        for im in im[:2] if isinstance(im, tuple) else (im,):
            im = im[..., :3]
            for y in range(0, im.shape[0] - 223, 224):
                for x in range(0, im.shape[1] - 223, 224):
                    tiles.append(im[y:y + 224, x:x + 224])
    return np.stack(tiles), 7


def sparse(rng):
    n = MB * 1000 * 1000 // 784
    x = np.zeros((n, 28, 28), np.uint8)
    for i in range(n):
        for _ in range(rng.integers(2, 5)):  # a few thick strokes
            r0, c0 = rng.integers(4, 24, 2)
            dr, dc = rng.uniform(-1, 1, 2)
            for t in range(rng.integers(6, 14)):
                r, c = int(r0 + dr * t), int(c0 + dc * t)
                if 1 <= r < 27 and 1 <= c < 27:
                    x[i, r - 1:r + 2, c - 1:c + 1] = rng.integers(180, 256)
    return x, None


def volume(rng):
    from scipy.ndimage import gaussian_filter
    n = max(1, MB * 1000 * 1000 // (64 ** 3 * 2))
    zz, yy, xx = np.mgrid[0:64, 0:64, 0:64] - 32
    brain = (zz ** 2 + yy ** 2 * 1.3 + xx ** 2 * 0.8 < 28 ** 2) * 1.0
    out = np.empty((n, 64, 64, 64), np.int16)
    for i in range(n):
        v = gaussian_filter(rng.standard_normal((64, 64, 64)), 2) * 8 + brain * 20
        out[i] = np.round(v * 300 / 8).astype(np.int16)
    return out, None


def eeg(rng):
    n = max(1, MB * 1000 * 1000 // (64 * 1000 * 4))
    t = np.arange(1000) / 250.0
    out = np.empty((n, 64, 1000), np.float32)
    for i in range(n):
        f = rng.uniform(1, 30, (64, 3))
        sig = sum(np.sin(2 * np.pi * f[:, k:k + 1] * t) * rng.uniform(5, 40, (64, 1)) for k in range(3))
        pink = np.cumsum(rng.standard_normal((64, 1000)), axis=1) * 0.5
        out[i] = (sig + pink + rng.standard_normal((64, 1000)) * 2).astype(np.float32)
    return out, None


def tokens(rng):
    n = MB * 1000 * 1000 // 2 // 2048
    ids = np.minimum(rng.zipf(1.2, n * 2048), 50257) - 1
    return ids.astype(np.uint16).reshape(n, 2048), None
