#!/usr/bin/env bash
# The session's default thread count (threads 0) is one per CPU the process
# may run on: its affinity mask, not the machine's online CPUs, so that a
# process under taskset or a cpuset does not crowd its CPUs (issue 18).
# An explicit count is kept whatever the mask.
#
# usage: threads_default.sh MINFER_CLI MODELS_DIR
set -uo pipefail
cli=$1
model=$2/squeezenet1_1/model.onnx
fails=0
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
command -v taskset >/dev/null || { echo "FAIL: taskset (util-linux) is needed"; exit 1; }

# threads_of [taskset CPUS] [--threads N]: the pool size minfer bench reports.
threads_of() {
    local pin=()
    if [[ ${1:-} == taskset ]]; then
        pin=(taskset -c "$2")
        shift 2
    fi
    "${pin[@]}" "$cli" bench "$model" --providers cpu --runs 1 --warmup 0 --json "$@" 2>/dev/null |
        sed -n 's/.*"threads": *\([0-9]*\).*/\1/p'
}

allowed=$(nproc) # nproc counts the affinity mask too
first=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
[[ $(threads_of) == "$allowed" ]] || bad "default threads $(threads_of), want $allowed (nproc)"
[[ $(threads_of taskset "$first") == 1 ]] ||
    bad "under taskset -c $first: $(threads_of taskset "$first") threads, want 1"
[[ $(threads_of taskset "$first" --threads 3) == 3 ]] ||
    bad "--threads 3 under taskset -c $first: $(threads_of taskset "$first" --threads 3) threads"
((fails == 0)) && echo "default threads: $allowed here, 1 under taskset -c $first; --threads kept"
exit $((fails > 0))
