/*
 * dsview pack, the codecs it writes: names, levels, and for each the
 * HDF5 filter, its cd_values and the chunk bytes exactly as hdf5plugin
 * (and the Debian plugins) write them, so h5py+hdf5plugin reads every
 * store. The encoders and decoders are src/codec's; this file only maps a
 * codec to them (the LZ4 ones are called by chunks.c directly too).
 *
 * cd_values, as each plugin's set_local leaves them in the file:
 *   32004 LZ4       [block bytes]
 *   32015 zstd      [level]
 *   32001 Blosc     [2, 2, type size, chunk bytes, clevel, shuffle, compressor]
 *   32008 bitshuf.  [0, 4, element size, 0 (default block), 2 LZ4 | 3 zstd, (zstd level)]
 */
#include <stdio.h>
#include <string.h>

#include "dsview/codec.h"
#include "dsview/pack.h"

enum family { F_LZ4, F_NONE, F_ZSTD, F_BLOSC, F_BSHUF };

typedef struct codec_def {
	dsv_pack_codec_info info;
	enum family fam;
	int inner;   /* Blosc: DSV_BLOSC_LZ4/_ZSTD; bitshuffle: DSV_BSHUF_LZ4/_ZSTD */
	int shuffle; /* Blosc: DSV_BLOSC_NOSHUFFLE/_SHUFFLE/_BITSHUFFLE */
} codec_def;

#define BLOSC(id, nm, in, sh) [id] = { { nm, DSV_H5Z_FILTER_BLOSC, 1, 9, 5, 0 }, F_BLOSC, in, sh }

static const codec_def defs[DSV_PACK_NCODECS] = {
	[DSV_PACK_LZ4] = { { "lz4", DSV_H5Z_FILTER_LZ4, 1, DSV_LZ4_MAX_ACCELERATION, 1, 1 },
			   F_LZ4,
			   0,
			   0 },
	[DSV_PACK_LZ4HC] = { { "lz4hc", DSV_H5Z_FILTER_LZ4, 1, 12, 9, 1 }, F_LZ4, 0, 0 },
	[DSV_PACK_NONE] = { { "none", 0, 0, 0, 0, 0 }, F_NONE, 0, 0 },
	[DSV_PACK_ZSTD] = { { "zstd", DSV_H5Z_FILTER_ZSTD, 1, 22, 6, 0 }, F_ZSTD, 0, 0 },
	BLOSC(DSV_PACK_BLOSC_LZ4, "blosc-lz4-noshuffle", DSV_BLOSC_LZ4, DSV_BLOSC_NOSHUFFLE),
	BLOSC(DSV_PACK_BLOSC_LZ4_SHUFFLE, "blosc-lz4-shuffle", DSV_BLOSC_LZ4, DSV_BLOSC_SHUFFLE),
	BLOSC(DSV_PACK_BLOSC_LZ4_BITSHUFFLE, "blosc-lz4-bitshuffle", DSV_BLOSC_LZ4,
	      DSV_BLOSC_BITSHUFFLE),
	BLOSC(DSV_PACK_BLOSC_ZSTD, "blosc-zstd-noshuffle", DSV_BLOSC_ZSTD, DSV_BLOSC_NOSHUFFLE),
	BLOSC(DSV_PACK_BLOSC_ZSTD_SHUFFLE, "blosc-zstd-shuffle", DSV_BLOSC_ZSTD, DSV_BLOSC_SHUFFLE),
	BLOSC(DSV_PACK_BLOSC_ZSTD_BITSHUFFLE, "blosc-zstd-bitshuffle", DSV_BLOSC_ZSTD,
	      DSV_BLOSC_BITSHUFFLE),
	[DSV_PACK_BSHUF_LZ4] = { { "bitshuffle-lz4", DSV_H5Z_FILTER_BSHUF, 0, 0, 0, 0 },
				 F_BSHUF,
				 DSV_BSHUF_LZ4,
				 0 },
	[DSV_PACK_BSHUF_ZSTD] = { { "bitshuffle-zstd", DSV_H5Z_FILTER_BSHUF, 1, 22, 3, 0 },
				  F_BSHUF,
				  DSV_BSHUF_ZSTD,
				  0 },
};

const dsv_pack_codec_info *dsv_pack_codec_get(dsv_pack_codec c)
{
	return (unsigned)c < DSV_PACK_NCODECS ? &defs[c].info : NULL;
}

int dsv_pack_codec_by_name(const char *name, dsv_pack_codec *c)
{
	if (!strcmp(name, "auto")) {
		*c = DSV_PACK_AUTO;
		return 0;
	}
	for (int k = 0; k < DSV_PACK_NCODECS; k++)
		if (!strcmp(name, defs[k].info.name)) {
			*c = (dsv_pack_codec)k;
			return 0;
		}
	return DSV_ERR_INVALID;
}

const char *dsv_pack_codec_names(void)
{
	static const char names[] =
		"auto, lz4, lz4hc, zstd, blosc-lz4-noshuffle, "
		"blosc-lz4-shuffle, blosc-lz4-bitshuffle, blosc-zstd-noshuffle, "
		"blosc-zstd-shuffle, blosc-zstd-bitshuffle, bitshuffle-lz4, "
		"bitshuffle-zstd, none";
	return names;
}

int dsv_pack_level_check(dsv_pack_codec c, int level, dsv_errbuf *eb)
{
	const dsv_pack_codec_info *i = dsv_pack_codec_get(c);
	const int E = DSV_ERR_INVALID;

	if (level == -1)
		return 0;
	if (!i)
		return dsv_errf(eb, E, "auto: takes no --level (it picks the codec and the level)");
	if (i->max_level == 0)
		return dsv_errf(eb, E, "%s: takes no --level", i->name);
	if (level < i->min_level || level > i->max_level)
		return dsv_errf(eb, E, "%s: --level must be %d to %d%s", i->name, i->min_level,
				i->max_level, c == DSV_PACK_LZ4 ? " (the acceleration)" : "");
	return 0;
}

size_t dsv_pack_codec_bound(dsv_pack_codec c, size_t raw, size_t block, size_t elem)
{
	if ((unsigned)c >= DSV_PACK_NCODECS)
		return SIZE_MAX;
	switch (defs[c].fam) {
	case F_LZ4: return dsv_lz4_bound(raw, block);
	case F_NONE: return raw;
	case F_ZSTD: return dsv_zstd_bound(raw);
	case F_BLOSC: return dsv_blosc_bound(raw);
	case F_BSHUF: return dsv_bshuf_bound(raw, elem, 0, defs[c].inner);
	}
	return SIZE_MAX;
}

int64_t dsv_pack_codec_encode(dsv_pack_codec c, int level, void *dst, size_t cap, const void *src,
			      size_t raw, size_t block, size_t elem)
{
	if ((unsigned)c >= DSV_PACK_NCODECS)
		return DSV_ERR_INVALID;
	switch (defs[c].fam) {
	case F_LZ4:
		return c == DSV_PACK_LZ4 ? dsv_lz4_encode_fast(dst, cap, src, raw, block, level)
					 : dsv_lz4_encode(dst, cap, src, raw, block, level);
	case F_NONE:
		if (cap < raw)
			return DSV_ERR_INVALID;
		memcpy(dst, src, raw);
		return (int64_t)raw;
	case F_ZSTD: return dsv_zstd_encode(dst, cap, src, raw, level);
	case F_BLOSC:
		return dsv_blosc_encode(dst, cap, src, raw, elem, level, defs[c].shuffle,
					defs[c].inner);
	case F_BSHUF: return dsv_bshuf_encode(dst, cap, src, raw, elem, 0, defs[c].inner, level);
	}
	return DSV_ERR_INVALID;
}

int64_t dsv_pack_codec_decode(dsv_pack_codec c, void *dst, size_t raw, const void *src, size_t n,
			      size_t elem)
{
	int64_t got = DSV_ERR_INVALID;

	if ((unsigned)c >= DSV_PACK_NCODECS)
		return DSV_ERR_INVALID;
	switch (defs[c].fam) {
	case F_LZ4: got = dsv_lz4_decode(dst, raw, src, n); break;
	case F_NONE:
		if (n != raw)
			return DSV_ERR_CORRUPT;
		memcpy(dst, src, raw);
		got = (int64_t)raw;
		break;
	case F_ZSTD: got = dsv_zstd_decode(dst, raw, src, n); break;
	case F_BLOSC: got = dsv_blosc_decode(dst, raw, src, n); break;
	case F_BSHUF: got = dsv_bshuf_decode(dst, raw, src, n, elem, 0, defs[c].inner); break;
	}
	return got < 0 || got == (int64_t)raw ? got : DSV_ERR_CORRUPT;
}

size_t dsv_pack_codec_cd(dsv_pack_codec c, int level, size_t elem, uint64_t chunk_bytes,
			 uint64_t block, unsigned cd[8])
{
	if ((unsigned)c >= DSV_PACK_NCODECS)
		return 0;
	switch (defs[c].fam) {
	case F_LZ4:
		/* the plugin's block size (chunks are written whole by us, but
		 * a writer that extends the dataset uses it) */
		cd[0] = (unsigned)block;
		return 1;
	case F_NONE: return 0;
	case F_ZSTD: cd[0] = (unsigned)level; return 1;
	case F_BLOSC:
		cd[0] = 2; /* hdf5-blosc's FILTER_BLOSC_VERSION */
		cd[1] = 2; /* BLOSC_VERSION_FORMAT */
		cd[2] = elem > 255 ? 1 : (unsigned)elem;
		cd[3] = (unsigned)chunk_bytes;
		cd[4] = (unsigned)level;
		cd[5] = (unsigned)defs[c].shuffle;
		cd[6] = (unsigned)defs[c].inner;
		return 7;
	case F_BSHUF:
		cd[0] = 0; /* bitshuffle 0.4, as hdf5plugin 4.0 bundles it */
		cd[1] = 4;
		cd[2] = (unsigned)elem;
		cd[3] = 0; /* the default block */
		cd[4] = (unsigned)defs[c].inner;
		if (defs[c].inner != DSV_BSHUF_ZSTD)
			return 5;
		cd[5] = (unsigned)level;
		return 6;
	}
	return 0;
}
