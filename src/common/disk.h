/*
 * Disks: what the kernel does for a file's device, as far as dsview
 * follows it. Thread safety: pure (stat and /sys).
 */
#ifndef DSV_COMMON_DISK_H
#define DSV_COMMON_DISK_H

#include <stdint.h>

/* The kernel's readahead window for the file at path, in bytes: the
 * read_ahead_kb of its file system's device (/sys/class/bdi/MAJ:MIN; for
 * a partition, its disk's queue), which is also how much a page fault of
 * a memmap of the file reads around the page. 0 when it cannot be told
 * (no such file, a file system without a device). */
uint64_t dsv_disk_readahead(const char *path);

#endif
