#!/usr/bin/env bash
# The model corpus compiled (issue 21): tests/mfc_models.sh on a folder of
# links to the corpus's cases and the shared squeezenet1_1 (which
# mfc_models.sh runs first to see whether a provider list loads), once per
# provider list. Every case's compiled file must give its ONNX session's
# outputs bit for bit.
#
# usage: mfc_corpus.sh MINFER CORPUS_DIR MODELS_DIR LIST[=CASE,CASE...]...
#   LIST alone compiles every case of the corpus for that provider list;
#   LIST=CASE,... only the cases named (and squeezenet1_1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
minfer=$1
corpus=$2
models=$3
shift 3
(($#)) || { echo "usage: mfc_corpus.sh MINFER CORPUS_DIR MODELS_DIR LIST[=CASE,...]..." >&2; exit 2; }
[[ -f $models/squeezenet1_1/model.onnx ]] || { echo "FAIL: no $models/squeezenet1_1"; exit 1; }
corpus=$(realpath "$corpus") || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

all=()
for c in "$corpus"/*/; do
    c=${c%/}
    [[ -f $c/model.onnx && -d $c/test_data_set_0 ]] && all+=("$(basename "$c")")
done
((${#all[@]})) || { echo "FAIL: no cases in $corpus"; exit 1; }

fail=0
for arg in "$@"; do
    list=${arg%%=*}
    if [[ $arg == *=* ]]; then
        IFS=, read -r -a want <<<"${arg#*=}"
    else
        want=("${all[@]}")
    fi
    dir=$tmp/${list//,/_}
    mkdir -p "$dir"
    ln -s "$(realpath "$models/squeezenet1_1")" "$dir/squeezenet1_1"
    for c in "${want[@]}"; do
        [[ -d $corpus/$c ]] || { echo "FAIL: the corpus has no case $c"; fail=1; continue; }
        ln -s "$corpus/$c" "$dir/$c"
    done
    start=$SECONDS
    out=$(bash "$here/../mfc_models.sh" "$minfer" "$dir" "$list")
    rc=$?
    echo "$out"
    n=$(grep -c '^ok:' <<<"$out")
    echo "$list: $n of $((${#want[@]} + 1)) models identical compiled ($((SECONDS - start)) s)"
    if ((rc != 0)); then
        fail=1
    elif grep -q '^skip:' <<<"$out"; then
        : # the list's first provider does not load here (said above)
    elif ((n != ${#want[@]} + 1)); then
        echo "FAIL: $list: $n models compared, $((${#want[@]} + 1)) expected"
        fail=1
    fi
done
exit $fail
