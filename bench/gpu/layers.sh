#!/usr/bin/env bash
# Kernels in the model's words on the GPU (issue 46; about 2 minutes): a torch-exported CNN (ResNet-20) run on CUDA
# and Vulkan with a profile pass, each kernel's source ops and the time by layer in its report, the output
# checked against torch's own, and the TUI's layer view (L) and Kernels pane from the real app.
# Results: $OUT/layers/, packed by bench/gpu/pack.sh.
#
# Needs: .device/layers/ from `bench/prepare_layers_bundle.py` (compiled on the CPU machine: .vmfb, .sources/,
# .work.json, .sites.mlir, the input and torch's output). Carry .whl .whl-cuda .gl .device/layers, then:
#   bash bench/gpu/layers.sh && bash bench/gpu/pack.sh
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh > /dev/null
results_folder layers
BUNDLE=${LAYERS_BUNDLE:-.device/layers}
[ -f "$BUNDLE/manifest.json" ] || { echo "no $BUNDLE/manifest.json: run bench/prepare_layers_bundle.py first" >&2; exit 2; }
log "start; $(gpu_host)"
for device in cuda vulkan; do
  log "$device: 200 calls, a profile pass, output against torch's"
  timeout 240 python3 -m gputop.tui run "$BUNDLE/cnn_$device.vmfb" --device "$device" -n 200 --profile \
    --input "@$BUNDLE/cnn_x.npy" --check "$BUNDLE/cnn_ref.npy" --atol 1e-3 --rtol 1e-3 \
    --json "$OUT_DIR/cnn_$device.json" > "$OUT_DIR/cnn_$device.txt" 2> "$OUT_DIR/cnn_$device.err"
  log "$device: exit $?; $(grep -c . "$OUT_DIR/cnn_$device.txt") lines"
  python3 - "$OUT_DIR/cnn_$device.json" << 'PY' | tee -a "$OUT_DIR/log.txt"
import json, sys
report = json.load(open(sys.argv[1]))
kernels, layers = report["kernels"], report["layers"]
named = [k for k in kernels if k["source_ops"]]
print(f"kernels {len(kernels)}, with source ops {len(named)}; layer groups {len(layers)}; "
      f"check passed {(report.get('check') or {}).get('passed')}; reason {report['profile'].get('source_ops_reason')}")
print(f"layers add up: {sum(l['ms_per_call'] for l in layers):.4f} ms vs kernels "
      f"{sum(k['avg_us'] * k['per_call'] for k in kernels) / 1000:.4f} ms per call")
for layer in layers[:6]:
    print(f"  {layer['ms_per_call']:.4f} ms {100 * layer['share']:5.1f}%  {layer['name'][:110]}")
PY
done
log "TUI: the Kernels pane and the layer view (L), CUDA, 120x40"
timeout 240 python3 scripts/screenshots.py "$OUT_DIR/gputop-layers-cuda.svg" --target "$BUNDLE/cnn_cuda.vmfb" \
  --device cuda --input "@$BUNDLE/cnn_x.npy" --calls 200 --profile --press L --size 120x40 \
  >> "$OUT_DIR/log.txt" 2>&1 || log "screenshot (layers) failed: $(tail -1 "$OUT_DIR/log.txt")"
timeout 240 python3 scripts/screenshots.py "$OUT_DIR/gputop-kernels-from-cuda.svg" \
  --target "$BUNDLE/cnn_cuda.vmfb" --device cuda --input "@$BUNDLE/cnn_x.npy" --calls 200 --profile \
  --size 120x40 >> "$OUT_DIR/log.txt" 2>&1 || log "screenshot (kernels) failed: $(tail -1 "$OUT_DIR/log.txt")"
log "TUI: the layer view, Vulkan, 80x24"
timeout 240 python3 scripts/screenshots.py "$OUT_DIR/gputop-layers-vulkan-80x24.svg" \
  --target "$BUNDLE/cnn_vulkan.vmfb" --device vulkan --input "@$BUNDLE/cnn_x.npy" --calls 200 --profile \
  --press L --size 80x24 >> "$OUT_DIR/log.txt" 2>&1 || log "screenshot (vulkan) failed: $(tail -1 "$OUT_DIR/log.txt")"
log "done"
