/*
 * A source spec's s3:// URL with a pattern in its key
 * ("s3://bucket/eeg/rec*.npy"; the parts naming directories may hold
 * wildcards too): the objects it matches, found by listing one level at a
 * time (ListObjectsV2 with '/' as
 * the delimiter, page after page, net/list.c): each part of the key with
 * '*' or '[' is matched (fnmatch(3), '*' stays within a part) against the
 * child prefixes of the level above, the last part against its objects
 * (a literal last part too: only objects that are there); other parts
 * are taken as they are. In natural order. '?' is no wildcard here: it
 * starts a URL's query.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/str.h"
#include "manifest/manifest_i.h"
#include "net/net.h"

typedef struct url_list {
	char **v;
	size_t n;
} url_list;

static void list_free(url_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (url_list){ 0 };
}

/* Appends base/name (a new string) to l. @return 0 or DSV_ERR_NOMEM. */
static int list_add(url_list *l, const char *base, const char *name, size_t len)
{
	char **nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv)
		return DSV_ERR_NOMEM;
	l->v = nv;
	if (asprintf(&l->v[l->n], "%s/%.*s", base, (int)len, name) < 0)
		return DSV_ERR_NOMEM;
	l->n++;
	return 0;
}

static int has_wild(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '*' || s[i] == '[')
			return 1;
	return 0;
}

/* The children of prefix url (its objects when objects is set) whose names
 * match part, added to out. */
static int match_level(const char *url, const char *part, int objects, url_list *out,
		       dsv_errbuf *eb)
{
	dsv_net_dir *d;
	char **names = NULL;
	size_t n = 0;
	int err = dsv_net_dir_open(url, &d, eb);

	if (!err)
		err = objects ? dsv_net_dir_list_objects(d, &names, &n, eb)
			      : dsv_net_dir_list(d, &names, &n, eb);
	dsv_net_dir_close(d);
	for (size_t i = 0; i < n; i++) {
		if (!err && fnmatch(part, names[i], FNM_PERIOD) == 0 &&
		    list_add(out, url, names[i], strlen(names[i])))
			err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		free(names[i]);
	}
	free(names);
	return err;
}

/* One part of the key, [part, part + len), applied to every URL of cur:
 * the next level's URLs into next. */
static int step(const url_list *cur, const char *part, size_t len, int last, url_list *next,
		dsv_errbuf *eb)
{
	char *pat = strndup(part, len);
	int err = pat ? 0 : dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");

	for (size_t i = 0; !err && i < cur->n; i++) {
		if (!has_wild(part, len) && !last) {
			if (list_add(next, cur->v[i], part, len))
				err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
		} else {
			err = match_level(cur->v[i], pat, last, next, eb);
		}
	}
	free(pat);
	return err;
}

int dsv_s3_glob(const char *pattern, char ***urls, size_t *n, dsv_errbuf *eb)
{
	const char *key = strchr(pattern + 5, '/'), *part, *wild;
	url_list cur = { 0 }, next = { 0 };
	int err = 0;

	*urls = NULL;
	*n = 0;
	/* the literal part: the bucket and the key's parts before the first
	 * wildcard, which must hold at least one (a listing needs a prefix) */
	wild = key ? strpbrk(key, "*[") : NULL;
	if (!wild)
		return dsv_errf_at(eb, DSV_ERR_INVALID, pattern, NULL, "not a pattern");
	while (wild > key && wild[-1] != '/')
		wild--;
	if (wild - 1 <= key)
		return dsv_errf_at(eb, DSV_ERR_INVALID, pattern, NULL,
				   "a pattern needs a prefix without wildcards after the bucket "
				   "(s3://bucket/dir/*.npy)");
	if (list_add(&cur, "", pattern, (size_t)(wild - 1 - pattern)))
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	memmove(cur.v[0], cur.v[0] + 1, strlen(cur.v[0])); /* no leading '/' */
	for (part = wild; !err && cur.n;) {
		const char *end = strchrnul(part, '/');
		err = step(&cur, part, (size_t)(end - part), !*end, &next, eb);
		list_free(&cur);
		cur = next;
		next = (url_list){ 0 };
		if (!*end)
			break;
		part = end + 1;
	}
	if (!err && cur.n == 0)
		err = dsv_errf_at(eb, DSV_ERR_NOTFOUND, pattern, NULL,
				  "the pattern matches no object");
	if (err) {
		list_free(&cur);
		return err;
	}
	dsv_natural_sort(cur.v, cur.n);
	*urls = cur.v;
	*n = cur.n;
	return 0;
}
