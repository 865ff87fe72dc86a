#!/usr/bin/env bash
# CUDA against Vulkan on the GPU machine (issue 31): the same demo:mlp on cuda and on vulkan, profiled, then
# `gputop compare` of the two sessions: per-kernel ratios to be checked against each side's own kernel table.
#   carry: .whl .whl-cuda .gl .device     then:  bash bench/gpu/compare_backends.sh
# Results: $OUT/compare_backends/.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
D=.device/perturb
results_folder compare_backends
inputs() { for i in "$D/$1"_in*.npy; do printf -- '--input @%s ' "$i"; done; }
for device in cuda vulkan; do
  # shellcheck disable=SC2046
  timeout 120 python3 -m gputop.tui run "$D/mlp_$device.vmfb" --device "$device" --function mlp $(inputs mlp) \
    -n 300 --profile --profile-calls 20 --session-dir "$OUT_DIR/$device" --json "$OUT_DIR/$device.json" \
    > "$OUT_DIR/$device.txt" 2>&1 || echo "run on $device failed: $(tail -1 "$OUT_DIR/$device.txt")"
done
python3 -m gputop.tui compare "$OUT_DIR/cuda" "$OUT_DIR/vulkan" --json "$OUT_DIR/compare.json" \
  > "$OUT_DIR/compare.txt" 2>&1; echo "compare exit $?" >> "$OUT_DIR/compare.txt"
cat "$OUT_DIR/compare.txt"
grep -A6 "kernel" "$OUT_DIR/cuda.txt" | head -8
grep -A6 "kernel" "$OUT_DIR/vulkan.txt" | head -8
rm -rf "$OUT_DIR/cuda" "$OUT_DIR/vulkan"  # the sessions' folders: the JSON reports and the text stay
