#!/usr/bin/env bash
# Where a CUDA pass's cost on a CNN goes (issue 57 item 5; about 3 minutes): the torch-exported ResNet-20 (26
# kernels a call), bench/profile_overhead.py's alternating rounds (nothing on, the NVML clock watch beside the
# calls, CUPTI kernel records alone, kernels + each breakdown kind, every kind = the breakdown's calls, and the
# pass's kernel-table calls), then `gputop run --profile` three times for the pass's own figures, then the GPU test.
# Needs .device/layers from bench/prepare_layers_bundle.py. Carry .whl .whl-cuda .whl-test .gl .device/layers, then:
#   bash bench/gpu/cnn_pass_floor.sh
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh > /dev/null
results_folder cnn_pass_floor
B=${LAYERS_BUNDLE:-.device/layers}
log "start; $(gpu_host)"
timeout 200 python3 bench/profile_overhead.py --vmfb "$B/cnn_cuda.vmfb" --device cuda --function main_graph \
  --input "@$B/cnn_x.npy" --rounds "${ROUNDS:-9}" --calls "${CALLS:-200}" --passes 5 --json "$OUT_DIR/bench.json" \
  > "$OUT_DIR/bench.txt" 2>&1 || log "bench failed (exit $?)"
cat "$OUT_DIR/bench.txt" | tail -16 | tee -a "$OUT_DIR/log.txt"
for i in 1 2 3; do
  timeout 120 python3 -m gputop.tui run "$B/cnn_cuda.vmfb" --device cuda -n 1000 --profile --profile-calls 200 \
    --input "@$B/cnn_x.npy" --json "$OUT_DIR/run$i.json" > "$OUT_DIR/run$i.txt" 2>&1 || log "run $i exit $?"
  grep -E "^(overhead|breakdown|kernels  )|^ +(unprofiled|profiled|p50)" "$OUT_DIR/run$i.txt" | head -8 | tee -a "$OUT_DIR/log.txt"
done
GPUTOP_TEST_CNN_CUDA=$B timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_overhead.py \
  -k kernel_records_alone -rs -s > "$OUT_DIR/pytest.txt" 2>&1
tail -4 "$OUT_DIR/pytest.txt" | tee -a "$OUT_DIR/log.txt"
