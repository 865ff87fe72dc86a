#!/usr/bin/env bash
# The parameter loader against its A/B on the GPU machine (issue 32): the 16 GiB, 256-tensor archive onto cuda and
# vulkan, warm and cold, with the references measured in the same run (pinned and pageable host-to-device copies;
# with a cold cache, a plain O_DIRECT sequential read of the file) and the streamed loader's stage timings. About 4
# minutes.
#   carry: .whl .whl-cuda .gl .device/common .device/params     then:  bash bench/gpu/params_ab.sh [cuda|vulkan ...]
# Needs .device/params from `python bench/prepare_params_bundle.py .device/params --shapes 256x16
# --targets cuda,vulkan` (the head modules; the archive is written here). Results: $OUT/params_ab.tgz.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
R=/tmp/params_ab-results
ARCHIVE=$PARAMS_ARCHIVE
V=.device/params
rm -rf "$R"; mkdir -p "$R" "$(dirname "$ARCHIVE")"
say() { echo "[params_ab $(date +%T)] $*" | tee -a "$R/summary.txt"; }
say "$(gpu_host)"
say "disk: $(df -h "$(dirname "$ARCHIVE")" | tail -1)"
params_archive "$ARCHIVE" >> "$R/summary.txt" 2>&1
# Warm: the loader as it is (allocation beside the reads) and as it was (streamed_up: every buffer made before
# the first read), or the paths in PARAMS_AB_PATHS, alternating PARAMS_AB_REPEAT times, with the references; then 12
# readers instead of 8; cold (the disk's own read beside it) on the devices in PARAMS_AB_COLD (empty: none).
REPEAT=${PARAMS_AB_REPEAT:-3}
COLD=${PARAMS_AB_COLD-cuda}
PATHS=${PARAMS_AB_PATHS:-streamed,streamed_up}  # the loader, and its A/B (see bench/params.py)
for dev in "${@:-cuda vulkan}"; do
  for one in $dev; do
    common=(--timeout 120 --device "$one" --tensors 256 --gib 16 --archive "$ARCHIVE" --vmfb "$V/head_256x16g_$one.vmfb")
    timeout 240 python3 bench/params.py "${common[@]}" --paths "$PATHS" --repeat "$REPEAT" --cache warm \
      --reference --json "$R/${one}_256x16.json" >> "$R/params_$one.log" 2>&1
    say "params $one warm: exit $?"
    timeout 120 python3 bench/params.py "${common[@]}" --paths "$PATHS" --repeat "$REPEAT" --cache warm --workers 12 \
      --json "$R/${one}_256x16_w12.json" >> "$R/params_$one.log" 2>&1
    say "params $one warm, 12 readers: exit $?"
    if [[ " $COLD " == *" $one "* ]]; then
      timeout 120 python3 bench/params.py "${common[@]}" --paths streamed --cache cold \
        --json "$R/${one}_256x16_cold.json" >> "$R/params_$one.log" 2>&1
      say "params $one cold: exit $?"
    fi
    grep -h "GB/s\|stages\|reference\|direct" "$R/params_$one.log" | grep -v '^{' | tee -a "$R/summary.txt"
  done
done
tar czf "${OUT:-/tmp}/params_ab.tgz" -C "$R" .
