#!/bin/bash
# Device-machine checks (tools/device/pack.sh packs .dev/): the OpenCL provider on a
# real GPU and the schedulers on 16 cores. Everything is logged to $OUT.
R=$PWD/.dev; W=/tmp/w; mkdir -p $W $OUT; T0=$(date +%s)
log(){ echo "=== [$(( $(date +%s)-T0 ))s] $*"; }
[ -x $W/inst/bin/minfer ] || tar -xJf $R/payload.tar.xz -C $W
export LD_LIBRARY_PATH=$W/lib:$W/inst/lib/x86_64-linux-gnu
export MINFER_PROVIDER_PATH=$W/inst/lib/x86_64-linux-gnu/minfer/providers MINFER_PROVIDERS=
NV=$(ls /usr/lib/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/local/nvidia/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
mkdir -p $W/icd; echo "$NV" > $W/icd/nvidia.icd; export OCL_ICD_VENDORS=$W/icd XDG_CACHE_HOME=$W/cache
export M=$W/inst/bin/minfer
if [ -n "$ONLY" ]; then lscpu | grep -E "^CPU\(s\)|Thread|Core|Socket|Model name|L2|L3"; [ -f $W/regen.done ] || python3 $R/regen.py $W/m > /dev/null && touch $W/regen.done; python3 $R/bench.py $W/m $((T0+${DL2:-240})) $ONLY; exit; fi
log "info: $NV"; nproc; nvidia-smi -L; $M providers
if [ ! -f $W/regen.done ]; then log regen; python3 $R/regen.py $W/m && touch $W/regen.done; fi
T="--rtol 1e-3 --atol 1e-3"
log "test opencl,cpu, one process per model"; for c in $W/m/*; do timeout 60 $M test $c --providers opencl,cpu $T 2>&1 | grep -v "^minfer warn: .*accepted node" | tail -3; done
log "test opencl,cpu, all in one process"; timeout 150 $M test $W/m --providers opencl,cpu $T
log "info squeezenet opencl,cpu pipeline"; $M --scheduler pipeline info $W/m/squeezenet1_1/model.onnx --providers opencl,cpu 2>&1 | tail -30
python3 $R/bench.py $W/m $((T0+${DL1:-200})) pipe_gpu
log "test cpu 16t"; timeout 90 $M test $W/m --providers cpu --threads 16 $T
log "test onednn,cpu 16t"; timeout 90 $M test $W/m --providers onednn,cpu --threads 16 $T
log "test onednn,cpu 16t parallel scheduler"; timeout 90 $M --scheduler parallel test $W/m --providers onednn,cpu --threads 16 $T
log "test opencl alone"; timeout 120 $M test $W/m --providers opencl $T
log "test opencl,cpu fp16 (crashes only: rtol/atol 5e-2)"; MINFER_OPENCL_FP16=1 timeout 90 $M test $W/m --providers opencl,cpu --rtol 5e-2 --atol 5e-2
for t in test_opencl_device test_opencl test_opencl_fused; do
  log "unit $t"; (cd $W && timeout 90 $W/tests/$t > $OUT/unit_$t.txt 2>&1; echo "rc=$?" >> $OUT/unit_$t.txt); tail -4 $OUT/unit_$t.txt; grep -E "FAILED|\[  ERROR" $OUT/unit_$t.txt | head -20
done
python3 $R/bench.py $W/m $((T0+${DL2:-330})) ${SECT:-gpu,sched,pipe_cpu}
log done
