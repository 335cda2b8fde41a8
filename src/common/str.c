/* String and path helpers; see str.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/str.h"
#include "dsview/dsview.h"

int dsv_has_ext(const char *name, const char *ext)
{
	size_t n = strlen(name), m = strlen(ext);
	return n >= m && !strcasecmp(name + n - m, ext);
}

int dsv_spec_split(const char *spec, char **file, char **dataset)
{
	const char *colon = NULL, *p = spec, *next;

	while ((next = strstr(p, ":/"))) {
		colon = next;
		p = next + 1;
	}
	*file = colon ? strndup(spec, (size_t)(colon - spec)) : strdup(spec);
	*dataset = colon ? strdup(colon + 1) : NULL;
	if (!*file || (colon && !*dataset)) {
		free(*file);
		free(*dataset);
		*file = *dataset = NULL;
		return DSV_ERR_NOMEM;
	}
	return 0;
}

int dsv_parse_gpu(const char *s, int *device)
{
	char *end;
	long v;

	if (!s)
		return DSV_ERR_INVALID;
	if (!strcmp(s, "auto")) {
		*device = DSV_GPU_AUTO;
		return 0;
	}
	if (!strcmp(s, "off")) {
		*device = DSV_GPU_OFF;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return DSV_ERR_INVALID;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v > INT_MAX)
		return DSV_ERR_INVALID;
	*device = (int)v;
	return 0;
}

int dsv_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > DSV_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (name[0] == '.')
		return 0; /* hidden names are reserved (/.stats.json) */
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}
