#!/usr/bin/python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/):
small valid inputs of every kind each target reads, and the malformed cases
docs/reliability.md names. Run once when the seeds change; the
files are committed, and crashers found by `make fuzz` are added beside
them by hand (crash-*). A run writes over the seeds it makes and leaves
every other file there: what fuzzing found (libFuzzer's inputs, named by
their SHA-1, and crash- files) and the seeds added by hand.

  /usr/bin/python3 tests/fuzz/make_corpus.py"""
import numpy as np

import corpus_codecs
import corpus_net
import corpus_eeg
import corpus_index
import corpus_sources
import corpus_tokens
import corpus_zarr


def main():
    rng = np.random.default_rng(1)  # one stream, drawn in this order
    corpus_sources.npy_seeds(rng)
    corpus_sources.raw_seeds(rng)
    corpus_codecs.lz4_seeds(rng)
    corpus_sources.h5_seeds(rng)
    corpus_codecs.bshuf_seeds()
    corpus_sources.manifest_seeds()
    corpus_sources.pack_seeds(rng)
    corpus_net.dcache_seeds()
    corpus_sources.nifti_seeds()
    corpus_zarr.zarray_seeds()
    corpus_codecs.zlib_seeds()
    corpus_zarr.zarr_chunk_seeds()
    corpus_zarr.zarr_shard_seeds()
    corpus_codecs.blosc_seeds()
    corpus_codecs.blosc2_seeds()
    corpus_codecs.devlz4_seeds()
    corpus_codecs.quirk_seeds()
    corpus_net.s3list_seeds()
    corpus_tokens.npz_seeds()
    corpus_tokens.token_seeds()
    corpus_tokens.arrow_seeds()
    corpus_eeg.edf_seeds()
    corpus_eeg.eeglab_seeds()
    corpus_eeg.bv_seeds()
    corpus_index.index_seeds()


if __name__ == "__main__":
    main()
