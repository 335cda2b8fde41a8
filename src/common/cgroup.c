/* The machine's memory and control groups' limits; see cgroup.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cgroup.h"
#include "common/defaults.h"

/* The smallest memory limit of the control group at path (relative to the
 * controller's root dir) and of its ancestors: file is memory.limit_in_bytes
 * (cgroup v1) or memory.max (v2, where "max" means none). */
static uint64_t group_limit(const char *dir, const char *path, const char *file)
{
	char p[4096], buf[64];
	uint64_t least = UINT64_MAX;
	int n = snprintf(p, sizeof(p), "%s%s", dir, path);
	if (n < 0 || (size_t)n >= sizeof(p))
		return least;
	for (;;) {
		char f[4200];
		snprintf(f, sizeof(f), "%s/%s", p, file);
		FILE *fp = fopen(f, "r");
		if (fp) {
			char *end;
			if (fgets(buf, sizeof(buf), fp)) {
				unsigned long long v = strtoull(buf, &end, 10);
				if (end != buf && v < least)
					least = v;
			}
			fclose(fp);
		}
		char *slash = strrchr(p, '/');
		if (!slash || (size_t)(slash - p) < strlen(dir))
			return least;
		*slash = '\0';
	}
}

/* Whether the comma-separated list has word in it. */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == '\0' || p[n] == ','))
			return 1;
	return 0;
}

uint64_t dsv_cgroup_mem_limit(int pid)
{
	char line[4096];
	uint64_t least = UINT64_MAX;
	if (pid)
		snprintf(line, sizeof(line), "/proc/%d/cgroup", pid);
	FILE *fp = fopen(pid ? line : "/proc/self/cgroup", "r");
	if (!fp)
		return least;
	while (fgets(line, sizeof(line), fp)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		line[strcspn(line, "\n")] = '\0';
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = strcmp(c2 + 1, "/") ? c2 + 1 : "";
		uint64_t v = UINT64_MAX;
		if (has_word(ctrls, "memory"))
			v = group_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
		else if (!*ctrls && !strncmp(line, "0:", 2))
			v = group_limit("/sys/fs/cgroup", path, "memory.max");
		if (v < least)
			least = v;
	}
	fclose(fp);
	return least;
}

uint64_t dsv_ram_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGE_SIZE);
	return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : UINT64_MAX;
}

uint64_t dsv_usable_mem(uint64_t lim)
{
	uint64_t ram = dsv_ram_bytes();
	return lim < ram ? lim : ram;
}

uint64_t dsv_default_cache_size(uint64_t usable)
{
	const uint64_t most = (uint64_t)DSV_DEFAULT_CACHE_GIB << 30,
		       pc = DSV_DEFAULT_CACHE_RAM_PERCENT;
	if (usable == UINT64_MAX)
		return most;
	uint64_t share = usable / 100 * pc + usable % 100 * pc / 100; /* usable * pc / 100 */
	return share && share < most ? share : most;
}
