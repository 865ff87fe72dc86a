#!/usr/bin/env bash
# Why is my program slow, on a real GPU (issue 56): tests/programs/why_slow.py on CUDA with the same numpy
# argument on every call and with it made a device array once, watched by `gputop run --` (its parts, the hint
# and its saving, then the new split), a profile's kernels inside the calls (and the trace), a context per
# request at CUDA's pace (fast_calls.py --contexts), watching's cost at 0.36 ms and 2 ms calls
# (bench/watch_overhead.py, alternating rounds), and the watched-program GPU test.
# 1. Here (the CPU machine): python bench/prepare_watch_bundle.py .device/watch
# 2. There: carry .whl .gl .device, then: bash bench/gpu/why_slow.sh
# Results: $OUT/why_slow/ (log.txt, *.json), packed by bench/gpu/pack.sh.
# WHY_STEPS picks steps (default: parts profile contexts overhead test; also: tui overhead_mlp); WHY_ROUNDS sizes
# the overhead rounds.
set -u
STEPS=${WHY_STEPS:-parts profile contexts overhead test}
source bench/gpu/setup.sh > /dev/null
results_folder why_slow
D=.device/watch
log "$(gpu_host)"
program_runtime  # RT, and `program ARGS`: a test program in its own environment (setup.sh)
watch_run() {  # NAME GPUTOP-OPTIONS -- PROGRAM ARGS
  local name=$1; shift
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  log "== $name: gputop run ${opts[*]} -- $*"
  eval "timeout 300 python3 -m gputop.tui run --json $OUT_DIR/$name.json --session-dir /tmp/why-$name ${opts[*]} -- $(program "$@")" \
    > "$OUT_DIR/$name.stdout" 2> "$OUT_DIR/$name.stderr"
  log "exit $?; the program's own line: $(tail -1 "$OUT_DIR/$name.stdout")"
  tail -25 "$OUT_DIR/$name.stderr" | tee -a "$OUT_DIR/log.txt"
  python3 - "$OUT_DIR/$name.json" << 'PY' | tee -a "$OUT_DIR/log.txt"
import json, sys
r = json.load(open(sys.argv[1]))
for f in r.get("functions", []):
    p = f.get("parts") or {}
    parts = {k: (v.get("p50_ms"), v.get("share"), v.get("bytes")) for k, v in p.items() if isinstance(v, dict)}
    print(f"  {f['module']}.{f['name']}: count {f['count']} p50 {f['p50_ms']} mean {f['mean_ms']} between {f.get('between_p50_ms')}")
    print(f"    parts (p50_ms, share, bytes): {parts}; same_arguments {p.get('same_arguments')}")
print("  hints:", r.get("hints"))
st = (r.get("program") or {}).get("stacks") or {}
print("  stacks:", st.get("source"), st.get("samples"), st.get("reason"), [(t["file"].rsplit("/", 1)[-1], t["line"], round(t["share"], 3)) for t in st.get("top", [])[:3]])
PY
}
if step parts; then
for shape in 64x512 1024x4096; do
  watch_run "upload_$shape" -- why_slow.py $D/rowsum_${shape}_cuda.vmfb 3000 --shape $shape --device cuda --mistake upload
  watch_run "fixed_$shape" -- why_slow.py $D/rowsum_${shape}_cuda.vmfb 3000 --shape $shape --device cuda --mistake none
  watch_run "to_host_$shape" -- why_slow.py $D/rowsum_${shape}_cuda.vmfb 3000 --shape $shape --device cuda --mistake to_host
done
log "== plain (unwatched): the program's own p50 with each mistake, for the saving's second source"
for m in upload none; do
  eval "$(program why_slow.py $D/rowsum_64x512_cuda.vmfb 3000 --shape 64x512 --device cuda --mistake $m)" 2>&1 | tail -1 | tee -a "$OUT_DIR/log.txt"
done
fi
if step profile; then
watch_run profile --profile -- why_slow.py $D/rowsum_64x512_cuda.vmfb 3000 --shape 64x512 --device cuda --mistake upload --sleep-ms 1
timeout 60 python3 -m gputop.tui report /tmp/why-profile --trace "$OUT_DIR/profile_trace.json" > /dev/null 2>> "$OUT_DIR/log.txt"
python3 - "$OUT_DIR/profile_trace.json" << 'PY' | tee -a "$OUT_DIR/log.txt"
import json, sys
from collections import Counter
ev = json.load(open(sys.argv[1]))["traceEvents"]
print("trace:", Counter(e["name"] if e.get("tid") != 10000 else "GPU kernel" for e in ev if e["ph"] == "X").most_common(8))
calls = [e for e in ev if e["ph"] == "X" and e["name"] == "rowsum.main"]
gpu = [e for e in ev if e["ph"] == "X" and e.get("tid") == 10000]
inside = sum(any(c["ts"] <= k["ts"] <= c["ts"] + c["dur"] for c in calls) for k in gpu)
print(f"trace: {len(gpu)} kernels, {inside} inside a call's span")
PY
fi
if step contexts; then
watch_run contexts -- fast_calls.py $D/tiny_cuda.vmfb 5000 --contexts --device cuda
watch_run fast -- fast_calls.py $D/tiny_cuda.vmfb 100000 --device cuda
fi
overhead() {  # NAME ARGS: the program's own p50/p95, with and without gputop (CUDA, alternating rounds)
  local name=$1; shift
  log "== overhead ($name): the program's own p50/p95, with and without gputop"
  timeout 560 python3 bench/watch_overhead.py --rounds "${WHY_ROUNDS:-12}" --python python3 --program-path "$RT" \
    --vmfb $D/model_cuda.vmfb --irpa $D/model.irpa --program why_slow.py --args "$*" \
    --json "$OUT_DIR/overhead_$name.json" 2>&1 | tee -a "$OUT_DIR/log.txt"
}
if step overhead; then
overhead fixed_0.36ms "{assets}/rowsum_64x512_cuda.vmfb 2000 --shape 64x512 --device cuda --mistake none"
overhead upload_2ms "{assets}/rowsum_64x512_cuda.vmfb 1000 --shape 64x512 --device cuda --mistake upload"
fi
if step tui; then
log "== the TUI on the program (the real app, headless): the Run pane with the parts, then w, before and after the fix"
for m in upload none; do
  timeout 200 python3 scripts/screenshots.py "$OUT_DIR/gputop-why-slow-$m-cuda.svg" --calls 500 \
    --program "$(program why_slow.py $D/rowsum_64x512_cuda.vmfb 1000000 --shape 64x512 --device cuda --mistake $m --sleep-ms 0.2)" \
    2>&1 | tail -3 | tee -a "$OUT_DIR/log.txt"
done
timeout 200 python3 scripts/screenshots.py "$OUT_DIR/gputop-why-slow-stacks-cuda.svg" --calls 500 --stacks \
  --program "$(program why_slow.py $D/rowsum_64x512_cuda.vmfb 1000000 --shape 64x512 --device cuda --mistake upload --sleep-ms 0.2)" \
  2>&1 | tail -3 | tee -a "$OUT_DIR/log.txt"
fi
if step overhead_mlp; then
log "== overhead (mlp, attr: VmContext.invoke on device buffers): the program's own p50/p95 with and without gputop"
timeout 560 python3 bench/watch_overhead.py --device cuda --calls 3000 --rounds "${WHY_ROUNDS:-12}" --python python3 \
  --program-path "$RT" --vmfb $D/model_cuda.vmfb --irpa $D/model.irpa --json "$OUT_DIR/overhead_mlp.json" \
  2>&1 | tee -a "$OUT_DIR/log.txt"
fi
if step test; then
log "== pytest -m gpu tests/test_program_profile.py"
GPUTOP_TEST_CUDA_ASSETS=$D timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_program_profile.py \
  2>&1 | tail -8 | tee -a "$OUT_DIR/log.txt"
fi
bash bench/gpu/pack.sh > /dev/null
