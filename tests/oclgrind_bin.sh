# Sourced by the tests that run a cmocka test binary of the OpenCL provider
# under oclgrind (test_opencl_fused_oclgrind.sh, test_opencl_gpu_launch.sh).
#
# oclgrind_bin TAG NAME BIN [OCLGRIND_OPTION...] runs BIN under oclgrind
# --data-races --check-api (plus the options), logging to $tmp/NAME.log with
# a program cache of its own, and fails the test (exit 1, saying TAG: NAME)
# when BIN fails, when the provider did not run on the simulator or did not
# log $must_log (when set), or when oclgrind reports an error matching
# $errors. Needs $tmp; sets MINFER_LOG=info, and under ASan lets
# oclgrind's runtime come before libasan (as test_opencl_oclgrind.sh).
export MINFER_LOG=info
if [[ -n ${ASAN_OPTIONS:-} ]]; then
    export ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0:detect_leaks=0"
fi
oclgrind_bin() {
    local tag=$1 name=$2 bin=$3 rc=0
    shift 3
    XDG_CACHE_HOME=$tmp/cache-$name oclgrind --data-races --check-api "$@" "$bin" \
        >"$tmp/$name.log" 2>&1 || rc=$?
    if ((rc != 0)); then
        tail -40 "$tmp/$name.log" >&2
        echo "$tag: $name: exit $rc" >&2
        exit 1
    fi
    if ! grep -q "opencl: using device .*'Oclgrind Simulator'" "$tmp/$name.log"; then
        echo "$tag: $name: the provider did not run on oclgrind" >&2
        exit 1
    fi
    if [[ -n ${must_log:-} ]] && ! grep -q "$must_log" "$tmp/$name.log"; then
        echo "$tag: $name: the log does not say '$must_log'" >&2
        exit 1
    fi
    if grep -Eq "$errors" "$tmp/$name.log"; then
        grep -E -A8 "$errors" "$tmp/$name.log" | head -60 >&2
        echo "$tag: $name: oclgrind reported errors (above)" >&2
        exit 1
    fi
    echo "$tag: $name: $(grep -c 'OK \]' "$tmp/$name.log") cases, no oclgrind errors"
}
