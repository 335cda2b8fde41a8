/*
 * A bucket's listing: ListObjectsV2 with a delimiter ('/'), the "one
 * level down" of a prefix, as S3 serves it in XML, parsed with expat. Only
 * what a listing of children needs is kept: each CommonPrefixes/Prefix
 * (the child prefixes), each Contents/Key (the objects), IsTruncated and
 * NextContinuationToken; sizes and the rest are skipped. The reply is untrusted bytes from the network: values are
 * bounded (LIST_VALUE_MAX), so are their count (LIST_MAX), and a reply
 * that is not well-formed XML, or not a ListBucketResult, is refused.
 * dsv_net_dir_list pages through a listing by its continuation tokens.
 */
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/knobs.h"
#include "net/net_i.h"

#define LIST_VALUE_MAX 4096
#define LIST_MAX 100000
#define LIST_REPLY_MAX (16u << 20) /* a page: 1,000 entries, well under */
#define LIST_PAGES_MAX 1000

enum { IN_NONE, IN_PREFIX, IN_KEY, IN_TRUNCATED, IN_TOKEN };

typedef struct parse_state {
	dsv_net_listing *out;
	int depth;       /* elements open */
	int root_ok;     /* the root is ListBucketResult */
	int in_common;   /* inside a CommonPrefixes at depth 2 */
	int in_contents; /* inside a Contents at depth 2 */
	int in;          /* which value the text is for */
	char text[LIST_VALUE_MAX + 1];
	size_t len;
	int err; /* DSV_ERR_*: stop */
} parse_state;

static void on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
	parse_state *p = user;
	(void)attrs;
	p->depth++;
	if (p->depth == 1)
		p->root_ok = !strcmp(name, "ListBucketResult");
	else if (p->depth == 2 && !strcmp(name, "CommonPrefixes"))
		p->in_common = 1;
	else if (p->depth == 3 && p->in_common && !strcmp(name, "Prefix"))
		p->in = IN_PREFIX;
	else if (p->depth == 2 && !strcmp(name, "Contents"))
		p->in_contents = 1;
	else if (p->depth == 3 && p->in_contents && !strcmp(name, "Key"))
		p->in = IN_KEY;
	else if (p->depth == 2 && !strcmp(name, "IsTruncated"))
		p->in = IN_TRUNCATED;
	else if (p->depth == 2 && !strcmp(name, "NextContinuationToken"))
		p->in = IN_TOKEN;
	p->len = 0;
}

static void on_text(void *user, const XML_Char *s, int len)
{
	parse_state *p = user;
	if (p->in == IN_NONE || p->err)
		return;
	if ((size_t)len > LIST_VALUE_MAX - p->len) {
		p->err = DSV_ERR_OVERFLOW;
		return;
	}
	memcpy(p->text + p->len, s, (size_t)len);
	p->len += (size_t)len;
}

/* Keeps the value just closed. */
static void keep(parse_state *p)
{
	dsv_net_listing *l = p->out;
	p->text[p->len] = '\0';
	if (p->in == IN_TRUNCATED) {
		l->truncated = !strcmp(p->text, "true");
	} else if (p->in == IN_TOKEN) {
		free(l->token);
		if (!(l->token = strdup(p->text)))
			p->err = DSV_ERR_NOMEM;
	} else if (l->n + l->nkeys >= LIST_MAX) {
		p->err = DSV_ERR_OVERFLOW;
	} else {
		char ***v = p->in == IN_KEY ? &l->keys : &l->prefixes;
		size_t *n = p->in == IN_KEY ? &l->nkeys : &l->n;
		char **nn = realloc(*v, (*n + 1) * sizeof(*nn));
		if (nn)
			*v = nn;
		if (!nn || !(nn[*n] = strdup(p->text)))
			p->err = DSV_ERR_NOMEM;
		else
			++*n;
	}
}

static void on_end(void *user, const XML_Char *name)
{
	parse_state *p = user;
	(void)name;
	if (p->in != IN_NONE && !p->err)
		keep(p);
	p->in = IN_NONE;
	if (p->depth == 2)
		p->in_common = p->in_contents = 0;
	p->depth--;
}

int dsv_net_list_parse(const char *xml, size_t len, dsv_net_listing *out, dsv_errbuf *eb)
{
	parse_state p = { .out = out };
	XML_Parser x = XML_ParserCreate(NULL);
	int ok;

	memset(out, 0, sizeof(*out));
	if (!x)
		return dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	if (len > (size_t)INT32_MAX)
		len = (size_t)INT32_MAX; /* more than any listing: fails as cut short */
	XML_SetUserData(x, &p);
	XML_SetElementHandler(x, on_start, on_end);
	XML_SetCharacterDataHandler(x, on_text);
	ok = XML_Parse(x, xml, (int)len, 1) == XML_STATUS_OK;
	int line = (int)XML_GetCurrentLineNumber(x);
	const char *why = ok ? NULL : XML_ErrorString(XML_GetErrorCode(x));
	XML_ParserFree(x);
	if (p.err == DSV_ERR_NOMEM)
		return dsv_errf(eb, p.err, "out of memory");
	int err = p.err ? dsv_errf(eb, DSV_ERR_FORMAT, "a listing value or count over its bound")
		  : !ok ? dsv_errf(eb, DSV_ERR_FORMAT, "a listing that is not XML (line %d: %s)",
				   line, why ? why : "?")
		  : !p.root_ok ? dsv_errf(eb, DSV_ERR_FORMAT, "a reply that is not a listing")
			       : 0;
	if (err)
		dsv_net_listing_free(out);
	return err;
}

void dsv_net_listing_free(dsv_net_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->prefixes[i]);
	free(l->prefixes);
	for (size_t i = 0; i < l->nkeys; i++)
		free(l->keys[i]);
	free(l->keys);
	free(l->token);
	memset(l, 0, sizeof(*l));
}

/* The child names of one page: each common prefix less pfx (the listed
 * prefix) and its trailing '/', or with objects each object's key less
 * pfx, appended to *names. */
static int take_page(const dsv_net_listing *l, const char *pfx, int objects, char ***names,
		     size_t *n)
{
	size_t plen = strlen(pfx), count = objects ? l->nkeys : l->n;
	for (size_t i = 0; i < count; i++) {
		const char *c = objects ? l->keys[i] : l->prefixes[i];
		size_t len = strlen(c), trail = !objects;
		if (len <= plen + trail || strncmp(c, pfx, plen) ||
		    (objects ? memchr(c + plen, '/', len - plen) != NULL : c[len - 1] != '/'))
			continue; /* not one level under pfx: not a child */
		char **nn = realloc(*names, (*n + 1) * sizeof(*nn));
		if (!nn)
			return DSV_ERR_NOMEM;
		*names = nn;
		if (!(nn[*n] = strndup(c + plen, len - plen - trail)))
			return DSV_ERR_NOMEM;
		++*n;
	}
	return 0;
}

/* dsv_net_dir_list's child prefixes, or with objects the objects. */
static int list_level(const dsv_net_dir *d, int objects, char ***names, size_t *n, dsv_errbuf *eb)
{
	const char *url;
	const dsv_net_config *c = dsv_net_dir_config(d, &url);
	char *token = NULL, *req = NULL, *pfx = dsv_net_list_prefix(url),
	     *body = malloc(LIST_REPLY_MAX);
	int err = 0, pages = 0;

	*names = NULL;
	*n = 0;
	if (strncmp(url, "s3://", 5))
		err = dsv_errf_at(eb, DSV_ERR_UNSUPPORTED, url, NULL,
				  "only s3:// prefixes can be listed (a group needs a listing)");
	else if (!pfx || !body)
		err = dsv_errf(eb, DSV_ERR_NOMEM, "out of memory");
	do { /* a page a request, until one says it is the last */
		size_t got;
		dsv_net_listing l;
		if (!err &&
		    (err = dsv_net_list_url(c, url, token,
					    (int)dsv_knob_int(DSV_KNOB_NET_LIST_PAGE), &req)))
			err = dsv_errf_at(eb, err, url, NULL, "not a listable prefix");
		if (!err && (err = dsv_net_dir_fetch(d, req, url, body, LIST_REPLY_MAX, &got, eb)))
			if (err != DSV_ERR_IO)
				err = dsv_errf_at(eb, err, url, NULL, "listing: %s",
						  err == DSV_ERR_NOTFOUND
							  ? "no such bucket (HTTP 404)"
							  : "a reply over 16 MiB");
		free(req);
		req = NULL;
		if (!err && !(err = dsv_net_list_parse(body, got, &l, eb))) {
			err = take_page(&l, pfx, objects, names, n);
			free(token);
			token = l.truncated && l.token && *l.token ? strdup(l.token) : NULL;
			if (l.truncated && !token && !err)
				err = dsv_errf_at(eb, DSV_ERR_FORMAT, url, NULL,
						  "a listing cut short without a token to go on");
			dsv_net_listing_free(&l);
		} else if (err == DSV_ERR_FORMAT) {
			dsv_errbuf why = *eb;
			dsv_errf_at(eb, err, url, NULL, "listing: %s", why.reason);
		}
	} while (!err && token && ++pages < LIST_PAGES_MAX);
	if (!err && token)
		err = dsv_errf_at(eb, DSV_ERR_OVERFLOW, url, NULL, "more than %d listing pages",
				  LIST_PAGES_MAX);
	free(token);
	free(pfx);
	free(body);
	if (err) {
		for (size_t i = 0; i < *n; i++)
			free((*names)[i]);
		free(*names);
		*names = NULL;
		*n = 0;
	}
	return err;
}

int dsv_net_dir_list(const dsv_net_dir *d, char ***names, size_t *n, dsv_errbuf *eb)
{
	return list_level(d, 0, names, n, eb);
}

int dsv_net_dir_list_objects(const dsv_net_dir *d, char ***names, size_t *n, dsv_errbuf *eb)
{
	return list_level(d, 1, names, n, eb);
}
