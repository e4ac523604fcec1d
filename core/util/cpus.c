/* CPUs this process may run on (util/cpus.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/cpus.h"

/* The whole of a small file into buf; 0 when it cannot be read. */
static int read_small(const char *path, char *buf, size_t size) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n > 0;
}

/* CPUs a quota of `quota` per `period` allows, rounded up; 0 for none. */
static int from_quota(long long quota, long long period) {
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = (quota + period - 1) / period;
    return n > 1024 ? 1024 : (int)n;
}

/* The smaller of two CPU counts where 0 means no limit. */
static int tighter(int a, int b) {
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* cgroup v2: cpu.max ("max 100000" or "QUOTA PERIOD") of group cg (a
 * path from the mount, "/..."), and of every ancestor: the tightest. */
static int quota_v2(const char *root, const char *cg) {
    char path[4096], buf[128], rel[2048];
    int best = 0;
    snprintf(rel, sizeof rel, "%s", cg);
    for (;;) {
        size_t len = strlen(rel);
        while (len > 1 && rel[len - 1] == '/')
            rel[--len] = '\0';
        snprintf(path, sizeof path, "%s/sys/fs/cgroup%s/cpu.max", root,
                 strcmp(rel, "/") == 0 ? "" : rel);
        long long q, p;
        if (read_small(path, buf, sizeof buf) && sscanf(buf, "%lld %lld", &q, &p) == 2)
            best = tighter(best, from_quota(q, p));
        if (strcmp(rel, "/") == 0)
            break;
        char *slash = strrchr(rel, '/');
        if (slash == rel)
            rel[1] = '\0';
        else
            *slash = '\0';
    }
    return best;
}

/* 1 when the comma-separated list has the token. */
static int has_token(const char *list, const char *tok) {
    size_t n = strlen(tok);
    for (const char *p = list; p; p = strchr(p, ',')) {
        if (*p == ',')
            p++;
        if (strncmp(p, tok, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

/* cgroup v1: cpu.cfs_quota_us / cpu.cfs_period_us of the cpu controller's
 * group (mounted as cpu or cpu,cpuacct). */
static int quota_v1(const char *root, const char *cg) {
    static const char *const mounts[] = {"cpu", "cpu,cpuacct", "cpuacct,cpu"};
    char path[4096], buf[64];
    for (size_t m = 0; m < sizeof mounts / sizeof mounts[0]; m++) {
        long long q, p;
        snprintf(path, sizeof path, "%s/sys/fs/cgroup/%s%s/cpu.cfs_quota_us", root, mounts[m],
                 strcmp(cg, "/") == 0 ? "" : cg);
        if (!read_small(path, buf, sizeof buf) || sscanf(buf, "%lld", &q) != 1)
            continue;
        snprintf(path, sizeof path, "%s/sys/fs/cgroup/%s%s/cpu.cfs_period_us", root, mounts[m],
                 strcmp(cg, "/") == 0 ? "" : cg);
        if (!read_small(path, buf, sizeof buf) || sscanf(buf, "%lld", &p) != 1)
            continue;
        return from_quota(q, p);
    }
    return 0;
}

int mf_cpus_quota(const char *root) {
    char path[4096], buf[8192];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    if (!read_small(path, buf, sizeof buf))
        return 0;
    int best = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "ID:CONTROLLERS:PATH"; v2's is "0::PATH" */
        char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!a || !b || b[1] != '/')
            continue;
        *b = '\0';
        const char *ctrl = a + 1, *cg = b + 1;
        if (!ctrl[0])
            best = tighter(best, quota_v2(root, cg));
        else if (has_token(ctrl, "cpu"))
            best = tighter(best, quota_v1(root, cg));
    }
    return best;
}

int mf_cpus_usable(void) {
    /* The mask, not the machine: a process under taskset or in a cpuset
     * that runs a thread per online CPU crowds the few it may use; and
     * the quota (a container's --cpus=2 on 64 cores), which makes a
     * thread per CPU wait out each period's throttling. */
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                         : sysconf(_SC_NPROCESSORS_ONLN);
    int q = mf_cpus_quota("");
    if (q > 0 && q < n)
        n = q;
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}
