#!/usr/bin/env bash
# Profile cost on the GPU machine (issue 28): what each part of a profile pass costs, and whether the pass's own
# `profile.overhead` agrees with alternating rounds (bench/profile_overhead.py), for the two-matmul module
# and demo:mlp on cuda and vulkan.
#   carry: .whl .whl-cuda .gl .device     then:  bash bench/gpu/profile_cost.sh [MODULE-DEVICE ...]
# Default: mm2-cuda mm2-vulkan mlp-cuda mlp-vulkan. Needs .device/perturb/ (compiled on the CPU machine, see its
# README.txt) and .device/common/call_marks.so (built from core/profiling/ireeprof/call_marks.c on the CPU machine: the GPU
# machine has no C compiler). Results: $OUT/profile_cost/MODULE_DEVICE.{json,txt}. PROFILE_COST_LEVEL=full measures
# full passes; the default level's second run (no dispatch timestamps) is a bench variant on Vulkan and HIP.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
D=${PROFILE_COST_BUNDLE:-.device/perturb}  # .device/roofline for the light ResNet-50 (resnet50-cuda, resnet50-vulkan)
results_folder profile_cost
log "start; $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader)"
for part in "${@:-mm2-cuda mm2-vulkan mlp-cuda mlp-vulkan}"; do
  for one in $part; do
    module=${one%%-*} device=${one#*-}
    args=()
    for i in "$D/${module}"_in*.npy; do args+=(--input "@$i"); done
    timeout "${PROFILE_COST_TIMEOUT:-280}" python3 bench/profile_overhead.py --vmfb "$D/${module}_${device}.vmfb" \
      --device "$device" --function "$module" "${args[@]}" --rounds "${PROFILE_COST_ROUNDS:-7}" \
      --calls "${PROFILE_COST_CALLS:-300}" --passes "${PROFILE_COST_PASSES:-3}" --level "${PROFILE_COST_LEVEL:-default}" --json "$OUT_DIR/${module}_${device}.json" \
      > "$OUT_DIR/${module}_${device}.txt" 2>&1 || log "$module $device failed (exit $?)"
    tail -12 "$OUT_DIR/${module}_${device}.txt" | tee -a "$OUT_DIR/log.txt"
  done
done
