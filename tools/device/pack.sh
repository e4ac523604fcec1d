#!/usr/bin/env bash
# Packs what the device machine (an NVIDIA H100/H200 with 16 cores, Ubuntu
# 24.04, no package registry) needs to run minfer: a Release install, the
# Debian libraries it links, the test binaries of the OpenCL provider, and
# test cases whose large weights are emptied (strip.py; regen.py refills
# them there with seeded values of the same mean and spread, and writes
# ONNX Runtime's outputs as the reference). About 13 MB.
#
# usage: tools/device/pack.sh [CASE_DIR...]   (run from the repository root)
# then:  device run, carry [".dev"], command "bash .dev/gpu.sh"
#        (ONLY=SECTIONS runs only bench.py's sections, e.g. ONLY=final)
set -euo pipefail
root=$PWD
grep -qx "/.dev/" .git/info/exclude || echo "/.dev/" >>.git/info/exclude
# the corpus (tests/zoo/zoo.py build): $MINFER_ZOO, else a cached build that has it all
zoo=${MINFER_ZOO:-}
for d in ~/.cache/minfer-zoo/*/; do
    [[ -n $zoo || ! -f $d/gpt2_decoder_op13/zoo.json ]] || zoo=$d
done
cases=("$@")
((${#cases[@]})) || cases=(../shared/models/{squeezenet1_1,mobilenet_v2,resnet18,tiny_encoder}
    "$zoo"/{googlenet,inception_v3,densenet121,gpt2_decoder,llama_decoder,efficientnet_b0}_op13
    "$zoo"/{deeplabv3_mobilenet_v3,t5_encoder,regnet_y_400mf}_op13 "$zoo"/vit_s16_op17)
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=Release -DMINFER_WERROR=ON >/dev/null
cmake --build build-dev -j"$(nproc)" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install build-dev --prefix "$tmp/inst" >/dev/null
rm -rf "$tmp/inst/share" "$tmp/inst/include" "$tmp/inst/lib/python3"
mkdir -p "$tmp/lib" "$tmp/tests" "$tmp/m"
for l in libdnnl.so.2 libgomp.so.1 libclblast.so.1 libOpenCL.so.1 libprotobuf-c.so.1 \
    libxxhash.so.0 libjansson.so.4 libcmocka.so.0; do
    cp -L "$(ldconfig -p | awk -v l=$l '$1 == l { print $NF; exit }')" "$tmp/lib/"
done
cp build-dev/tests/test_opencl build-dev/tests/test_opencl_fused build-dev/tests/test_opencl_device "$tmp/tests/"
for c in "${cases[@]}"; do
    /usr/bin/python3 tools/device/strip.py "$c" "$tmp/m/$(basename "$c")"
done
mkdir -p .dev
cp tools/device/{gpu.sh,regen.py,bench.py} .dev/
(cd "$tmp" && tar -cf - inst lib tests m) | xz -T0 -6 >.dev/payload.tar.xz
ls -la .dev/payload.tar.xz
