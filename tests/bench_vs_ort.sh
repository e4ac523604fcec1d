#!/usr/bin/env bash
# tools/bench-vs-ort.sh's bookkeeping, with a stand-in for the ORT peer that
# prints known figures: case directories and folders of them, thread lists,
# R alternating rounds reduced to the median of the round medians, the
# faster of ORT spin / no-spin, minfer's peak RSS and the RSS bound (model
# file + planned arenas + 40 MiB, from minfer bench --json), ORT's RSS when
# the peer reports one, every round's figures, the older positional form,
# --before (a second CLI each round, the median of the rounds' ratios), and
# bad arguments refused. minfer itself really runs (squeezenet1_1 on
# cpu, 2 runs a round; about 10 s).
#
# usage: bench_vs_ort.sh MINFER_CLI MODELS_DIR SOURCE_DIR
set -uo pipefail
cli=$1
models=$2
script=$3/tools/bench-vs-ort.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-bvo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

# The stand-in peer: usage as ort-bench (CASE_DIR RUNS THREADS [--nospin]).
# Its k-th call of a kind answers the k-th figure of that kind's list,
# round after round: spin 10, 30, 20 (median 20), no-spin 50, 5, 40
# (median 40); with FAKE_RSS set it also reports a peak RSS.
cat >"$tmp/fake-ort" <<'EOF'
#!/usr/bin/env bash
kind=spin figs=(10 30 20)
[[ ${4:-} == --nospin ]] && kind=nospin figs=(50 5 40)
n=$(cat "$FAKE_DIR/$kind" 2>/dev/null || echo 0)
echo $((n + 1)) >"$FAKE_DIR/$kind"
echo "$1 $2 $3 ${4:-}" >>"$FAKE_DIR/calls"
rss=
[[ -z ${FAKE_RSS:-} ]] || rss=", \"peak_rss_bytes\": $FAKE_RSS"
echo "{\"model\":\"$(basename "$1")\",\"load_ms\":123.4,\"median_ms\":${figs[n % 3]},\"min_ms\":1,\"runs\":$2$rss}"
EOF
chmod +x "$tmp/fake-ort"
export FAKE_DIR=$tmp

case=$models/squeezenet1_1
mkdir "$tmp/folder"
ln -s "$case" "$tmp/folder/a_case"
ln -s "$case" "$tmp/folder/b_case"
mkdir "$tmp/folder/not_a_case"

out=$(bash "$script" --minfer "$cli" --providers cpu --runs 2 --rounds 3 --threads 1,3 \
    --ort "$tmp/fake-ort" "$case" 2>"$tmp/err")
rc=$?
((rc == 0)) || bad "a case at 1 and 3 threads: exit $rc: $(cat "$tmp/err")"
echo "$out"
rows=$(grep -c '^| squeezenet1_1 | [13] | ' <<<"$out")
((rows == 2 + 6)) || bad "2 table rows and 6 round rows expected, got $rows"
[[ $(wc -l <"$tmp/calls") -eq 12 ]] || bad "12 peer calls expected (2 thread counts x 3 rounds x 2): $(cat "$tmp/calls")"
grep -q ' 2 3 --nospin$' "$tmp/calls" || bad "the peer did not get the runs and thread count: $(cat "$tmp/calls")"
# The summary row at 3 threads: ORT spin 20 (the median of 10, 30, 20),
# no-spin 40; the ratio against 20.
row=$(grep '^| squeezenet1_1 | 3 | [0-9.]* | ' <<<"$out" | head -n 1)
IFS='|' read -r _ name t mm os on ratio rss bound orss mc oc _ <<<"$row"
[[ ${os// /} == 20.00 && ${on// /} == 40.00 ]] || bad "ORT medians of the rounds: '$row'"
# The table shows minfer's median rounded to 0.01 ms and the ratio from the
# unrounded one: allow the rounding (47.304 / 20 prints 2.37, 47.30 / 20 2.36).
want=$(awk -v a="${mm// /}" 'BEGIN { printf "%.2f", a / 20 }')
awk -v r="${ratio// /}" -v a="${mm// /}" 'BEGIN { d = r - a / 20; exit !(d < 0.006 && d > -0.006) }' ||
    bad "ratio ${ratio// /}, want minfer / 20 = $want: '$row'"
[[ ${orss// /} == - ]] || bad "ORT RSS shown though the peer reports none: '$row'"
[[ ${oc// /} == 123 ]] || bad "ORT create time: '$row'"
grep -q '^ORT RSS: the peer (ort-bench) reports none.$' <<<"$out" || bad "no note that ORT reports no RSS"
# minfer's median: the median of its three round medians.
mapfile -t rounds < <(grep '^| squeezenet1_1 | 3 | [123] | ' <<<"$out" | awk -F'|' '{ print $5 + 0 }')
med=$(printf '%s\n' "${rounds[@]}" | sort -g | sed -n 2p)
[[ $(awk -v a="$med" -v b="${mm// /}" 'BEGIN { print (a == b) }') == 1 ]] ||
    bad "minfer ${mm// /} is not the median of its rounds (${rounds[*]})"
# The RSS bound: the model file + the planned arenas + 40 MiB.
json=$("$cli" bench "$case/model.onnx" --providers cpu --threads 3 --runs 1 --warmup 0 \
    --inputs "$case/test_data_set_0" --json)
arena=$(sed -n 's/.*"arena_bytes": *\([0-9]*\).*/\1/p' <<<"$json")
dev=$(sed -n 's/.*"device_arena_bytes": *\([0-9]*\).*/\1/p' <<<"$json")
want=$(awk -v b=$(($(stat -c %s "$case/model.onnx") + arena + dev + 40 * 1048576)) \
    'BEGIN { printf "%.1f", b / 1048576 }')
[[ ${bound// /} == "$want" ]] || bad "RSS bound ${bound// /} MiB, want $want: '$row'"
awk -v r="${rss// /}" 'BEGIN { exit !(r > 5 && r < 1000) }' || bad "minfer RSS '${rss// /}' MiB"
grep -q '^2 rows: .*peak RSS within the bound in [0-9] of 2; minfer failed in 0\.$' <<<"$out" ||
    bad "summary line: $out"

# A folder of cases, ORT's RSS reported, the older positional form.
rm -f "$tmp/spin" "$tmp/nospin" "$tmp/calls"
out=$(FAKE_RSS=$((300 * 1048576)) THREADS=2 ROUNDS=1 ORT_BENCH=$tmp/fake-ort \
    bash "$script" "$cli" "$tmp/folder" cpu 2 2>"$tmp/err") || bad "the older form: $(cat "$tmp/err")"
for c in "a_case 10.00 50.00" "b_case 30.00 5.00"; do
    set -- $c
    grep -q "^| $1 | 2 | [0-9.]* | $2 | $3 | .* | 300.0 | " <<<"$out" ||
        bad "the older form, $1: ORT figures or RSS missing: $out"
done
grep -q not_a_case <<<"$out" && bad "a folder that is no case was measured: $out"
grep -q "ORT RSS: the peer" <<<"$out" && bad "the note says no ORT RSS though it was reported"

# --load N: N busy processes beside both runtimes while measuring (the
# stand-in peer counts them), all gone when the script ends.
cat >"$tmp/fake-ort-load" <<'EOF2'
#!/usr/bin/env bash
pgrep -fc "^sh -c while :; do :; done$" >>"$FAKE_DIR/busy"
exec "$FAKE_DIR/fake-ort" "$@"
EOF2
chmod +x "$tmp/fake-ort-load"
rm -f "$tmp/spin" "$tmp/nospin" "$tmp/busy"
before=$(pgrep -fc "^sh -c while :; do :; done$")
out=$(bash "$script" --minfer "$cli" --providers cpu --runs 2 --rounds 3 --threads 1 --load 3 \
    --ort "$tmp/fake-ort-load" "$case" 2>"$tmp/err")
rc=$?
((rc == 0)) || bad "--load 3: exit $rc: $(cat "$tmp/err")"
grep -q '^--load 3: 3 busy processes' <<<"$out" || bad "--load 3 does not say so: $out"
busy=$(sort -u "$tmp/busy" | tr '\n' ' ')
[[ $busy == "$((before + 3)) " ]] || bad "--load 3: the peer saw $busy busy processes, want $((before + 3))"
after=$(pgrep -fc "^sh -c while :; do :; done$")
((after == before)) || bad "--load 3: $((after - before)) busy processes left after the script"

# --before PATH: a second CLI run right before minfer in every round; the
# table adds its median and the median of the rounds' minfer / before
# ratios. Stand-ins for both CLIs: minfer 2, 4, 4 ms, before 4, 2, 8 ms:
# before's median 4, the ratios 0.5, 2, 0.5 (median 0.5, where the ratio of
# the medians would be 1).
cat >"$tmp/fake-cli" <<'EOF2'
#!/usr/bin/env bash
figs=($FAKE_FIGS)
n=$(cat "$FAKE_DIR/$FAKE_NAME" 2>/dev/null || echo 0)
echo $((n + 1)) >"$FAKE_DIR/$FAKE_NAME"
echo "$FAKE_NAME $1" >>"$FAKE_DIR/order"
echo "{\"median_ms\": ${figs[n % 3]}, \"create_ms\": 1}"
EOF2
chmod +x "$tmp/fake-cli"
printf '#!/bin/sh\nFAKE_NAME=after FAKE_FIGS="2 4 4" exec "%s" "$@"\n' "$tmp/fake-cli" >"$tmp/after-cli"
printf '#!/bin/sh\nFAKE_NAME=before FAKE_FIGS="4 2 8" exec "%s" "$@"\n' "$tmp/fake-cli" >"$tmp/before-cli"
chmod +x "$tmp/after-cli" "$tmp/before-cli"
rm -f "$tmp/spin" "$tmp/nospin" "$tmp/order"
out=$(bash "$script" --minfer "$tmp/after-cli" --before "$tmp/before-cli" --providers cpu --runs 2 \
    --rounds 3 --threads 1 --ort "$tmp/fake-ort" "$case" 2>"$tmp/err")
rc=$?
((rc == 0)) || bad "--before: exit $rc: $(cat "$tmp/err")"
row=$(grep '^| squeezenet1_1 | 1 | [0-9.]* | ' <<<"$out" | head -n 1)
IFS='|' read -r _ name t mm os on ratio rss bound orss mc oc bm br _ <<<"$row"
[[ ${mm// /} == 4.00 && ${bm// /} == 4.00 && ${br// /} == 0.50 ]] ||
    bad "--before: minfer 4.00, before 4.00, minfer / before 0.50 expected: '$row'"
[[ $(grep -c '^| squeezenet1_1 | 1 | [123] | .* | [0-9.]* |$' <<<"$out") -eq 3 ]] ||
    bad "--before: 3 round rows with before's figure expected: $out"
[[ $(tr '\n' ' ' <"$tmp/order") == "before bench after bench before bench after bench before bench after bench " ]] ||
    bad "--before does not run right before minfer each round: $(cat "$tmp/order")"

# Refused: no directory, a folder without cases, bad counts, unknown options.
for args in "" "$tmp/folder/not_a_case" "--runs 0 $case" "--rounds x $case" \
    "--threads 1,0 $case" "--bogus $case" "--load 65 $case" "--load -1 $case" \
    "--before $tmp/folder $case"; do
    # shellcheck disable=SC2086 # the words are the arguments
    bash "$script" --minfer "$cli" --ort "$tmp/fake-ort" $args >/dev/null 2>"$tmp/err"
    rc=$?
    ((rc == 2)) && grep -q '^bench-vs-ort: ' "$tmp/err" ||
        bad "'$args': exit $rc, want 2 with a message: $(cat "$tmp/err")"
done
bash "$script" --help | grep -q '^usage: tools/bench-vs-ort.sh \[options\] DIR\.\.\.$' ||
    bad "--help prints no usage"

((fails == 0)) && echo "bench-vs-ort: ok"
exit $((fails > 0))
