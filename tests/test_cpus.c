/*
 * The default thread count's CPU count (core/util/cpus.c): the cgroup CPU
 * quota, read from files laid out as /proc and /sys/fs/cgroup are, under a
 * folder of the test's (issue 37: a container's --cpus=2 on a large host
 * must not get a thread per host CPU).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "util/cpus.h"

static char root[256];

static void put(const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void fresh(void) {
    char cmd[300];
    if (root[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(root, sizeof root, "/tmp/minfer_cpus_XXXXXX");
    assert_non_null(mkdtemp(root));
}

static void test_v2(void **state) {
    (void)state;
    fresh();
    put("proc/self/cgroup", "0::/machine/app.scope\n");
    assert_int_equal(mf_cpus_quota(root), 0); /* no cpu.max anywhere */
    put("sys/fs/cgroup/machine/app.scope/cpu.max", "max 100000\n");
    assert_int_equal(mf_cpus_quota(root), 0); /* "max": no quota */
    put("sys/fs/cgroup/machine/cpu.max", "250000 100000\n");
    assert_int_equal(mf_cpus_quota(root), 3); /* an ancestor's, rounded up */
    put("sys/fs/cgroup/machine/app.scope/cpu.max", "150000 100000\n");
    assert_int_equal(mf_cpus_quota(root), 2); /* the tightest */
    put("sys/fs/cgroup/cpu.max", "50000 100000\n");
    assert_int_equal(mf_cpus_quota(root), 1); /* half a CPU: one thread */
    put("proc/self/cgroup", "0::/\n");
    assert_int_equal(mf_cpus_quota(root), 1); /* a container's own root */
}

static void test_v1(void **state) {
    (void)state;
    fresh();
    put("proc/self/cgroup", "12:cpuset:/docker/x\n4:cpu,cpuacct:/docker/x\n1:name=systemd:/\n");
    put("sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_quota_us", "-1\n");
    put("sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_period_us", "100000\n");
    assert_int_equal(mf_cpus_quota(root), 0); /* -1: no quota */
    put("sys/fs/cgroup/cpu,cpuacct/docker/x/cpu.cfs_quota_us", "400000\n");
    assert_int_equal(mf_cpus_quota(root), 4);
}

static void test_unreadable(void **state) {
    (void)state;
    fresh();
    assert_int_equal(mf_cpus_quota(root), 0); /* no /proc/self/cgroup */
    put("proc/self/cgroup", "garbage\n0:\n::\n0::relative\n");
    assert_int_equal(mf_cpus_quota(root), 0);
    put("proc/self/cgroup", "0::/a\n");
    put("sys/fs/cgroup/a/cpu.max", "not numbers\n");
    assert_int_equal(mf_cpus_quota(root), 0);
    int n = mf_cpus_usable(); /* the real machine's: at least 1 */
    assert_true(n >= 1 && n <= 1024);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2),
        cmocka_unit_test(test_v1),
        cmocka_unit_test(test_unreadable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
