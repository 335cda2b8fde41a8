/* A bucket listing as an object store sends it (ListObjectsV2's XML):
 * parsed with expat by src/net/list.c; whatever parses has its names
 * (prefixes and keys), truncation and token read back. */
#include <string.h>

#include "fuzz.h"
#include "net/net_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsv_net_listing l;
	dsv_errbuf eb;
	size_t total = 0;
	if (dsv_net_list_parse((const char *)data, size, &l, &eb) == 0) {
		for (size_t i = 0; i < l.n; i++)
			total += strlen(l.prefixes[i]);
		for (size_t i = 0; i < l.nkeys; i++)
			total += strlen(l.keys[i]);
		total += l.token ? strlen(l.token) : 0;
		total += (size_t)l.truncated;
		dsv_net_listing_free(&l);
	}
	return total == (size_t)-1;
}
