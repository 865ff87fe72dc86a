#!/usr/bin/env bash
# Issue 57 item 7 on the GPU (about 3 minutes): calls that fall into groups at one SM clock, and what gputop says
# parts them. CUDA, 20000 calls of the ResNet-20 headless (2026-11-27 on an H200: 94%/6% at 1980 vs 1980 MHz);
# the same with a neighbour on the GPU for its middle seconds (a second gputop run on the device, started 3 s in:
# its groups may then differ by `other processes on the GPU 0 vs 1`); Vulkan, 6000 calls (the clock falls from
# 1980 to 345 MHz: the clock parts those groups). Each run's `groups` line and its `calls.modes` (with the new
# host_other_cores, gpu_others, stretches) go to $OUT/groups_cause/. Results packed by bench/gpu/pack.sh.
#
# Needs: .device/layers/ (bench/prepare_layers_bundle.py). Carry .whl .whl-cuda .gl .device/layers, then:
# bash bench/gpu/groups_cause.sh && bash bench/gpu/pack.sh
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh > /dev/null
results_folder groups_cause
B=${LAYERS_BUNDLE:-.device/layers}
log "start; $(gpu_host)"
one_run() {  # NAME DEVICE CALLS: a headless run, its groups line and its calls.modes
  timeout 200 python3 -m gputop.tui run "$B/cnn_$2.vmfb" --device "$2" -n "$3" --input "@$B/cnn_x.npy" \
    --json "$OUT_DIR/$1.json" > "$OUT_DIR/$1.txt" 2>&1
  log "$1: exit $?; $(grep -E '^(calls|groups|others)' "$OUT_DIR/$1.txt" | tr '\n' ' ')"
  python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))['calls']['modes'], indent=1))" \
    "$OUT_DIR/$1.json" >> "$OUT_DIR/log.txt" 2>&1
}
one_run cuda_alone cuda 20000
log "cuda with a neighbour: a second run on the GPU from 3 s in"
(sleep 3; timeout 60 python3 -m gputop.tui run "$B/cnn_cuda.vmfb" --device cuda -n 8000 --input "@$B/cnn_x.npy" \
  -q > "$OUT_DIR/neighbour.txt" 2>&1) &
NEIGHBOUR=$!
one_run cuda_neighbour cuda 20000
wait $NEIGHBOUR
one_run vulkan_alone vulkan 6000
log "done"
