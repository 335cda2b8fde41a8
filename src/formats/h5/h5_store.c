/*
 * What a dsview store's attribute (DSV_STORE_ATTR) tells the source beyond
 * its chunks: the input's own scaling (a NIfTI image's scl_slope and
 * scl_inter, recorded by `dsview pack` as "scale" and "offset"), so that a
 * store serves the values its input served.
 */
#include <jansson.h>
#include <math.h>

#include "dsview/h5info.h"
#include "formats/h5/h5_src.h"

void dsv_h5_store_scale(dsv_source *s)
{
	json_t *attrs = s->attrs_json ? json_loads(s->attrs_json, 0, NULL) : NULL;
	const char *text = json_string_value(json_object_get(attrs, DSV_STORE_ATTR));
	json_t *store = text ? json_loads(text, 0, NULL) : NULL;
	json_t *scale = json_object_get(store, "scale"), *offset = json_object_get(store, "offset");

	if (json_is_number(scale) && json_is_number(offset) && isfinite(json_number_value(scale)) &&
	    json_number_value(scale) != 0 && isfinite(json_number_value(offset))) {
		s->info.has_scale = 1;
		s->info.scale = json_number_value(scale);
		s->info.offset = json_number_value(offset);
	}
	json_decref(store);
	json_decref(attrs);
}
