/*
 * How many CPUs this process may run on (util/cpus.c): the one count behind
 * the session's default thread count and the pool's choice to spin, so the
 * two agree under taskset or a cpuset. May be included by every file of the
 * core.
 */
#ifndef MINFER_CORE_CPUS_H
#define MINFER_CORE_CPUS_H

/* The CPUs in the calling thread's affinity mask (sched_getaffinity), or
 * the online CPUs when the mask cannot be read; at least 1, at most 1024. */
int mf_cpus_usable(void);

#endif
