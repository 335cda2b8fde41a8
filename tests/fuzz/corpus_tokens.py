"""Seeds of the fuzz targets of NumPy archives and token files: npz
(np.savez, np.savez_compressed and damaged archives). Run by
make_corpus.py; one family alone, from tests/fuzz:
/usr/bin/python3 -c 'import corpus_tokens as c; c.npz_seeds()'."""
import io
import struct

import numpy as np

from seedlib import put


def npz_seeds():
    """npz: archives numpy writes (stored, with zip64 local headers, and
    deflated), then damaged end records, offsets and members."""
    rng = np.random.default_rng(5)
    b = io.BytesIO()
    np.savez(b, a=rng.integers(0, 9, (4, 3), dtype=np.int16), t=np.arange(50, dtype=np.uint16))
    raw = b.getvalue()
    put("npz", "stored", raw)
    b = io.BytesIO()
    np.savez_compressed(b, x=np.arange(64, dtype=np.float32))
    put("npz", "deflated", b.getvalue())
    eocd = raw.rindex(b"PK\x05\x06")
    cd = raw.index(b"PK\x01\x02")
    put("npz", "no_eocd", raw[:eocd])
    put("npz", "cd_offset_past_end", raw[:eocd + 16] + struct.pack("<I", 1 << 31) + raw[eocd + 20:])
    put("npz", "cd_count_huge", raw[:eocd + 10] + b"\xfe\xff" + raw[eocd + 12:])
    put("npz", "zip64_saturated", raw[:eocd + 16] + b"\xff\xff\xff\xff" + raw[eocd + 20:])
    put("npz", "name_len_huge", raw[:cd + 28] + b"\xff\xff" + raw[cd + 30:])
    put("npz", "local_off_past_end", raw[:cd + 42] + b"\xff\xff\xff\x7f" + raw[cd + 46:])
    put("npz", "member_cut", raw[:60] + raw[cd:])
