"""Seeds of the object-store fuzz targets: dcache (a disk cache entry),
s3list (a bucket listing). Run by make_corpus.py."""
import struct

from seedlib import put


def dcache_seeds():
    """Disk cache entries (fuzz_dcache.c's object: SIZE bytes of its
    pattern, block 0): a whole one, as disk_cache.c writes it, and the
    damage a disk or a person does to one."""
    import hashlib
    import zlib
    page, size = 64 << 10, 3 * (64 << 10) + 1000
    data = bytes((i * 7 + (i >> 9)) & 0xFF for i in range(size))
    h = bytearray(512)
    h[0:8] = b"dsvdc\0\0\1"
    h[8:40] = hashlib.sha256(b"https://fuzz.example/bucket/x.h5").digest()
    etag = b'"fuzz-etag"'
    h[40:40 + len(etag)] = etag
    h[200:220] = struct.pack(">QQI", size, 0, size)
    for p in range(0, size, page):
        h[220 + 4 * (p // page):224 + 4 * (p // page)] = struct.pack(">I", zlib.crc32(data[p:p + page]))
    h[284:288] = struct.pack(">I", zlib.crc32(bytes(h[:284])))
    good = bytes(h) + data
    put("dcache", "whole", good)
    put("dcache", "empty", b"")
    put("dcache", "header_only", good[:512])
    put("dcache", "cut_data", good[:-1])
    put("dcache", "one_more_byte", good + b"\0")
    put("dcache", "data_bit", good[:600] + bytes([good[600] ^ 1]) + good[601:])
    put("dcache", "header_bit", good[:210] + bytes([good[210] ^ 1]) + good[211:])
    other = bytearray(good)
    other[40:40 + len(etag)] = b'"other-tag"'
    other[284:288] = struct.pack(">I", zlib.crc32(bytes(other[:284])))
    put("dcache", "other_version", bytes(other))


def s3list_seeds():
    """Bucket listings (ListObjectsV2 replies, as SeaweedFS and AWS send
    them): a page with prefixes and a token, the last page, and the
    broken ones: not XML, another root, a value over its bound, an
    entity that expands."""
    ns = 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'
    page = (f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult {ns}>'
            "<Name>b</Name><Prefix>g.zarr/</Prefix><KeyCount>3</KeyCount><MaxKeys>2</MaxKeys>"
            "<Delimiter>/</Delimiter><IsTruncated>true</IsTruncated>"
            "<Contents><Key>g.zarr/.zgroup</Key><Size>24</Size></Contents>"
            "<CommonPrefixes><Prefix>g.zarr/a/</Prefix></CommonPrefixes>"
            "<CommonPrefixes><Prefix>g.zarr/sub &amp; more/</Prefix></CommonPrefixes>"
            "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
            "</ListBucketResult>")
    put("s3list", "page", page.encode())
    put("s3list", "last", (f"<ListBucketResult {ns}><IsTruncated>false</IsTruncated>"
                           "<CommonPrefixes><Prefix>g.zarr/z/</Prefix></CommonPrefixes>"
                           "</ListBucketResult>").encode())
    put("s3list", "cut", page.encode()[:300])
    put("s3list", "error_reply", b"<Error><Code>AccessDenied</Code></Error>")
    put("s3list", "long_value", (f"<ListBucketResult><CommonPrefixes><Prefix>{'p' * 5000}"
                                 "</Prefix></CommonPrefixes></ListBucketResult>").encode())
    put("s3list", "entities", (b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
                               b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                               b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>'
                               b"<ListBucketResult><NextContinuationToken>&c;&c;"
                               b"</NextContinuationToken></ListBucketResult>"))
