/* See common/disk.h. */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/disk.h"

/* The number in the file at path, 0 when there is none. */
static uint64_t read_number(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

uint64_t dsv_disk_readahead(const char *path)
{
	struct stat st;
	char p[96];
	if (stat(path, &st) != 0)
		return 0;
	unsigned maj = major(st.st_dev), min = minor(st.st_dev);
	snprintf(p, sizeof(p), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	uint64_t kb = read_number(p);
	if (!kb) { /* a partition: the disk's queue holds it */
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../queue/read_ahead_kb", maj, min);
		kb = read_number(p);
	}
	return kb * 1024;
}
