/* CPUs this process may run on (util/cpus.h). */
#include <sched.h>
#include <unistd.h>

#include "util/cpus.h"

int mf_cpus_usable(void) {
    /* The mask, not the machine: a process under taskset or in a cpuset
     * that runs a thread per online CPU crowds the few it may use. */
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}
