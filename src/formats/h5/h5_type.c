/*
 * Element types of HDF5 datasets: which dsv_dtype an HDF5 type is, and
 * whether the library must convert it (then the source is read through
 * it: fallback). The one place that says which stored types dsview serves.
 */
#include <stdio.h>

#include "formats/h5/h5_src.h"

/* The integer dtype of an integer, enum base or bitfield of size bytes. */
static dsv_dtype int_dtype(size_t size, int sgn)
{
	switch (size) {
	case 1: return sgn ? DSV_I8 : DSV_U8;
	case 2: return sgn ? DSV_I16 : DSV_U16;
	case 4: return sgn ? DSV_I32 : DSV_U32;
	case 8: return sgn ? DSV_I64 : DSV_U64;
	default: return DSV_DTYPE_INVALID;
	}
}

int dsv_h5_classify_type(hid_t t, dsv_dtype *dt, int *conv, char *conv_why, size_t conv_cap,
			 dsv_errbuf *eb)
{
	const int U = DSV_ERR_UNSUPPORTED;
	H5T_class_t cls = H5Tget_class(t);
	size_t size = H5Tget_size(t);
	H5T_order_t order = H5Tget_order(t);
	size_t prec = H5Tget_precision(t);
	int off = H5Tget_offset(t);

	*conv = 0;
	*dt = DSV_DTYPE_INVALID;
	if (cls == H5T_ENUM) {
		/* An enum is served as its base integer: its stored bytes are the
		 * base type's, so a little-endian one stays on the fast path, and
		 * the library converts enum to integer for the fallback. */
		hid_t base = H5Tget_super(t);
		if (base < 0)
			return dsv_errf(eb, U, "enum with an unreadable base type");
		int err = dsv_h5_classify_type(base, dt, conv, conv_why, conv_cap, eb);
		H5Tclose(base);
		if (err && eb) {
			char inner[128];
			snprintf(inner, sizeof(inner), "%.*s", (int)sizeof(inner) - 1, eb->reason);
			dsv_errf(eb, err, "enum of %s", inner);
		}
		return err;
	}
	if (cls == H5T_INTEGER || cls == H5T_BITFIELD) {
		/* A bitfield is the unsigned integer of its size (the library
		 * reads it as a little-endian bitfield: dsv_h5_mem_type). */
		int sgn = cls == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2;
		*dt = int_dtype(size, sgn);
		if (*dt == DSV_DTYPE_INVALID)
			return dsv_errf(eb, U, "%s%zu%s", sgn ? "int" : "uint", size * 8,
					cls == H5T_BITFIELD ? " bitfield" : "");
		if (prec != size * 8 || off != 0) {
			*conv = 1;
			snprintf(conv_why, conv_cap, "%zu-bit %s in %zu bytes", prec,
				 cls == H5T_BITFIELD ? "bitfield" : "integer", size);
		}
	} else if (cls == H5T_FLOAT) {
		size_t spos, epos, esize, mpos, msize;
		static const size_t ieee[3][6] = {
			/* size, sign, exp pos, exp bits, mant bits, bias */
			{ 2, 15, 10, 5, 10, 15 },
			{ 4, 31, 23, 8, 23, 127 },
			{ 8, 63, 52, 11, 52, 1023 },
		};
		int k = size == 2 ? 0 : size == 4 ? 1 : size == 8 ? 2 : -1;
		if (k < 0) /* 10- and 16-byte floats: long double, float128 */
			return dsv_errf(eb, U, "%zu-byte float (long double or quad precision)",
					size);
		*dt = k == 0 ? DSV_F16 : k == 1 ? DSV_F32 : DSV_F64;
		if (H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) < 0)
			return dsv_errf(eb, U, "unreadable float");
		int std = spos == ieee[k][1] && epos == ieee[k][2] && esize == ieee[k][3] &&
			  mpos == 0 && msize == ieee[k][4] && H5Tget_ebias(t) == ieee[k][5] &&
			  prec == size * 8 && off == 0 && H5Tget_norm(t) == H5T_NORM_IMPLIED;
		/* We would have to pick a conversion for it; bfloat16 stored
		 * this way must not silently become float16. */
		if (!std && k == 0)
			return dsv_errf(eb, U, "2-byte float that is not IEEE half");
		if (!std) {
			*conv = 1;
			snprintf(conv_why, conv_cap, "non-IEEE %zu-byte float", size);
		}
	} else {
		const char *name;
		switch (cls) {
		case H5T_STRING: name = "string"; break;
		case H5T_COMPOUND: name = "compound"; break;
		case H5T_OPAQUE: name = "opaque"; break;
		case H5T_REFERENCE: name = "reference"; break;
		case H5T_VLEN: name = "variable-length"; break;
		case H5T_ARRAY: name = "array"; break;
		case H5T_TIME: name = "time"; break;
		default: name = "unknown"; break;
		}
		return dsv_errf(eb, U, "%s", name);
	}
	if (!*conv && size > 1 && order != H5T_ORDER_LE) {
		*conv = 1;
		snprintf(conv_why, conv_cap, "%s %s",
			 order == H5T_ORDER_BE ? "big-endian" : "mixed-endian",
			 dsv_dtype_name(*dt));
	}
	return 0;
}
