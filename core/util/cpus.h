/*
 * How many CPUs this process may run on (util/cpus.c): the one count behind
 * the session's default thread count and the pool's choice to spin, so the
 * two agree under taskset or a cpuset. May be included by every file of the
 * core.
 */
#ifndef MINFER_CORE_CPUS_H
#define MINFER_CORE_CPUS_H

/* The CPUs in the calling thread's affinity mask (sched_getaffinity), or
 * the online CPUs when the mask cannot be read, lowered to the cgroup's CPU
 * quota when it has one (mf_cpus_quota); at least 1, at most 1024. */
int mf_cpus_usable(void);

/* The CPU quota of this process's cgroups, rounded up (cgroup v2 cpu.max
 * of its group and every ancestor, v1 cpu.cfs_quota_us/cfs_period_us),
 * read under root ("" for the real /proc and /sys: tests give a folder);
 * 0 when there is none or it cannot be read. */
int mf_cpus_quota(const char *root);

#endif
