#!/usr/bin/env bash
# Parameter loading paths on one H200 (issue 23): parameters at the speed of the bus, every loading path, warm
# and cold, with the bus's own figure beside them; Vulkan's limits; gputop run's progress lines; a TUI screenshot
# mid-load.
#
# Run from the repository root, after (on the CPU machine)
#   python bench/prepare_params_bundle.py .device/params --shapes 256x16,1x8,64x4,256x8,1x4 --targets cuda,vulkan
# (ten head modules, ~400 KB; 256x8 and 1x4 serve when the disk has less than 34 GiB free) and with the gputop
# wheel, IREE's runtime, a Vulkan loader (VK_DRIVER_FILES) and torch installed. The archives (16 GiB, 8 GiB,
# 4 GiB) are built HERE, on this machine's disk, and deleted at the end.
# Results: small JSON/text/SVG files under $OUT/params_paths/. Steps run most important first, each under
# `timeout`, and stop starting new ones after PARAMS_PATHS_BUDGET_S (default 300 s; no step runs longer than
# 120 s), so the whole stays under 7 minutes.
#
#  1. limits.json: Vulkan limits read through the loader (maxMemoryAllocationSize, maxBufferSize,
#     maxStorageBufferRange, heap budget), NVML free memory; disk and memory of the machine.
#  2. build the 256-tensor 16 GiB model-like archive (and the 8 GiB one-tensor and 4 GiB cold ones).
#  3. cuda, 16 GiB, warm: streamed (gputop), mmap, file_async, file_async_c8, fd + reference copies.
#  4. vulkan, 16 GiB, warm: streamed, mmap, file_async, file_async_c8 + reference copies.
#  5. gputop run on 16 GiB (cuda, vulkan): the report's parameters {bytes, seconds, gbps}.
#  6. gputop run on the cold 4 GiB archive (cuda): progress lines; TUI screenshot mid-load (cuda).
#  7. one 8 GiB parameter: cuda paths incl. host_copy; vulkan: gputop's one-line refusal (or success).
#  8. cold page cache, 4 GiB 64-tensor archive: every path on cuda and vulkan (disk-bound).
#  9. the streamed loader's workers/chunk sweep on cuda, 16 GiB warm.
# Env for a dry run on the CPU machine: PARAMS_PATHS_DEVICES="local-task vulkan" PARAMS_PATHS_TARGETS="local lavapipe"
# PARAMS_PATHS_SHAPES="64x0.5 1x0.25 32x0.25" PARAMS_PATHS_BUNDLE=DIR, PYTHON, OUT, PARAMS_PATHS_DATA (archive folder).
set -u
PY=${PYTHON:-python3}
RES=${OUT:-./out}/params_paths
BUNDLE=${PARAMS_PATHS_BUNDLE:-.device/params}
DATA=${PARAMS_PATHS_DATA:-$PWD/.params-paths-data}
BUDGET=${PARAMS_PATHS_BUDGET_S:-300}
read -r -a DEVICES <<< "${PARAMS_PATHS_DEVICES:-cuda vulkan}"
read -r -a TARGETS <<< "${PARAMS_PATHS_TARGETS:-cuda vulkan}"
read -r BIG SINGLE COLD <<< "${PARAMS_PATHS_SHAPES:-256x16 1x8 64x4}"
mkdir -p "$RES" "$DATA"
free_gib=$(df --output=avail -BG "$DATA" | tail -1 | tr -dc 0-9)
if [ -z "${PARAMS_PATHS_SHAPES:-}" ] && [ "${free_gib:-0}" -lt 34 ]; then
  BIG=256x8 SINGLE=1x4  # 28 GiB of archives do not fit: half sizes (their modules are in the bundle too)
fi
SUMMARY=$RES/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
left() { [ "$SECONDS" -lt "$BUDGET" ] || { say "skipped (budget of ${BUDGET} s spent): $*"; return 1; }; }
tensors() { echo "${1%x*}"; }
gib() { echo "${1#*x}"; }
archive() { echo "$DATA/model_$1.irpa"; }
vmfb() { echo "$BUNDLE/head_$(tensors "$1")x$(gib "$1")g_$2.vmfb"; }
params() { timeout "$1" "$PY" bench/params.py --timeout 60 "${@:2}" >> "$RES/params.log" 2>&1; say "bench/params.py ${*:2}: exit $?"; }

say "date: $(date -u +%FT%TZ)  host: $(hostname)  nproc: $(nproc)"
command -v nvidia-smi > /dev/null &&
  nvidia-smi --query-gpu=name,memory.total,memory.used,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm \
    --format=csv >> "$SUMMARY" 2>&1
{ df -h "$DATA"; free -g; } >> "$SUMMARY" 2>&1

# 1. What the devices allow.
timeout 60 "$PY" - > "$RES/limits.json" 2>> "$RES/errors.txt" << 'EOF'
import json, psutil
from gputop.core.watch import nvml
from gputop.core.records.base import to_json
out = {"host_available_bytes": psutil.virtual_memory().available}
try:
    from gputop.core.module.vulkan_limits import vulkan_limits
    out["vulkan"] = [to_json(l) for l in vulkan_limits()]
except Exception as exc:
    out["vulkan"] = f"unavailable: {exc}"
out["nvml"] = [{"index": g.index, "name": g.name, "used_total": nvml.memory_used(g.index)} for g in nvml.list_gpus()]
print(json.dumps(out, indent=2))
EOF
say "limits: $(tr -d '\n ' < "$RES/limits.json" | head -c 600)"

# 2. The archives, built on this machine's disk; the cold one fsync'd, so that evicting it from the page
#    cache really sends its reads to the disk (the warm ones are written back by the kernel meanwhile).
for shape in $COLD $BIG $SINGLE; do
  sync_it=no
  [ "$shape" = "$COLD" ] && sync_it=sync
  timeout 120 "$PY" - "$shape" "$(archive "$shape")" "$sync_it" >> "$RES/build.txt" 2>&1 << 'EOF'
import os, sys, time
from pathlib import Path
from gputop.core.params.archive import model_layout, write_irpa
shape, path, sync = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "sync"
tensors, gib = int(shape.split("x")[0]), float(shape.split("x")[1])
started = time.perf_counter()
write_irpa(path, model_layout(tensors, int(gib * 2**30)), writers=16)
written = time.perf_counter() - started
if sync:
    fd = os.open(path, os.O_RDONLY); os.fsync(fd); os.close(fd)
print(f"{path.name}: {path.stat().st_size / 2**30:.2f} GiB written in {written:.1f} s"
      + (f", on disk after {time.perf_counter() - started:.1f} s" if sync else ""))
EOF
done
say "$(cat "$RES/build.txt")"

# 3-4. The model, warm, every path, beside the reference copies.
for i in "${!DEVICES[@]}"; do
  device=${DEVICES[$i]} target=${TARGETS[$i]}
  paths=streamed,mmap,file_async,file_async_c8
  [ "$target" = cuda ] && paths=$paths,fd
  left "$device warm" && params 120 --device "$device" --tensors "$(tensors "$BIG")" --gib "$(gib "$BIG")" \
    --archive "$(archive "$BIG")" --vmfb "$(vmfb "$BIG" "$target")" --paths "$paths" --cache warm --reference \
    --json "$RES/${target}_${BIG}_warm.json"
done

# 5. gputop itself on the model (auto picks the loader): the report's parameters, the log's line.
for i in "${!DEVICES[@]}"; do
  device=${DEVICES[$i]} target=${TARGETS[$i]}
  left "gputop run $device" || continue
  timeout 120 "$PY" -m gputop.tui run "$(vmfb "$BIG" "$target")" --device "$device" --function head -n 2 \
    --params "$(archive "$BIG")" --json "$RES/run_${target}_${BIG}.json" > "$RES/run_${target}_${BIG}.txt" 2>&1
  say "gputop run $device $BIG: exit $?; $(grep -h 'parameters loaded\|error' "$RES/run_${target}_${BIG}.txt" | head -2)"
done

# 6. A load long enough to watch: the cold 4 GiB archive, progress lines and the TUI mid-load.
device=${DEVICES[0]} target=${TARGETS[0]}
if left "progress lines"; then
  "$PY" -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)" "$(archive "$COLD")"
  timeout 120 "$PY" -m gputop.tui run "$(vmfb "$COLD" "$target")" --device "$device" --function head -n 1 \
    --params "$(archive "$COLD")" --json "$RES/run_${target}_${COLD}_cold.json" > "$RES/run_${target}_${COLD}_cold.txt" 2>&1
  say "gputop run $device $COLD cold: exit $?; $(grep -c 'gputop: parameters ' "$RES/run_${target}_${COLD}_cold.txt") progress lines"
fi
if left "TUI screenshot"; then
  timeout 120 "$PY" scripts/params_screenshot.py "$RES/params_${target}.svg" --device "$device" \
    --target "$(vmfb "$COLD" "$target")" --params "$(archive "$COLD")" --cold --at 0.3 >> "$RES/screenshot.txt" 2>&1
  say "screenshot: exit $?; $(grep -v leak "$RES/screenshot.txt" | grep 'svg' | tr '\n' ' ')"
fi

# 7. One 8 GiB parameter (the issue's table): cuda every path; vulkan through gputop (limit check) and bench.
for i in "${!DEVICES[@]}"; do
  device=${DEVICES[$i]} target=${TARGETS[$i]}
  left "$device single" || continue
  if [ "$i" -eq 0 ]; then
    params 120 --device "$device" --tensors 1 --gib "$(gib "$SINGLE")" --archive "$(archive "$SINGLE")" \
      --vmfb "$(vmfb "$SINGLE" "$target")" --paths streamed,mmap,file_async,fd,host_copy --cache warm \
      --json "$RES/${target}_${SINGLE}_warm.json"
  else
    timeout 120 "$PY" -m gputop.tui run "$(vmfb "$SINGLE" "$target")" --device "$device" --function head -n 1 \
      --params "$(archive "$SINGLE")" > "$RES/run_${target}_${SINGLE}.txt" 2>&1
    say "gputop run $device $SINGLE: exit $?; $(grep -h 'error\|parameters loaded' "$RES/run_${target}_${SINGLE}.txt" | head -2)"
    params 120 --device "$device" --tensors 1 --gib "$(gib "$SINGLE")" --archive "$(archive "$SINGLE")" \
      --vmfb "$(vmfb "$SINGLE" "$target")" --paths streamed,mmap,file_async --cache warm \
      --json "$RES/${target}_${SINGLE}_warm.json"
  fi
done

# 8. Cold page cache (posix_fadvise DONTNEED before each path; mincore reports what stayed resident).
for i in "${!DEVICES[@]}"; do
  device=${DEVICES[$i]} target=${TARGETS[$i]}
  left "$device cold" && params 120 --device "$device" --tensors "$(tensors "$COLD")" --gib "$(gib "$COLD")" \
    --archive "$(archive "$COLD")" --vmfb "$(vmfb "$COLD" "$target")" --paths streamed,mmap,file_async,file_async_c8 \
    --cache cold --json "$RES/${target}_${COLD}_cold.json"
done

# 9. How many reads in flight, and how large: the streamed loader's options on the model, warm.
left "sweep" && params 120 --device "${DEVICES[0]}" --tensors "$(tensors "$BIG")" --gib "$(gib "$BIG")" \
  --archive "$(archive "$BIG")" --vmfb "$(vmfb "$BIG" "${TARGETS[0]}")" --paths streamed --cache warm --sweep \
  --json "$RES/${TARGETS[0]}_${BIG}_sweep.json"

rm -rf "$DATA"
say "done in ${SECONDS} s"
