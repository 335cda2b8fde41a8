/*
 * Memory: the machine's, and control groups' limits as a job's scheduler
 * sets them (SLURM, Kubernetes), which the page cache counts against.
 * Thread safety: pure (reads /proc and /sys).
 */
#ifndef DSV_COMMON_CGROUP_H
#define DSV_COMMON_CGROUP_H

#include <stdint.h>

/* The memory limit of process pid's control group (0: this process's), the
 * smallest up its ancestors: cgroup v1's memory controller, else v2's
 * unified hierarchy. UINT64_MAX when none is set or it cannot be read. */
uint64_t dsv_cgroup_mem_limit(int pid);

/* Bytes of physical memory, UINT64_MAX when unknown. */
uint64_t dsv_ram_bytes(void);

/* Bytes of RAM, or the memory limit lim (a control group's) when that is
 * smaller; UINT64_MAX when unknown (then nothing is refused). */
uint64_t dsv_usable_mem(uint64_t lim);

/* The chunk cache's budget when nobody sets one: the smaller of
 * DSV_DEFAULT_CACHE_GIB and DSV_DEFAULT_CACHE_RAM_PERCENT of usable
 * (dsv_usable_mem), for a mount and for a reader in a process alike. */
uint64_t dsv_default_cache_size(uint64_t usable);

#endif
