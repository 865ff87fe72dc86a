#!/usr/bin/env bash
# The parameter loader's staging on the H200 (issue 23, re-measured after the streamed loader's change: HOST_CACHED
# staging, slots recycled as soon as their copy lands): the 16 GiB, 256-tensor archive warm on cuda and vulkan, the
# new loader (`streamed`) beside its first version (`streamed_wc`, write-combined staging) and IREE's own paths, the
# reference copies, gputop run's report, the workers/chunk sweep and the TUI mid-load (cold page cache).
# After bench/gpu/setup.sh is sourced; needs .device/params (bench/prepare_params_bundle.py
# .device/params --shapes 256x16 --targets cuda,vulkan). Results: $OUT/params_staging/ (packed by pack.sh).
set -u
R=$OUT/params_staging
DATA=/tmp/params_staging
ARCHIVE=$DATA/model_256x16.irpa
mkdir -p "$R" "$DATA"
say() { echo "$*" | tee -a "$R/summary.txt"; }
params() { timeout "$1" python3 bench/params.py --timeout 90 "${@:2}" >> "$R/params.log" 2>&1; say "params ${*:2}: exit $?"; }
say "date: $(date -u +%FT%TZ)  $(nvidia-smi --query-gpu=name,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader)"
timeout 150 python3 - "$ARCHIVE" >> "$R/summary.txt" 2>&1 << 'PY'
import sys, time
from pathlib import Path
from gputop.core.params.archive import model_layout, write_irpa
started = time.perf_counter()
write_irpa(Path(sys.argv[1]), model_layout(256, 16 * 2**30), writers=16)
print(f"archive: 16 GiB, 256 tensors, written in {time.perf_counter() - started:.1f} s")
PY
V=.device/params
params 200 --device cuda --tensors 256 --gib 16 --archive "$ARCHIVE" --vmfb "$V/head_256x16g_cuda.vmfb" \
  --paths streamed,streamed_wc,mmap,file_async --cache warm --reference --json "$R/cuda_256x16_warm.json"
params 150 --device vulkan --tensors 256 --gib 16 --archive "$ARCHIVE" --vmfb "$V/head_256x16g_vulkan.vmfb" \
  --paths streamed,streamed_wc,file_async --cache warm --reference --json "$R/vulkan_256x16_warm.json"
for dev in cuda vulkan; do
  timeout 90 python3 -m gputop.tui run "$V/head_256x16g_$dev.vmfb" --device "$dev" --function head -n 2 \
    --params "$ARCHIVE" --json "$R/run_$dev.json" > "$R/run_$dev.txt" 2>&1
  say "gputop run $dev: exit $?; $(grep -h 'parameters loaded\|error' "$R/run_$dev.txt" | head -2)"
done
timeout 120 python3 scripts/params_screenshot.py "$R/params_cuda.svg" --device cuda --target "$V/head_256x16g_cuda.vmfb" \
  --params "$ARCHIVE" --cold --at 0.3 > "$R/screenshot.txt" 2>&1
say "screenshot: exit $?"
params 150 --device cuda --tensors 256 --gib 16 --archive "$ARCHIVE" --vmfb "$V/head_256x16g_cuda.vmfb" \
  --paths streamed --cache warm --sweep --json "$R/cuda_256x16_sweep.json"
rm -rf "$DATA"
grep -h "GB/s\|ms (" "$R/params.log" | tail -40
