#!/usr/bin/env bash
# Issue 47 on the GPU (about 4 minutes): what the call times' groups are on Vulkan and CUDA (NVML's clocks and
# clock event reasons every 50 ms beside a long headless run; the calls kept as the session's calls.json, a real
# distribution for the mode tests), what a CUDA profile pass costs on a CNN (3 passes), and gputop run against
# iree-benchmark-module (bench/run_overhead.py, alternating rounds). Results: $OUT/clock_modes/, packed by
# bench/gpu/pack.sh.
#
# Needs: .device/layers/ (bench/prepare_layers_bundle.py: the torch-exported ResNet-20 for CUDA and Vulkan). Carry
# .whl .whl-cuda .gl .device/layers, then: bash bench/gpu/clock_modes.sh && bash bench/gpu/pack.sh
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh > /dev/null
results_folder clock_modes
B=${LAYERS_BUNDLE:-.device/layers}
log "start; $(gpu_host)"
smi_start() {  # NVML beside a run, every 50 ms: clocks, P-state, power, temperature, clock event reasons
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,nounits -lms 50 > "$OUT_DIR/$1.nvml.csv" 2>&1 &
  SMI=$!
}
for device in vulkan cuda; do
  calls=$([ "$device" = vulkan ] && echo 6000 || echo 30000)
  log "$device: idle 10 s, then $calls calls headless with NVML beside them"
  sleep 10
  smi_start "long_$device"
  timeout 200 python3 -m gputop.tui run "$B/cnn_$device.vmfb" --device "$device" -n "$calls" \
    --input "@$B/cnn_x.npy" --session-dir "$OUT_DIR/long_${device}_session" --json "$OUT_DIR/long_$device.json" \
    > "$OUT_DIR/long_$device.txt" 2>&1
  log "$device: exit $?; $(grep '^calls' "$OUT_DIR/long_$device.txt")"
  kill $SMI 2>/dev/null; wait $SMI 2>/dev/null
  cp "$OUT_DIR/long_${device}_session/calls.json" "$OUT_DIR/long_${device}_calls.json" 2>/dev/null
  rm -rf "$OUT_DIR/long_${device}_session"
done
log "cuda: the CNN's profile pass, 3 runs of 2000 calls with a pass of 200"
for round in 1 2 3; do
  timeout 120 python3 -m gputop.tui run "$B/cnn_cuda.vmfb" --device cuda -n 2000 --profile --profile-calls 200 \
    --input "@$B/cnn_x.npy" --json "$OUT_DIR/pass_cuda_$round.json" > "$OUT_DIR/pass_cuda_$round.txt" 2>&1
  log "pass $round: $(grep '^overhead' "$OUT_DIR/pass_cuda_$round.txt")"
done
log "cuda: what each CUPTI activity kind costs the CNN's calls (bench/profile_overhead.py, 7 alternating rounds)"
timeout 300 python3 bench/profile_overhead.py --vmfb "$B/cnn_cuda.vmfb" --device cuda --function main_graph \
  --input "@$B/cnn_x.npy" --calls 200 --rounds 7 --passes 3 --json "$OUT_DIR/cupti_kinds_cuda.json" \
  > "$OUT_DIR/cupti_kinds_cuda.txt" 2>&1
log "cupti kinds: exit $?"; tail -14 "$OUT_DIR/cupti_kinds_cuda.txt" | tee -a "$OUT_DIR/log.txt"
log "cuda: gputop run against iree-benchmark-module, 3 alternating rounds of 2000 calls"
timeout 300 python3 bench/run_overhead.py --vmfb "$B/cnn_cuda.vmfb" --device cuda --function main_graph \
  --input "@$B/cnn_x.npy" --iterations 2000 --rounds 3 --json "$OUT_DIR/own_share_cuda.json" \
  > "$OUT_DIR/own_share_cuda.txt" 2>&1
log "own share: exit $?"; tail -8 "$OUT_DIR/own_share_cuda.txt" | tee -a "$OUT_DIR/log.txt"
log "done"
