#!/usr/bin/env bash
# Packaging end to end: builds the Debian packages with cpack, installs them
# into a fresh root as a user would, and uses that install only.
#
#   test_packaging.sh BUILD_DIR SOURCE_DIR MODELS_DIR PROVIDERS CPACK CMAKE
#
# PROVIDERS: the providers this build made, comma-separated ("cpu,onednn").
#
# "Install" is dpkg-deb -x of every package into a temporary root: it needs
# no privileges and no dpkg database, so it runs the same as a user and as
# root in CI. Such a root is a staged and relocated install at once (prefix
# /usr, files under $root/usr), which is what provider discovery, the CLI's
# RPATH, minfer.pc and the CMake package must cope with. Removing a package
# is removing the files `dpkg-deb -c` lists for it. Dependencies are checked
# from the packages' control fields, and with `apt-get -s` where apt exists.
#
# Installed binaries carry no RPATH (Debian policy): ld.so finds
# libminfer.so.0 in /usr/lib/<triplet> on a real system, and LD_LIBRARY_PATH
# points at the root's multiarch libdir here.
#
# First, from the build tree, `minfer providers` gives the reason for each of
# the fake providers that fail to load, and find_package(minfer) with
# minfer_DIR=BUILD_DIR builds and runs the consumer project (tests/packaging)
# and the provider template. Then, from the unpacked root:
#  1. one package per component, named by Debian's conventions (libminfer0,
#     libminfer-dev, minfer-tools, minfer-provider-NAME), provider packages
#     holding only their provider, Depends computed from the binaries with no
#     entry repeated or implied by another, Multi-Arch, a real Maintainer,
#     a DEP-5 copyright file and changelog.Debian.gz per package, libraries
#     in the multiarch libdir, no RPATH/RUNPATH in any ELF file, no empty
#     directory, docs whose relative links resolve, and `lintian` with no
#     error on any package and, with --display-info, no hardening tag, no
#     .comment section, no ldconfig in a maintainer script, a symbols file
#     for libminfer0 listing exactly what libminfer.so.0 exports;
#  1b. minfer-tools' man pages (one per command `minfer --help` lists) render
#     with `man -l` without warnings, and its bash completion completes the
#     commands, their options and provider names;
#  2. `minfer providers` finds cpu (and every other built provider) in the
#     root's <libdir>/minfer/providers and loads it; a model runs and matches
#     its reference with each provider list "P,cpu";
#  3. the provider template builds out of tree against the installed dev
#     files and is loaded through MINFER_PROVIDER_PATH (and only then);
#  4. `pkg-config --cflags --libs minfer` and find_package(minfer) both build
#     the README's C example, which then runs;
#  5. the whole root still works after being moved;
#  6. after the opencl package (or, if no opencl was built, another provider
#     package) is removed, `minfer providers` no longer lists it and
#     MINFER_PROVIDERS=opencl,cpu still runs the model on cpu with a warning;
#  7. with every provider package removed (libminfer0 alone), `minfer run`
#     says once that the reference provider runs the whole model and names
#     minfer-provider-onednn; not when --providers cpu asked for it.
set -euo pipefail

if [[ $# -ne 6 ]]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR MODELS_DIR PROVIDERS CPACK CMAKE" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
models=$3
IFS=, read -r -a built_providers <<<"$4"
cpack=$5
cmake=$6

model=$models/resnet18
tmp=$(mktemp -d "${TMPDIR:-/tmp}/minfer-packaging.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
# The installed tree must not lean on the user's settings or the build tree.
unset MINFER_PROVIDERS MINFER_PROVIDER_PATH MINFER_LOG LD_LIBRARY_PATH PKG_CONFIG_PATH

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
step() { echo "--- [${SECONDS}s] $*"; }

[[ -f $model/model.onnx ]] || fail "no model at $model (set MINFER_MODELS_DIR)"
for tool in dpkg-deb dpkg-shlibdeps pkg-config cc readelf lintian man; do
    command -v "$tool" >/dev/null || fail "$tool not found (tools/install-deps.sh installs it)"
done

# ---- 0. `minfer providers` reasons, from the build tree ---------------------------
# The fake providers of tests/fake_providers fail in known ways.
step "minfer providers on the fake providers"
fakes=$build/tests/fakeproviders
out=$(MINFER_PROVIDER_PATH=$fakes "$build/tools/minfer" providers) || fail "'minfer providers' failed"
expect_row() { # NAME LOADS REASON-PATTERN
    awk -v n="$1" -v l="$2" '$1 == n && $4 == l {f = 1} END {exit !f}' <<<"$out" &&
        { [[ -z $3 ]] || grep -A1 "^  $1 " <<<"$out" | grep -q "why: .*$3"; } ||
        { echo "$out" >&2; fail "'minfer providers' row for $1: want loads=$2 and a reason matching '$3'"; }
}
expect_row fakegood yes ""
expect_row fakeabi no "ABI version 999"
expect_row fakenosym no "does not export minfer_provider_entry"
expect_row fakeinitfail no "failed to initialise: .*no fake device"
grep -q '^  fakeabi  *? *999 ' <<<"$out" || { echo "$out" >&2; fail "fakeabi's ABI version not shown"; }

# ---- 0b. find_package(minfer) against the build tree -------------------------------
# minfer_DIR=BUILD_DIR: the build tree's minferConfig.cmake (targets exported
# with export(EXPORT), include dir in the source tree, providers in the build
# tree). The consumer checks the config's variables at configure time.
step "find_package(minfer) from the build tree"
awk '/^## Using the library/ {u = 1} u && /^```c$/ {c = 1; next} c && /^```$/ {exit} c' \
    "$src/README.md" >"$tmp/example.c"
grep -q 'minfer_session_create' "$tmp/example.c" || fail "no C example found in README.md"
mkdir -p "$tmp/run"
ln -s "$model/model.onnx" "$tmp/run/model.onnx" # the example opens "model.onnx"
"$cmake" -S "$src/tests/packaging" -B "$tmp/consumer-bt" -Dminfer_DIR="$build" \
    -DREADME_EXAMPLE="$tmp/example.c" -DEXPECT_PROVIDER_DIR="$build/providers" \
    -DEXPECT_INCLUDE_DIR="$src/include" >"$tmp/fpb.log" 2>&1 &&
    "$cmake" --build "$tmp/consumer-bt" >>"$tmp/fpb.log" 2>&1 ||
    { cat "$tmp/fpb.log" >&2; fail "find_package(minfer) from the build tree does not build the consumer"; }
grep -F "minfer found: $build/minferConfig.cmake" "$tmp/fpb.log" ||
    { cat "$tmp/fpb.log" >&2; fail "the consumer did not use the build tree's minferConfig.cmake"; }
(cd "$tmp/run" && "$tmp/consumer-bt/readme_example" >"$tmp/ex.log" 2>&1) ||
    { cat "$tmp/ex.log" >&2; fail "the build-tree build of the README example fails to run"; }
grep -q '^first score' "$tmp/ex.log" || fail "the README example (build tree) printed no score"
"$tmp/consumer-bt/relu_check" cpu cpu || fail "relu_check built against the build tree failed"
# The provider template, built against the build tree, loads into it.
"$cmake" -S "$src/providers/template" -B "$tmp/tpl-bt" -Dminfer_DIR="$build" \
    >"$tmp/tplb.log" 2>&1 && "$cmake" --build "$tmp/tpl-bt" >>"$tmp/tplb.log" 2>&1 ||
    { cat "$tmp/tplb.log" >&2; fail "the provider template does not build against the build tree"; }
MINFER_PROVIDER_PATH=$tmp/tpl-bt "$tmp/consumer-bt/relu_check" example,cpu example ||
    fail "the build tree's runtime did not run Relu on the template provider built against it"

# ---- 1. packages ----------------------------------------------------------------
step "cpack"
(cd "$build" && "$cpack" -G DEB -B "$tmp/pkgs" >"$tmp/cpack.log" 2>&1) ||
    { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }

deb_of() { # package name -> its .deb
    local f
    for f in "$tmp"/pkgs/*.deb; do
        [[ $(dpkg-deb -f "$f" Package) == "$1" ]] && { echo "$f"; return 0; }
    done
    return 1
}
# Regular files and links of a package, without the leading "./".
files_of() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||'; }

version=$(dpkg-deb -f "$(deb_of libminfer0)" Version) || fail "no package 'libminfer0'"
others=()
for p in "${built_providers[@]}"; do
    [[ $p == cpu ]] || others+=("$p")
done
# libminfer0 alone is the naive provider: it recommends the fast CPU path.
if [[ " ${others[*]} " == *" onednn "* ]]; then
    [[ $(dpkg-deb -f "$(deb_of libminfer0)" Recommends) == "minfer-provider-onednn" ]] ||
        fail "libminfer0 does not recommend minfer-provider-onednn"
fi
expected=(libminfer0 libminfer-dev minfer-tools)
for p in "${others[@]}"; do
    expected+=("minfer-provider-${p//_/-}")
done
# The plugins this build made (plugins/CMakeLists.txt), one package each.
plugins=()
for f in "$build"/plugins/libminfer_plugin_*.so; do
    [[ -e $f ]] || continue
    f=${f##*/libminfer_plugin_}
    plugins+=("${f%.so}")
done
for p in "${plugins[@]}"; do
    expected+=("minfer-plugin-${p//_/-}")
done
# The Python package, when it was built (python/tests/test_install.sh tests it).
[[ -d $build/python/minfer ]] && expected+=(python3-minfer)
for pkg in "${expected[@]}"; do
    deb=$(deb_of "$pkg") || fail "cpack made no package '$pkg'"
    deps=$(dpkg-deb -f "$deb" Depends)
    echo "$pkg: Depends: $deps"
    if [[ $pkg != libminfer0 ]]; then
        [[ $deps == *"libminfer0 (= $version)"* ]] || fail "$pkg does not depend on libminfer0 (= $version)"
    fi
    # No entry twice, none implied by another (its alternatives a superset
    # of another entry's): cmake/DebFixup.cmake.
    awk -v pkg="$pkg" 'BEGIN {RS = ", "} {sub(/\n$/, ""); e[NR] = $0; n = NR}
        END {
            for (i = 1; i <= n; i++) {
                na = split(e[i], a, / \| /)
                for (j = 1; j <= n; j++) {
                    if (i == j) continue
                    nb = split(e[j], b, / \| /)
                    if (nb > na || (nb == na && j > i)) continue
                    sub_ = 1
                    for (k = 1; k <= nb; k++) {
                        f = 0
                        for (l = 1; l <= na; l++) if (b[k] == a[l]) f = 1
                        if (!f) sub_ = 0
                    }
                    if (sub_) { print pkg ": Depends entry \"" e[i] "\" repeats or is implied by \"" e[j] "\""; bad = 1 }
                }
            }
            exit bad
        }' <<<"$deps" || fail "$pkg: redundant Depends"
    # Debian's control fields.
    maint=$(dpkg-deb -f "$deb" Maintainer)
    [[ $maint =~ ^[^\<]+\ \<[^@\>]+@[^@\>]+\.[a-z]+\>$ && $maint != *localhost* ]] ||
        fail "$pkg: Maintainer '$maint' is not 'Name <address>' with a real domain"
    multiarch=$(dpkg-deb -f "$deb" Multi-Arch)
    case $pkg in
    python3-minfer) want=no ;; # dpkg-deb -f shows the default when the field is absent
    minfer-tools) want=foreign ;;
    *) want=same ;;
    esac
    [[ $multiarch == "$want" ]] || fail "$pkg: Multi-Arch '$multiarch', want '$want'"
    f=$(files_of "$deb")
    grep -qx "usr/share/doc/$pkg/copyright" <<<"$f" || fail "$pkg has no usr/share/doc/$pkg/copyright"
    grep -qx "usr/share/doc/$pkg/changelog.Debian.gz" <<<"$f" || fail "$pkg has no changelog.Debian.gz"
    # Read whole before grep -q looks at it: grep -q (or head) exits at its
    # line, and under pipefail the writer's SIGPIPE (exit 141) would fail
    # a pipeline whose check passed (the completion check below flaked so).
    copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - "./usr/share/doc/$pkg/copyright") ||
        fail "cannot read $pkg's copyright file"
    grep -qx 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
        <<<"${copyright%%$'\n'*}" || fail "$pkg's copyright file is not in the DEP-5 format"
    # No empty directory (a docs/img/ without its pictures was one).
    dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||' | LC_ALL=C sort | awk '
        prev != "" && prev ~ /\/$/ && index($0, prev) != 1 {print "empty directory: " prev; bad = 1}
        {prev = $0}
        END {if (prev ~ /\/$/) {print "empty directory: " prev; bad = 1}; exit bad}' ||
        fail "$pkg holds an empty directory"
done
n_debs=$(ls "$tmp"/pkgs/*.deb | wc -l)
[[ $n_debs -eq ${#expected[@]} ]] || fail "expected ${#expected[@]} packages, cpack made $n_debs"

# Libraries in the multiarch libdir, whatever the prefix this build was
# configured with (Debian policy 9.1.1; what ld.so searches).
triplet=$(cc -print-multiarch)
[[ -n $triplet ]] || fail "cc -print-multiarch names no triplet"
runtime_files=$(files_of "$(deb_of libminfer0)")
grep -qx "usr/lib/$triplet/libminfer\.so\.0" <<<"$runtime_files" ||
    fail "libminfer0 lacks usr/lib/$triplet/libminfer.so.0: $runtime_files"
grep -qx "usr/lib/$triplet/minfer/providers/libminfer_provider_cpu\.so" <<<"$runtime_files" ||
    fail "libminfer0 lacks the cpu provider in usr/lib/$triplet/minfer/providers"
[[ $(grep -c 'libminfer_provider_' <<<"$runtime_files") -eq 1 ]] ||
    fail "libminfer0 holds providers other than cpu: $runtime_files"
[[ $(dpkg-deb -f "$(deb_of libminfer0)" Depends) == *libprotobuf-c* ]] ||
    fail "libminfer0's Depends lacks libprotobuf-c (dpkg-shlibdeps not run?)"
grep -qx "libminfer 0 libminfer0 (>= ${version%-*})" \
    <<<"$(dpkg-deb --ctrl-tarfile "$(deb_of libminfer0)" | tar -xOf - ./shlibs)" ||
    fail "libminfer0's shlibs does not name libminfer0"
grep -qx "usr/lib/$triplet/libminfer\.so" <<<"$(files_of "$(deb_of libminfer-dev)")" ||
    fail "libminfer-dev lacks the usr/lib/$triplet/libminfer.so link"
[[ $(dpkg-deb -f "$(deb_of minfer-tools)" Depends) == *libc6* ]] ||
    fail "minfer-tools' Depends lacks libc6 (dpkg-shlibdeps not run?)"
for p in "${others[@]}"; do
    deb=$(deb_of "minfer-provider-${p//_/-}")
    f=$(files_of "$deb")
    # Its provider, plus private libraries of that provider only
    # (libminfer_NAME_*.so, e.g. oneDNN's implementation behind its shim).
    grep -qE "^usr/[^[:space:]]*/minfer/providers/libminfer_provider_${p}\.so$" <<<"$f" ||
        fail "minfer-provider-$p lacks its provider: $f"
    while read -r file; do
        [[ $file == usr/share/doc/minfer-provider-${p//_/-}/* ]] && continue # copyright, changelog
        [[ $file =~ ^usr/[^[:space:]]*/minfer/providers/libminfer_(provider_${p}|${p}_[a-z0-9_]+)\.so$ ]] ||
            fail "minfer-provider-$p holds more or other than its provider: $file"
    done <<<"$f"
    deps=$(dpkg-deb -f "$deb" Depends)
    case $p in
    onednn) [[ $deps == *libdnnl* ]] || fail "minfer-provider-onednn does not depend on oneDNN: $deps" ;;
    opencl) [[ $deps == *libopencl* || $deps == *ocl-icd* ]] ||
        fail "minfer-provider-opencl does not depend on an OpenCL ICD loader: $deps" ;;
    esac
done
for p in "${plugins[@]}"; do
    deb=$(deb_of "minfer-plugin-${p//_/-}")
    while read -r file; do
        [[ $file == usr/share/doc/minfer-plugin-${p//_/-}/* ]] && continue # copyright, changelog
        [[ $file =~ ^usr/lib/$triplet/minfer/plugins/libminfer_plugin_${p}\.so$ ]] ||
            fail "minfer-plugin-$p holds more or other than its plugin: $file"
    done < <(files_of "$deb")
    grep -qx "usr/lib/$triplet/minfer/plugins/libminfer_plugin_${p}\.so" <<<"$(files_of "$deb")" ||
        fail "minfer-plugin-$p lacks usr/lib/$triplet/minfer/plugins/libminfer_plugin_${p}.so"
done
# With apt, ask whether this system could install all of them (simulation only).
if command -v apt-get >/dev/null; then
    apt-get -s -q -o Debug::NoLocking=1 install "$tmp"/pkgs/*.deb >"$tmp/apt.log" 2>&1 ||
        { cat "$tmp/apt.log" >&2; fail "apt-get -s cannot satisfy the packages' dependencies"; }
fi

# Lintian, Debian's package checker: errors fail, warnings are printed
# (initial-upload-closes-no-bugs: these are not uploads to Debian). With
# --display-info: no hardening tag (dpkg-buildflags' flags, cmake/Hardening.cmake,
# when the build has them), no .comment section, no ldconfig call in a
# maintainer script, a symbols file (cmake/DebFixup.cmake, Packaging.cmake).
step "lintian"
lintian --fail-on error --display-info --tag-display-limit 0 "$tmp"/pkgs/*.deb >"$tmp/lintian.log" 2>&1 ||
    { cat "$tmp/lintian.log" >&2; fail "lintian reports errors"; }
grep -v 'root privileges' "$tmp/lintian.log" || true
for tag in binary-has-unneeded-section maintscript-calls-ldconfig no-symbols-control-file; do
    grep -q " $tag" "$tmp/lintian.log" && fail "lintian: $tag"
done
if grep -q '^MINFER_HARDENING:BOOL=ON' "$build/CMakeCache.txt" && command -v dpkg-buildflags >/dev/null &&
    ! grep -q '^CMAKE_C_FLAGS:.*sanitize' "$build/CMakeCache.txt" &&
    grep -Eq '^CMAKE_BUILD_TYPE:STRING=(Release|RelWithDebInfo|MinSizeRel)$' "$build/CMakeCache.txt"; then
    grep -q ' hardening-' "$tmp/lintian.log" && fail "lintian: $(grep ' hardening-' "$tmp/lintian.log" | head -3)"
fi

# The symbols file lists exactly what libminfer.so.0 exports.
mkdir -p "$tmp/symcheck"
dpkg-deb -x "$(deb_of libminfer0)" "$tmp/symcheck"
dpkg-deb -e "$(deb_of libminfer0)" "$tmp/symcheck/DEBIAN"
lib=$(find "$tmp/symcheck" -name 'libminfer.so.0.*' | head -1)
[[ -f $tmp/symcheck/DEBIAN/symbols ]] || fail "libminfer0 has no DEBIAN/symbols"
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" || $2 == "D" || $2 == "B" || $2 == "R" {print $3}' | sort)
listed=$(awk '/^ /{sub(/@.*/, "", $1); print $1}' "$tmp/symcheck/DEBIAN/symbols" | sort)
missing=$(comm -23 <(echo "$exported") <(echo "$listed"))
extra=$(comm -13 <(echo "$exported") <(echo "$listed"))
[[ -z $missing ]] || fail "cmake/libminfer0.symbols lacks exported symbol(s) (add ' NAME@Base VERSION'): $missing"
[[ -z $extra ]] || fail "cmake/libminfer0.symbols lists symbol(s) libminfer.so.0 does not export: $extra"
rm -rf "$tmp/symcheck"
echo "symbols: $(wc -l <<<"$listed") exported functions, all in DEBIAN/symbols"

# ---- 2. install into a fresh root and use it --------------------------------------
step "install into $root"
mkdir -p "$root"
for deb in "$tmp"/pkgs/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
minfer=$root/usr/bin/minfer
[[ -x $minfer ]] || fail "no usr/bin/minfer in the installed tree"
provdir=$(dirname "$(find "$root/usr" -name libminfer_provider_cpu.so)")
libdir=$(dirname "$provdir")
libdir=$(dirname "$libdir") # <libdir>/minfer/providers -> <libdir>
[[ $libdir == "$root/usr/lib/$triplet" ]] || fail "libdir $libdir is not usr/lib/$triplet"

# No RPATH or RUNPATH in any installed ELF file (lintian's
# custom-library-search-path; providers are found by libminfer itself).
while read -r f; do
    if readelf -h "$f" >/dev/null 2>&1; then
        grep -qE '\((RPATH|RUNPATH)\)' <<<"$(readelf -d "$f")" &&
            fail "${f#"$root"/} carries an RPATH/RUNPATH: $(readelf -d "$f" | grep -E 'R(UN)?PATH')"
    fi
done < <(find "$root" -type f)
# The multiarch libdir is on ld.so's path on this system, so the installed
# tool finds libminfer.so.0 there without one.
if compgen -G '/etc/ld.so.conf.d/*.conf' >/dev/null; then
    grep -qx "/usr/lib/$triplet" /etc/ld.so.conf.d/*.conf ||
        fail "/usr/lib/$triplet is not in /etc/ld.so.conf.d"
fi
export LD_LIBRARY_PATH=$libdir

# The docs' relative links to pages and pictures resolve in the installed
# docs (links into the source tree, such as ../include/..., are for readers
# of the source).
docdir=$root/usr/share/doc/libminfer-dev
while read -r md; do
    while read -r link; do
        [[ -e $(dirname "$md")/$link ]] || fail "${md#"$docdir"/} links to $link, not installed"
    done < <(grep -oE '\]\([^):#]+\.(md|svg|png)\)' "$md" | sed 's/^](//; s/)$//' | grep -v '^/')
done < <(find "$docdir" -name '*.md')
[[ -f $docdir/docs/img/tiny_encoder.svg ]] || fail "libminfer-dev's docs lack docs/img/tiny_encoder.svg"

# ---- 1b. man pages and bash completion (minfer-tools) -----------------------------
step "man pages and bash completion"
commands=$("$minfer" --help | awk '/^commands:/ {c = 1; next} c && /^[^ ]/ {exit} c && NF {print $1}')
[[ -n $commands ]] || fail "'minfer --help' lists no commands"
tools_files=$(files_of "$(deb_of minfer-tools)")
for page in minfer $(sed 's/^/minfer-/' <<<"$commands"); do
    grep -qx "usr/share/man/man1/$page.1.gz" <<<"$tools_files" ||
        fail "minfer-tools lacks the man page $page.1.gz (was help2man found at configure time? tools/install-deps.sh)"
    rendered=$(MANWIDTH=80 man -l --warnings "$root/usr/share/man/man1/$page.1.gz" 2>"$tmp/man.err") ||
        fail "man -l $page.1.gz failed: $(cat "$tmp/man.err")"
    [[ ! -s $tmp/man.err ]] || fail "man -l $page.1.gz warns: $(cat "$tmp/man.err")"
    grep -q "^NAME" <<<"$rendered" && grep -qE "^ *$page +- " <<<"$rendered" ||
        { echo "$rendered" >&2; fail "$page(1) has no NAME line for $page"; }
    [[ $page == minfer ]] || grep -q -- "--help" <<<"$rendered" || fail "$page(1) shows no options"
done
echo "man pages: minfer $(tr '\n' ' ' <<<"$commands")"
comp=$root/usr/share/bash-completion/completions/minfer
[[ -f $comp ]] || fail "minfer-tools lacks usr/share/bash-completion/completions/minfer"
# complete_line WORD...: what the completion offers for the last word, one
# a line, each written apart (bash's printf flushes each line to a pipe):
# take it whole before grepping, never `complete_line ... | grep -q`, which
# under pipefail failed when grep had exited at --providers before
# --profile was written (SIGPIPE, exit 141; about 1 run in 20).
complete_line() {
    PATH=$root/usr/bin:$PATH bash -c 'source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _minfer; printf "%s\n" "${COMPREPLY[@]}"' \
        _ "$comp" "$@"
}
grep -q -- '-F _minfer minfer$' <<<"$(bash -c 'source "$1"; complete -p minfer' _ "$comp")" ||
    fail "the completion does not register _minfer for minfer"
[[ $(complete_line minfer "" | sort) == $(sort <<<"$commands") ]] ||
    fail "'minfer <TAB>' offers '$(complete_line minfer "" | tr '\n' ' ')', want the commands"
[[ $(complete_line minfer ru) == run ]] || fail "'minfer ru<TAB>' does not complete to run"
grep -qx -- --providers <<<"$(complete_line minfer run --pro)" || fail "'minfer run --pro<TAB>' does not offer --providers"
grep -qx cpu <<<"$(complete_line minfer info --providers "")" || fail "'minfer info --providers <TAB>' does not offer cpu"
grep -qx 3 <<<"$(complete_line minfer bench --opt-level "")" || fail "'--opt-level <TAB>' does not offer 0-3"

# providers_ok MINFER NAME: NAME is listed, from the given tree, and loads.
providers_ok() {
    local out
    out=$("$1" providers) || fail "'minfer providers' failed"
    awk -v n="$2" -v d="$3" '$1 == n && $4 == "yes" && index($5, d) == 1 {f = 1} END {exit !f}' \
        <<<"$out" || { echo "$out" >&2; fail "'minfer providers' does not show $2 loading from $3"; }
}

step "minfer providers"
out=$("$minfer" providers) || fail "'minfer providers' failed"
echo "$out"
first_dir=$(sed -n '2s/^ *//p' <<<"$out")
[[ $(realpath "$first_dir") == $(realpath "$provdir") ]] ||
    fail "search path starts at $first_dir, not the installed $provdir"
grep -qF "$build/providers" <<<"$out" && fail "the installed CLI searches the build tree"
for p in "${built_providers[@]}"; do
    if [[ $p == cpu ]]; then
        providers_ok "$minfer" cpu "$(realpath "$provdir")"
    else
        awk -v n="$p" '$1 == n {f = 1} END {exit !f}' <<<"$out" ||
            fail "'minfer providers' does not list $p"
    fi
done

step "models"
"$minfer" test --rtol 1e-3 --atol 1e-4 --providers cpu "$model" >"$tmp/t.log" 2>&1 ||
    { cat "$tmp/t.log" >&2; fail "resnet18 on cpu from the installed tree"; }
for p in "${others[@]}"; do
    # A provider that cannot initialise here (no device) is skipped with a
    # warning and the model still runs on cpu; one that loads must be used.
    "$minfer" test --rtol 1e-3 --atol 1e-4 --providers "$p,cpu" "$model" >"$tmp/t.log" 2>&1 ||
        { cat "$tmp/t.log" >&2; fail "resnet18 with --providers $p,cpu"; }
    info=$("$minfer" info --providers "$p,cpu" "$model/model.onnx" 2>&1) ||
        { echo "$info" >&2; fail "minfer info with --providers $p,cpu"; }
    if awk -v n="$p" '$1 == n && $4 == "yes" {f = 1} END {exit !f}' <<<"$out"; then
        grep -q "^providers loaded.*$p" <<<"$info" || { echo "$info" >&2; fail "$p did not load"; }
        echo "$p,cpu: $(grep '^providers loaded' <<<"$info"); resnet18 matches its reference"
    else
        echo "$p,cpu: $p does not initialise here; resnet18 ran on cpu"
    fi
done

step "plugins"
# Found in the root's <libdir>/minfer/plugins with no environment set, and
# used for a model with a com.example op without being named.
out=$("$minfer" plugins) || fail "'minfer plugins' failed"
echo "$out"
grep -qF "$build/plugins" <<<"$out" && fail "the installed CLI searches the build tree's plugins"
for p in "${plugins[@]}"; do
    awk -v n="$p" -v d="$(realpath "$libdir")/minfer/plugins/" \
        '$1 == n && $3 == "yes" && index($4, d) == 1 {f = 1} END {exit !f}' <<<"$out" ||
        fail "'minfer plugins' does not show $p loading from the installed root"
done
if [[ " ${plugins[*]} " == *" example "* ]]; then
    python3 "$src/tests/plugins/make_swish_model.py" "$tmp/swish.onnx" 1.5
    info=$("$minfer" info "$tmp/swish.onnx" 2>&1) || { echo "$info" >&2; fail "minfer info on a Swish model"; }
    grep -Eq "swish.*plugin" <<<"$info" || { echo "$info" >&2; fail "the Swish node is not on provider plugin"; }
    "$minfer" run "$tmp/swish.onnx" --dim N=2 >/dev/null ||
        fail "the installed example plugin does not run the Swish model with no environment set"
fi

# ---- 3. the provider template ----------------------------------------------------
step "provider template against the installed dev files"
tpl=$root/usr/share/minfer/provider-template
for f in CMakeLists.txt example.c; do
    cmp -s "$src/providers/template/$f" "$tpl/$f" || fail "installed template's $f differs from providers/template"
done
"$cmake" -S "$tpl" -B "$tmp/tpl" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_BUILD_TYPE=Release \
    >"$tmp/tpl.log" 2>&1 && "$cmake" --build "$tmp/tpl" >>"$tmp/tpl.log" 2>&1 ||
    { cat "$tmp/tpl.log" >&2; fail "the template does not build against the installed files"; }
[[ -f $tmp/tpl/libminfer_provider_example.so ]] || fail "template built no libminfer_provider_example.so"
grep -q '^  example ' <<<"$("$minfer" providers)" && fail "example listed without MINFER_PROVIDER_PATH"
MINFER_PROVIDER_PATH=$tmp/tpl providers_ok "$minfer" example "$tmp/tpl"

# ---- 4. pkg-config and find_package build the README example ---------------------
step "README example via pkg-config and find_package"

export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs minfer) || fail "pkg-config does not find minfer.pc"
echo "pkg-config: $flags"
pc_libdir=$(pkg-config --variable=libdir minfer)
[[ $(realpath "$pc_libdir") == $(realpath "$libdir") ]] || fail "minfer.pc's libdir $pc_libdir is not $libdir"
# shellcheck disable=SC2086
cc -std=c11 -Wall -o "$tmp/example_pc" "$tmp/example.c" $flags || fail "the README example does not build with pkg-config"
(cd "$tmp/run" && LD_LIBRARY_PATH=$pc_libdir "$tmp/example_pc" >"$tmp/ex.log" 2>&1) ||
    { cat "$tmp/ex.log" >&2; fail "the pkg-config build of the README example fails to run"; }
grep -q '^first score' "$tmp/ex.log" || fail "the README example printed no score"

"$cmake" -S "$src/tests/packaging" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$root/usr" \
    -DREADME_EXAMPLE="$tmp/example.c" -DEXPECT_PROVIDER_DIR="$provdir" \
    -DEXPECT_INCLUDE_DIR="$root/usr/include" >"$tmp/fp.log" 2>&1 &&
    "$cmake" --build "$tmp/consumer" >>"$tmp/fp.log" 2>&1 ||
    { cat "$tmp/fp.log" >&2; fail "find_package(minfer) does not build the README example"; }
(cd "$tmp/run" && "$tmp/consumer/readme_example" >"$tmp/ex.log" 2>&1) ||
    { cat "$tmp/ex.log" >&2; fail "the find_package build of the README example fails to run"; }
grep -q '^first score' "$tmp/ex.log" || fail "the README example printed no score"
# The template provider, loaded by the installed library into a program built
# with find_package, runs the Relu and gets it right.
MINFER_PROVIDER_PATH=$tmp/tpl "$tmp/consumer/relu_check" example,cpu example ||
    fail "the installed runtime did not run Relu on the template provider"
unset PKG_CONFIG_PATH

# ---- 5. move the whole install -----------------------------------------------------
step "moved install"
mv "$root" "$tmp/moved"
root=$tmp/moved
minfer=$root/usr/bin/minfer
provdir=${provdir/$tmp\/root/$root}
export LD_LIBRARY_PATH=${libdir/$tmp\/root/$root}
providers_ok "$minfer" cpu "$(realpath "$provdir")"
"$minfer" run "$model/model.onnx" --providers cpu --inputs "$model/test_data_set_0" >/dev/null ||
    fail "the moved install does not run the model"
PKG_CONFIG_PATH=${libdir/$tmp\/root/$root}/pkgconfig pkg-config --cflags minfer | grep -qF "$root" ||
    fail "minfer.pc does not follow the moved install"

# ---- 6. remove a provider package ----------------------------------------------------
step "remove a provider package"
gone=
for p in opencl "${others[@]}"; do
    deb=$(deb_of "minfer-provider-${p//_/-}") || continue
    gone=$p
    while read -r f; do rm -f "$root/$f"; done < <(files_of "$deb")
    break
done
out=$("$minfer" providers)
if [[ -n $gone ]]; then
    awk -v n="$gone" '$1 == n {f = 1} END {exit !f}' <<<"$out" &&
        { echo "$out" >&2; fail "'minfer providers' still lists $gone after its package was removed"; }
    echo "removed minfer-provider-$gone; no longer listed"
else
    echo "no provider package besides cpu was built; checking opencl,cpu without one"
fi
awk '$1 == "opencl" {f = 1} END {exit !f}' <<<"$out" && fail "opencl listed with no opencl package installed"
MINFER_PROVIDERS=opencl,cpu "$minfer" run "$model/model.onnx" --inputs "$model/test_data_set_0" \
    --outputs "$tmp/o" >"$tmp/run.log" 2>&1 ||
    { cat "$tmp/run.log" >&2; fail "MINFER_PROVIDERS=opencl,cpu does not run without the opencl package"; }
grep -q "warn.*opencl" "$tmp/run.log" || { cat "$tmp/run.log" >&2; fail "no warning about opencl"; }
echo "MINFER_PROVIDERS=opencl,cpu: $(grep -m1 'warn.*opencl' "$tmp/run.log")"
[[ -f $tmp/o/output_0.pb ]] || fail "the run wrote no output"

# ---- 7. libminfer0 alone: the CLI says once that the naive provider runs it all ------
step "libminfer0 without a fast provider"
for p in "${others[@]}"; do
    deb=$(deb_of "minfer-provider-${p//_/-}") || continue
    while read -r f; do rm -f "$root/$f"; done < <(files_of "$deb")
done
"$minfer" run "$model/model.onnx" --inputs "$model/test_data_set_0" >/dev/null 2>"$tmp/alone.log" ||
    { cat "$tmp/alone.log" >&2; fail "libminfer0 alone does not run the model"; }
[[ $(grep -c "note: the naive reference provider 'cpu' runs the whole model" "$tmp/alone.log") == 1 ]] ||
    { cat "$tmp/alone.log" >&2; fail "no single note that the reference provider runs everything"; }
grep -q "minfer-provider-onednn" "$tmp/alone.log" || fail "the note does not name minfer-provider-onednn"
"$minfer" run "$model/model.onnx" --providers cpu --inputs "$model/test_data_set_0" >/dev/null 2>"$tmp/alone.log"
grep -q "note: " "$tmp/alone.log" && fail "a note for --providers cpu, which asked for it: $(cat "$tmp/alone.log")"
echo "libminfer0 alone: $(grep -c . "$tmp/alone.log") lines on stderr with --providers cpu, one note without"

echo "packaging: all checks passed"
