/*
 * sched_runs MODEL DATA_DIR OUT_DIR PROVIDERS THREADS SCHEDULER RUNS: runs
 * one test case RUNS times in one session and writes each run's outputs,
 * OUT_DIR/K/output_I.pb for run K (1-based), then prints what the
 * scheduler did with the plan:
 *
 *     runs 3 concurrent 1 queue_runs 2 overlapped_runs 1
 *
 * (minfer_schedule_info). tests/sched_identical.sh compares every run's
 * outputs with the sequential scheduler's: under the parallel scheduler a
 * plan's first run is a probe that starts one step at a time, so one run a
 * case would compare sequential with sequential.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "minfer/minfer.h"

static int fail(const char *what) {
    fprintf(stderr, "sched_runs: %s: %s\n", what, minfer_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: sched_runs MODEL DATA_DIR OUT_DIR PROVIDERS THREADS "
                        "SCHEDULER RUNS\n");
        return 2;
    }
    const char *model = argv[1], *data = argv[2], *out_dir = argv[3];
    int threads = atoi(argv[5]), runs = atoi(argv[7]);
    minfer_scheduler sched = !strcmp(argv[6], "parallel")   ? MINFER_SCHED_PARALLEL
                             : !strcmp(argv[6], "pipeline") ? MINFER_SCHED_PIPELINE
                                                            : MINFER_SCHED_SEQUENTIAL;
    if (runs < 1 || runs > 1000 || threads < 0) {
        fprintf(stderr, "sched_runs: RUNS 1..1000, THREADS >= 0\n");
        return 2;
    }
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, argv[4]) != MINFER_OK ||
        minfer_options_set_threads(opt, threads) != MINFER_OK ||
        minfer_options_set_scheduler(opt, sched) != MINFER_OK)
        return fail("options");
    if (minfer_session_create(model, opt, &s) != MINFER_OK) {
        minfer_options_free(opt);
        return fail(model);
    }
    minfer_options_free(opt);
    size_t n_in = minfer_session_input_count(s), n_out = minfer_session_output_count(s);
    minfer_tensor **ins = calloc(n_in + 1, sizeof *ins), **outs = calloc(n_out + 1, sizeof *outs);
    const char **names = calloc(n_in + 1, sizeof *names);
    int rc = 1;
    if (!ins || !outs || !names) {
        fprintf(stderr, "sched_runs: out of memory\n");
        goto done;
    }
    for (size_t k = 0; k < n_in; k++) {
        minfer_value_info info;
        char path[4096];
        if (minfer_session_input_info(s, k, &info) != MINFER_OK) {
            rc = fail("input info");
            goto done;
        }
        names[k] = info.name;
        snprintf(path, sizeof path, "%s/input_%zu.pb", data, k);
        if (minfer_value_load_pb(path, (minfer_value_kind)info.kind, &ins[k], NULL) !=
            MINFER_OK) {
            rc = fail(path);
            goto done;
        }
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "sched_runs: %s: %s\n", out_dir, strerror(errno));
        goto done;
    }
    for (int r = 1; r <= runs; r++) {
        char dir[4096], path[4200];
        /* fresh outputs each run: the kinds a run returns may differ */
        for (size_t o = 0; o < n_out; o++) {
            minfer_tensor_free(outs[o]);
            outs[o] = NULL;
        }
        if (minfer_session_run(s, names, (const minfer_tensor *const *)ins, n_in, NULL, outs,
                               n_out) != MINFER_OK) {
            rc = fail("run");
            goto done;
        }
        snprintf(dir, sizeof dir, "%s/%d", out_dir, r);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "sched_runs: %s: %s\n", dir, strerror(errno));
            goto done;
        }
        for (size_t o = 0; o < n_out; o++) {
            minfer_value_info info;
            snprintf(path, sizeof path, "%s/output_%zu.pb", dir, o);
            if (minfer_session_output_info(s, o, &info) != MINFER_OK ||
                minfer_tensor_save_pb(outs[o], info.name, path) != MINFER_OK) {
                rc = fail(path);
                goto done;
            }
        }
    }
    minfer_schedule_info si = {.struct_size = sizeof si};
    if (minfer_session_schedule_info(s, &si) != MINFER_OK) {
        rc = fail("schedule info");
        goto done;
    }
    printf("runs %d concurrent %d queue_runs %llu overlapped_runs %llu\n", runs, si.concurrent,
           (unsigned long long)si.queue_runs, (unsigned long long)si.overlapped_runs);
    rc = 0;
done:
    for (size_t k = 0; ins && k < n_in; k++)
        minfer_tensor_free(ins[k]);
    for (size_t o = 0; outs && o < n_out; o++)
        minfer_tensor_free(outs[o]);
    free(ins);
    free(outs);
    free(names);
    minfer_session_free(s);
    return rc;
}
