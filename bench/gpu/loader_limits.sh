#!/usr/bin/env bash
# The streamed loader's limits on the GPU machine (issue 32): what bounds it on CUDA. bench/loader_limits.py takes
# the pipeline apart (LIMITS_PARTS: copies alone, reads alone and beside copies, copies of freshly written slots,
# the round trip, making the staging, which threads may queue copies, the head module's context three times in one
# process); then bench/params.py alternates the loader as it is with its A/B (LIMITS_RUNS), with the pinned
# reference and, cold, a plain O_DIRECT read in the same run. About 5 minutes.
#   carry: .whl .whl-cuda .gl .device/common .device/params     then:  bash bench/gpu/loader_limits.sh
# Results: $OUT/loader_limits/.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
results_folder loader_limits
ARCHIVE=$PARAMS_ARCHIVE
V=.device/params
log "$(gpu_host)"
log "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|L2|L3|NUMA node" | tr -s ' ' | tee -a "$OUT_DIR/log.txt"
params_archive "$ARCHIVE" | tee -a "$OUT_DIR/log.txt"
cat "$ARCHIVE" > /dev/null  # warm
PARTS=${LIMITS_PARTS-threads,staging,submit,reads,latency,dirty,twice}  # bench/loader_limits.py's parts; empty: none
if [ -n "$PARTS" ]; then
  timeout 240 python3 bench/loader_limits.py "$ARCHIVE" --device cuda --parts "$PARTS" --vmfb "$V/head_256x16g_cuda.vmfb" \
    --json "$OUT_DIR/limits.json" 2>&1 | tee -a "$OUT_DIR/log.txt"
  log "loader_limits: exit ${PIPESTATUS[0]}"
fi
common=(--timeout 60 --device cuda --tensors 256 --gib 16 --archive "$ARCHIVE" --vmfb "$V/head_256x16g_cuda.vmfb" --cache warm)
one() {  # NAME ARGS...: one alternating run of bench/params.py
  local name=$1; shift
  timeout 200 python3 bench/params.py "${common[@]}" "$@" --json "$OUT_DIR/$name.json" >> "$OUT_DIR/params.log" 2>&1
  log "params $name: exit $?"
}
# The runs, by name (LIMITS_RUNS: which, in order). streamed is the loader as main has it (on CUDA, imported
# staging); streamed_al stages through the driver's own pinned allocations, as before (the A/B).
for run in ${LIMITS_RUNS:-pairs pairs12 cold1 cold2}; do
  case $run in
    pairs) one pairs --paths streamed,streamed_al --repeat 4 --reference ;;
    footprint) one footprint --paths streamed,streamed/c3,streamed/c2,streamed/c2/w12,streamed/c3/w10 --repeat 3 --reference ;;
    firsts) one firsts --paths streamed,streamed/p1,streamed/p2,streamed/p3 --repeat 2 ;;
    slots) one slots --paths streamed,streamed/s3,streamed/s4,streamed/w10/s3,streamed/p1 --repeat 3 --reference ;;
    mapped) one mapped --paths streamed,streamed_pc --repeat 5 --reference ;;  # the A/B: preadv for a warm file
    pairs12) one pairs12 --paths streamed,streamed_al --repeat 2 --workers 12 ;;
    cold1|cold2) one $run --paths streamed,streamed_al --cache cold ;;
    eager) CUDA_MODULE_LOADING=EAGER one eager --paths streamed --repeat 2 ;;  # kernels loaded with the module
    *) log "no run named $run" ;;
  esac
done
python3 - "$OUT_DIR" << 'PY' | tee -a "$OUT_DIR/log.txt"
import json, sys, glob, os
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    if path.endswith("limits.json") or "rows" not in open(path).read(200):
        continue
    d = json.load(open(path))
    ref = (d.get("reference") or {}).get("iree_pinned_gbps")
    if ref:
        print(f"{os.path.basename(path)}: pinned {ref} GB/s")
    for r in d["rows"]:
        s = r.get("stages") or {}
        if "seconds" not in r:
            print(os.path.basename(path), r)
            continue
        if r.get("vs_direct_read"):
            print(f"{os.path.basename(path):12s} {r['path']:26s} cold: {r['vs_direct_read']}x the direct read")
        print(f"{os.path.basename(path):12s} {r['path']:26s} {r['seconds']:.4f} s {r['gbps']:6.2f} GB/s {r['check']} "
              f"alloc {s.get('allocate_s', 0)*1e3:5.1f} wall {s.get('wall_s', 0)*1e3:6.1f} after {(s.get('context_after_s') or 0)*1e3:5.1f} "
              f"call {r.get('call_s', 0)*1e3:5.1f} back {r.get('read_back_s', 0)*1e3:5.1f} read/rdr {s.get('read_s', 0)/max(1, s.get('readers', 1))*1e3:6.1f} "
              f"wait/rdr {s.get('slot_wait_s', 0)/max(1, s.get('readers', 1))*1e3:6.1f} dmaw {s.get('dma_wait_s', 0)*1e3:6.1f} "
              f"after loader/vm {r.get('after_loader_s', 0)*1e3:.1f}/{r.get('after_vm_s', 0)*1e3:.1f}")
        if r.get("prewarm"):
            print("             prewarm:", json.dumps(r["prewarm"]))
PY
