#!/usr/bin/env bash
# Neighbours on the GPU machine (issue 34): a second process busy on the same GPU must be listed (pid, memory, SM%)
# and flag a profile pass; nvidia-smi is the second source. A busy `gputop run` of demo:mlp on cuda:0 runs in the
# background while (1) `gputop run` of the two-matmul module profiles, (2) the real app is screenshot on it, (3)
# tests/test_neighbours.py runs its GPU test; then the same run alone, which must not be flagged.
#   carry: .whl .whl-cuda .gl .device     then:  bash bench/gpu/neighbours.sh
# Needs .device/perturb/ (compiled on the CPU machine). Results: $OUT/neighbours/.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
D=.device/perturb
results_folder neighbours
ins() { for i in "$D/$1"_in*.npy; do printf -- '--input @%s ' "$i"; done; }
log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
# shellcheck disable=SC2046
# python3 itself, not the `gputop` shell function: $! must be the process that holds the GPU, so the kill ends it
python3 -m gputop.tui run "$D/mlp_cuda.vmfb" --device cuda --function mlp $(ins mlp) -n 100000000 --quiet \
  --session-dir "$OUT_DIR/busy-neighbour" > /dev/null 2>&1 &
NEIGHBOUR=$!
sleep 15
log "neighbour pid $NEIGHBOUR; nvidia-smi sees:"
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv | tee -a "$OUT_DIR/log.txt"
nvidia-smi pmon -c 3 -s um 2>&1 | tee -a "$OUT_DIR/log.txt"
# shellcheck disable=SC2046
timeout 200 python3 -m gputop.tui run "$D/mm2_cuda.vmfb" --device cuda --function mm2 $(ins mm2) -n 2000 --profile \
  --json "$OUT_DIR/shared.json" > "$OUT_DIR/shared.txt" 2>&1; log "shared run exit $?"
grep -E "^(others|pass|WARNING)" "$OUT_DIR/shared.txt" | tee -a "$OUT_DIR/log.txt"
# shellcheck disable=SC2046
timeout 200 python3 scripts/screenshots.py screenshots/gputop-neighbours-gpu.svg --engine-process --target "$D/mm2_cuda.vmfb" \
  --device cuda $(ins mm2) --calls 200 --profile > "$OUT_DIR/screenshot.txt" 2>&1; log "screenshot exit $?"
cp screenshots/gputop-neighbours-gpu.svg "$OUT_DIR/gputop-neighbours-$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -oiE "h100|h200" | tr A-Z a-z).svg" 2>/dev/null
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_neighbours.py -k second_process \
  > "$OUT_DIR/pytest.txt" 2>&1; log "pytest exit $? ($(tail -1 "$OUT_DIR/pytest.txt"))"
kill "$NEIGHBOUR"; wait "$NEIGHBOUR" 2>/dev/null
sleep 3
log "neighbour ended; nvidia-smi sees: $(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ' ')"
# shellcheck disable=SC2046
timeout 200 python3 -m gputop.tui run "$D/mm2_cuda.vmfb" --device cuda --function mm2 $(ins mm2) -n 2000 --profile \
  --json "$OUT_DIR/alone.json" > "$OUT_DIR/alone.txt" 2>&1; log "alone run exit $?"
grep -E "^(others|pass|WARNING)" "$OUT_DIR/alone.txt" | tee -a "$OUT_DIR/log.txt"
