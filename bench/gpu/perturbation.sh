#!/usr/bin/env bash
# Perturbation on the GPU machine (issue 27): does the TUI change what it measures? bench/perturbation.py runs each
# module headless, in the TUI (a real pseudo-terminal, its engine in its own process) and served + attached, in
# alternating rounds, with one profile pass per way (the call breakdowns compared); then bench/run_overhead.py puts
# headless `gputop run` beside iree-benchmark-module on CUDA (p50 and p95).
#   carry: .whl .whl-cuda .gl .device     then:  bash bench/gpu/perturbation.sh PART
# PART: mm2 (the two-matmul module, cuda then vulkan), mlp (demo:mlp, cuda then vulkan), cuda or vulkan (both
# modules on one device), DEVICE-MODULE
# (one device alone, e.g. vulkan-mlp, for more rounds), tool (run_overhead).
# Needs .device/perturb/ (compiled on the CPU machine; see its README.txt). Results: $OUT/perturbation-PART/.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
PART=${1:-mm2}
SECONDS_STEADY=${PERTURBATION_SECONDS:-10}
ROUNDS=${PERTURBATION_ROUNDS:-2}
PROFILE=${PERTURBATION_PROFILE---profile}  # PERTURBATION_PROFILE= (empty): no profile pass in any way
PASS_CALLS=${PERTURBATION_PASS_CALLS:-10}  # calls in each way's profile pass (the TUI's p default is 10)
PASSES=${PERTURBATION_PASSES:-1}  # profile passes per way and round, pooled when the breakdowns are compared
WAYS=${PERTURBATION_WAYS:-headless,tui,served}  # which faces run (bench/perturbation.py --ways)
D=.device/perturb
results_folder "perturbation-$PART" perturbation
log "start $PART; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader)"
inputs() { for i in "$D/$1"_in*.npy; do printf -- '--input @%s ' "$i"; done; }
perturb() {  # MODULE DEVICE
  local module=$1 device=$2
  # shellcheck disable=SC2046
  timeout "${PERTURBATION_TIMEOUT:-290}" python3 bench/perturbation.py --target "$D/${module}_${device}.vmfb" --device "$device" \
    --function "$module" $(inputs "$module") --seconds "$SECONDS_STEADY" --warmup 2 --rounds "$ROUNDS" $PROFILE --profile-calls "$PASS_CALLS" --profile-passes "$PASSES" --ways "$WAYS" \
    --json "$OUT_DIR/${module}_${device}.json" > "$OUT_DIR/${module}_${device}.txt" 2>&1 \
    || log "$module $device failed (exit $?)"
  tail -8 "$OUT_DIR/${module}_${device}.txt" | tee -a "$OUT_DIR/log.txt"
}
case $PART in
  mm2|mlp)
    perturb "$PART" cuda
    perturb "$PART" vulkan
    ;;
  cuda|vulkan)
    perturb mm2 "$PART"
    perturb mlp "$PART"
    ;;
  vulkan-*|cuda-*)
    perturb "${PART#*-}" "${PART%%-*}"
    ;;
  tool)
    for module in mm2 mlp; do
      # shellcheck disable=SC2046
      timeout 200 python3 bench/run_overhead.py --vmfb "$D/${module}_cuda.vmfb" --device cuda --function "$module" \
        $(for i in "$D/$module"_in*.npy; do printf -- '--input @%s ' "$i"; done) --iterations 300 --rounds 3 \
        --json "$OUT_DIR/run_overhead_${module}_cuda.json" > "$OUT_DIR/run_overhead_${module}_cuda.txt" 2>&1 \
        || log "run_overhead $module failed (exit $?)"
      tail -5 "$OUT_DIR/run_overhead_${module}_cuda.txt" | tee -a "$OUT_DIR/log.txt"
    done
    ;;
esac
log "done"
