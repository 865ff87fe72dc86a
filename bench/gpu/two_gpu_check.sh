#!/usr/bin/env bash
# The affinity corpus on two GPUs (issue 35; nvidia-h100-x2 / nvidia-h200-x2): every two-device case (the two demos
# among them) run, checked and profiled, its copies matched with the plan; the demos in the TUI, IREE's
# two-device bugs, each device's memory row. Run from the repository root in two calls on one warm machine:
#   PART=run       carry .whl .gl .device .cc1  (the runtime half: no compiler needed)
#   PART=affinity  carry .gl .device .cc2       (`gputop affinity` and the TUI: needs the compiler)
# The GPU machines have no compiler and its wheel (80 MB) is over one call's 64 MiB, so it travels as
# one xz tarball (52 MB) in two parts: .cc1 with the first call (kept in /tmp, which a warm machine keeps),
# .cc2 with the second. Before, on the CPU machine:
#   python bench/prepare_two_gpu_bundle.py .device/two_gpu   # 26 .vmfb, plans, inputs, local references (~7 MB)
#   (cd WHEEL_DIR && tar cf - iree iree_base_compiler-*.dist-info) | xz -9 -T2 | split -b 27M - .cc1/compiler.tar.xz.
#   mv .cc1/compiler.tar.xz.ab .cc2/
# Results: $OUT/two_gpu_check-PART.tar.gz (every log and JSON) and $OUT/two_gpu_check-PART.txt (the summary).
set -u
PART=${1:?usage: two_gpu_check.sh run|affinity}
RES=${OUT:-./out}/two_gpu_check-$PART
mkdir -p "$RES"
source bench/gpu/setup.sh > "$RES/setup.txt" 2>&1 || { cat "$RES/setup.txt"; exit 1; }
cat "$RES/setup.txt"
summary=${OUT:-./out}/two_gpu_check-$PART.txt
{
  echo "date: $(date -u +%FT%TZ)  host: $(hostname)  part: $PART"
  nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version --format=csv,noheader
  nvidia-smi topo -m 2>&1 | head -5
} | tee "$summary"
case $PART in
  run)
    mkdir -p /tmp/cc && cp .cc1/* /tmp/cc/ && echo "staged $(du -b /tmp/cc | cut -f1) bytes of the compiler in /tmp/cc"
    timeout 60 python3 -m gputop.tui devices > "$RES/devices.txt" 2>&1
    cat "$RES/devices.txt" >> "$summary"
    timeout 240 python3 bench/two_gpu_check.py .device/two_gpu/manifest.json --part run --out "$RES/run" --jobs 8 \
      >> "$summary" 2>&1
    ;;
  affinity)
    if [ ! -x /tmp/site/iree/compiler/_mlir_libs/iree-compile ]; then
      cat /tmp/cc/compiler.tar.xz.* .cc2/compiler.tar.xz.* | xz -d -T0 | tar x -C /tmp/site \
        || echo "the compiler did not unpack (was the machine still warm from PART=run?)" | tee -a "$summary"
    fi
    python3 -c "import importlib.metadata as m; print('compiler', m.version('iree-base-compiler'))" >> "$summary" 2>&1
    for backend in vulkan cuda; do
      for demo in hidden-transfer pipeline; do
        timeout 200 python3 scripts/screenshots.py "$RES/gputop-$demo-${backend}2.svg" --target demo:$demo \
          --devices $backend:0,$backend:1 --calls 20 --size 160x50 > "$RES/shot-$demo-$backend.log" 2>&1 &
      done
    done
    for backend in vulkan cuda; do
      timeout 200 python3 -m gputop.tui run demo:hidden-transfer --devices $backend:0,$backend:1 -n 20 \
        --json "$RES/hidden_transfer_$backend.json" > "$RES/hidden_transfer_$backend.txt" 2>&1 &
    done
    timeout 240 python3 bench/two_gpu_check.py .device/two_gpu/manifest.json --part affinity --out "$RES/aff" \
      --jobs 8 >> "$summary" 2>&1
    wait
    for f in "$RES"/shot-*.log; do echo "$(basename "$f"): $(tail -1 "$f")"; done >> "$summary"
    for backend in vulkan cuda; do
      echo "--- gputop run demo:hidden-transfer --devices $backend:0,$backend:1"; cat "$RES/hidden_transfer_$backend.txt"
    done >> "$summary" 2>&1
    cp "$RES"/gputop-hidden-transfer-*.svg "${OUT:-./out}/" 2>/dev/null
    ;;
esac
tar czf "${OUT:-./out}/two_gpu_check-$PART.tar.gz" -C "$RES" .
rm -rf "$RES"
tail -c 6000 "$summary"
