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

#endif
