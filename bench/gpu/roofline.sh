#!/usr/bin/env bash
# The roofline on the H200 (issue 19; about 3 minutes): FLOPs and bytes per dispatch against Nsight Compute,
# the clock warning reproduced on purpose, and the roofline tables of demo:mlp, demo:conv and the
# light ResNet-50 on CUDA and Vulkan with the clocks of each pass. Results: $OUT/roofline/.
#
# Needs: .device/roofline/ from `python bench/prepare_roofline_bundle.py` (compiled on the CPU machine:
# .vmfb + .work.json + manifest.json, under 1 MiB), the gputop wheels, IREE's runtime tools,
# ncu on PATH, and the Vulkan loader set up (VK_DRIVER_FILES). Run from the repository root.
set -u
cd "$(dirname "$0")/../.."
OUT_DIR="${OUT:-/tmp/out}/roofline"
# Overridable only to dry-run the script's logic elsewhere (a CPU bundle on local-task and lavapipe).
BUNDLE=${ROOFLINE_BUNDLE:-.device/roofline}
CUDA=${ROOFLINE_CUDA:-cuda}
VULKAN=${ROOFLINE_VULKAN:-vulkan}
IDLE_S=${ROOFLINE_IDLE_S:-12}
mkdir -p "$OUT_DIR"
export GPUTOP_STATE_DIR="$(mktemp -d)" GPUTOP_CACHE_DIR="$(mktemp -d)"
PY=${PYTHON:-python3}
log() { echo "[roofline $(date +%T)] $*" | tee -a "$OUT_DIR/log.txt"; }
smi() { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,pstate,power.draw \
          --format=csv >> "$OUT_DIR/nvidia-smi.csv" 2>&1; }
inputs() { $PY -c "import json,sys; m=json.load(open('$BUNDLE/manifest.json'))['$1']; print(' '.join('--input='+i for i in m['inputs']))"; }
function_of() { $PY -c "import json; print(json.load(open('$BUNDLE/manifest.json'))['$1']['function'])"; }
gputop_run() {  # NAME VMFB DEVICE EXTRA...: a profiled run, its report as NAME.json
  local name=$1 vmfb=$2 device=$3; shift 3
  timeout 90 $PY -m gputop.tui run "$BUNDLE/$vmfb" --device "$device" --json "$OUT_DIR/$name.json" "$@" \
    > "$OUT_DIR/$name.txt" 2>&1 || log "$name failed (exit $?): $(tail -1 "$OUT_DIR/$name.txt")"
}
[ -f "$BUNDLE/manifest.json" ] || { echo "no $BUNDLE/manifest.json: run bench/prepare_roofline_bundle.py first" >&2; exit 2; }
RUN_MODULE=$($PY -c "from gputop.core.profiling.ireeprof.tools import runtime_tool; print(runtime_tool('iree-run-module'))")
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
smi

# 1. The clock warning on purpose: a pass right after idle (no warm-up), then one after a warm-up.
for device in vulkan cuda; do
  target=$([ "$device" = cuda ] && echo "$CUDA" || echo "$VULKAN")
  log "idle $IDLE_S s, so the SM clock falls back (PLATFORM.md: 345 MHz idle)"
  sleep "$IDLE_S"
  smi
  log "$device: cold pass (--warmup 0)"
  gputop_run "clock_cold_$device" "mlp_$device.vmfb" "$target" -n 10 --profile --warmup 0
  log "$device: warm pass (--warmup 3)"
  gputop_run "clock_warm_$device" "mlp_$device.vmfb" "$target" -n 10 --profile --warmup 3
  smi
  $PY bench/clock_repro.py "$OUT_DIR/clock_cold_$device.json" "$OUT_DIR/clock_warm_$device.json" \
    --json "$OUT_DIR/clock_repro_$device.json" | tee -a "$OUT_DIR/log.txt"
done

# 2. FLOPs and bytes against Nsight Compute's counters (caches flushed before each kernel).
METRICS=smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum
METRICS=$METRICS,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,dram__bytes_read.sum,dram__bytes_write.sum
for model in mlp conv; do
  log "ncu: $model (cuda)"
  # shellcheck disable=SC2046
  timeout 120 ncu --metrics "$METRICS" --cache-control all --print-units base --csv \
    "$RUN_MODULE" --device=cuda --module="$BUNDLE/${model}_cuda.vmfb" --function="$(function_of "${model}_cuda.vmfb")" \
    $(inputs "${model}_cuda.vmfb") --output_max_element_count=0 > "$OUT_DIR/ncu_$model.csv" 2> "$OUT_DIR/ncu_$model.err" \
    || log "ncu $model failed: $(tail -2 "$OUT_DIR/ncu_$model.err")"
  $PY bench/work_truth.py "$OUT_DIR/ncu_$model.csv" --work "$BUNDLE/${model}_cuda.work.json" \
    --json "$OUT_DIR/work_truth_$model.json" | tee -a "$OUT_DIR/log.txt"
done

# 3. Roofline tables: each model on CUDA and Vulkan, warmed up, with the pass's clocks.
for model in mlp conv resnet50; do
  for device in cuda vulkan; do
    target=$([ "$device" = cuda ] && echo "$CUDA" || echo "$VULKAN")
    log "roofline: $model on $device"
    extra=()
    [ "$model" = resnet50 ] && extra=(--input "@$BUNDLE/resnet50_in0.npy")  # the imported model declares no inputs
    gputop_run "roofline_${model}_$device" "${model}_$device.vmfb" "$target" -n 20 --profile --warmup 2 ${extra[@]+"${extra[@]}"}
  done
done
smi
$PY bench/roofline_table.py "$OUT_DIR"/roofline_*.json --top 12 --markdown "$OUT_DIR/roofline.md" \
  --json "$OUT_DIR/roofline.json" > /dev/null

# 4. The Kernels pane and the roofline view from the real app, on the H200.
log "screenshots"
timeout 90 $PY scripts/screenshots.py "$OUT_DIR/gputop-kernels-h200.svg" --target "$BUNDLE/resnet50_cuda.vmfb" \
  --input "@$BUNDLE/resnet50_in0.npy" --device "$CUDA" --calls 30 --profile > "$OUT_DIR/screenshots.txt" 2>&1 || log "kernels screenshot failed"
timeout 90 $PY scripts/screenshots.py "$OUT_DIR/gputop-roofline-h200.svg" --target "$BUNDLE/mlp_cuda.vmfb" \
  --device "$CUDA" --calls 30 --profile --roofline >> "$OUT_DIR/screenshots.txt" 2>&1 || log "roofline screenshot failed"
log "done"
