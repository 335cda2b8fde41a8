/*
 * What a zero-configuration mount passes over: each dataset it cannot
 * serve, recorded in m->skipped with the reason and a one-word kind, for
 * /.skipped.json, the mount command's summary line and the error when
 * nothing at all can be served (zeroconf.c says when a dataset is
 * skipped).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "dsview/h5info.h"
#include "manifest/manifest_i.h"

/* value: a scalar dataset's value (JSON text, taken), or NULL. */
int dsv_mf_skip_value(dsv_manifest *m, const char *path, const char *reason, const char *kind,
		      char *value)
{
	dsv_skipped *ns = realloc(m->skipped, (m->nskipped + 1) * sizeof(*ns));
	if (!ns)
		return DSV_ERR_NOMEM;
	m->skipped = ns;
	dsv_skipped *k = &m->skipped[m->nskipped];
	k->path = strdup(path);
	k->reason = strdup(reason);
	k->value = value;
	snprintf(k->kind, sizeof(k->kind), "%s", kind);
	if (!k->path || !k->reason) {
		free(k->path);
		free(k->reason);
		free(k->value);
		return DSV_ERR_NOMEM;
	}
	m->nskipped++;
	return 0;
}

int dsv_mf_skip(dsv_manifest *m, const char *path, const char *reason, const char *kind)
{
	return dsv_mf_skip_value(m, path, reason, kind, NULL);
}

/* One word for why dataset of file is not served, from its header: its
 * type's class when that is not a number, "scalar", "unreadable" when the
 * header cannot be read, else "unsupported" (a filter, external storage). */
void dsv_mf_skip_kind(const char *file, const char *dataset, char *kind, size_t cap, char **value)
{
	dsv_h5_desc d;
	dsv_errbuf eb;
	*value = NULL;
	if (dsv_h5_describe(file, dataset, &d, &eb)) {
		snprintf(kind, cap, "unreadable");
		return;
	}
	if (d.ndim == 0 && d.value_json) { /* metadata: its value goes in .skipped.json */
		snprintf(kind, cap, "scalar");
		*value = d.value_json;
		d.value_json = NULL;
	} else if (strcmp(d.type_class, "integer") && strcmp(d.type_class, "float")) {
		snprintf(kind, cap, "%s", d.type_class);
	} else if (d.ndim == 0) {
		snprintf(kind, cap, "scalar");
	} else {
		snprintf(kind, cap, "unsupported");
	}
	dsv_h5_desc_free(&d);
}

size_t dsv_manifest_skipped_datasets(const dsv_manifest *m)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nskipped; i++)
		n += strcmp(m->skipped[i].kind, DSV_SKIP_SIGNAL) != 0;
	return n;
}

const char *dsv_manifest_skipped_kinds(const dsv_manifest *m, char *buf, size_t cap)
{
	size_t used = 0, *counted = calloc(m->nskipped + 1, sizeof(*counted));
	if (cap)
		buf[0] = '\0';
	if (!counted)
		return buf;
	/* counted[i]: how many share skipped[i]'s kind, on its first one */
	for (size_t i = 0; i < m->nskipped; i++) {
		size_t first = i;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->skipped[j].kind, m->skipped[i].kind)) {
				first = j;
				break;
			}
		counted[first]++;
	}
	for (;;) {
		size_t best = m->nskipped;
		for (size_t i = 0; i < m->nskipped; i++)
			if (counted[i] && (best == m->nskipped || counted[i] > counted[best]))
				best = i;
		if (best == m->nskipped)
			break;
		int w = snprintf(buf + used, cap > used ? cap - used : 0, "%s%zu %s",
				 used ? ", " : "", counted[best], m->skipped[best].kind);
		if (w > 0)
			used += (size_t)w;
		counted[best] = 0;
	}
	free(counted);
	return buf;
}

/* /.skipped.json: [{"path": ..., "reason": ..., "kind": ...}, ...], and
 * "value" for a scalar dataset (metadata, not a view). */
int dsv_mf_skipped_render(dsv_manifest *m)
{
	json_t *arr = json_array();
	char *s;
	for (size_t i = 0; arr && i < m->nskipped; i++) {
		json_t *o = json_pack("{s:o,s:o,s:s}", "path", dsv_json_text(m->skipped[i].path),
				      "reason", dsv_json_text(m->skipped[i].reason), "kind",
				      m->skipped[i].kind);
		if (o && m->skipped[i].value) /* our own JSON text, so it parses */
			json_object_set_new(o, "value",
					    json_loads(m->skipped[i].value, JSON_DECODE_ANY, NULL));
		json_array_append_new(arr, o);
	}
	s = arr ? json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(arr);
	if (!s || !(m->skipped_json = malloc(strlen(s) + 2))) {
		free(s);
		return DSV_ERR_NOMEM;
	}
	sprintf(m->skipped_json, "%s\n", s);
	free(s);
	return 0;
}

/* Nothing of path can be served: eb says why, naming each dataset. */
int dsv_mf_nothing_served(const dsv_manifest *m, const char *path, dsv_errbuf *eb)
{
	char kinds[256], list[900], show[4 * 64 + 4];
	size_t used = 0;
	dsv_manifest_skipped_kinds(m, kinds, sizeof(kinds));
	list[0] = '\0';
	for (size_t i = 0; i < m->nskipped && used < sizeof(list); i++) {
		const dsv_skipped *k = &m->skipped[i];
		int w = snprintf(list + used, sizeof(list) - used, "%s%s: %s", i ? "; " : "",
				 dsv_shown(k->path, strlen(k->path), 64, show), k->reason);
		if (w > 0)
			used += (size_t)w;
	}
	if (used >= sizeof(list))
		strcpy(list + sizeof(list) - 4, "...");
	return dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, path, NULL,
			   "no dataset can be served (%zu skipped: %s): %s", m->nskipped, kinds,
			   list);
}

/* The .skipped.json path of dataset dset of file: the dataset alone for a
 * file mount, "name.h5:/dset" in a directory mount (in, the file's name). */
const char *dsv_mf_skip_path(const char *in, const char *dset, char *buf, size_t cap)
{
	if (!in)
		return dset;
	snprintf(buf, cap, "%s:%s", in, dset);
	return buf;
}
