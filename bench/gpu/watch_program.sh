#!/usr/bin/env bash
# A user's own program watched on a real GPU (issue 45): `gputop run -- python3 tests/programs/...` on CUDA and
# Vulkan, `--profile` on CUDA (CUPTI imported into the program from gputop's environment), the held-results
# diagnosis, the program's own p50/p95 with and without gputop (bench/watch_overhead.py), the TUI's screenshot
# from the real app (scripts/screenshots.py --program) and the GPU test of tests/test_program_profile.py.
# The program runs in an environment of its own: system python3 -s with only iree.runtime (and what it needs)
# linked into a folder on its PYTHONPATH, gputop's watcher folder first (as gputop puts it).
# 1. Here (the CPU machine): python bench/prepare_watch_bundle.py .device/watch
# 2. There: carry .whl .whl-cuda .gl .device, then: source bench/gpu/setup.sh && bash bench/gpu/watch_program.sh
# Results: $OUT/watch_program/ (log.txt, *.json, the screenshots), packed by bench/gpu/pack.sh.
# WATCH_STEPS picks steps (default: runs overhead tui test); WATCH_CALLS and WATCH_ROUNDS size the overhead rounds.
set -u
STEPS=${WATCH_STEPS:-runs overhead tui test}
source bench/gpu/setup.sh > /dev/null
results_folder watch_program
D=.device/watch
log "$(gpu_host)"
program_runtime  # RT, and `program ARGS`: a test program in its own environment (setup.sh)
watch_run() {  # NAME GPUTOP-OPTIONS -- PROGRAM ARGS
  local name=$1; shift
  local opts=()
  while [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  log "== $name: gputop run ${opts[*]} -- $*"
  eval "timeout 300 python3 -m gputop.tui run --json $OUT_DIR/$name.json ${opts[*]} -- $(program "$@")" \
    > "$OUT_DIR/$name.stdout" 2> "$OUT_DIR/$name.stderr"
  log "exit $?; the program's own line: $(tail -1 "$OUT_DIR/$name.stdout")"
  tail -25 "$OUT_DIR/$name.stderr" | tee -a "$OUT_DIR/log.txt"
}
if step runs; then
watch_run cuda -- load_and_call.py $D/model_cuda.vmfb $D/model.irpa 3000 --device cuda
watch_run cuda_from -- load_and_call.py $D/model_cuda.vmfb $D/model.irpa 3000 --device cuda --style from
watch_run cuda_profile --profile -- load_and_call.py $D/model_cuda.vmfb $D/model.irpa 3000 --device cuda
python3 - "$OUT_DIR/cuda_profile.json" << 'PY' | tee -a "$OUT_DIR/log.txt"
import json, sys
r = json.load(open(sys.argv[1]))
print("profile:", {k: r["profile"].get(k) for k in ("source", "calls", "call_wall_ms", "call_kernel_ms")} if r.get("profile") else None)
for k in r.get("kernels", []):
    print(f"  kernel {k['name']}: count {k['count']} avg {k['avg_us']:.1f} us per_call {k['per_call']}")
PY
watch_run vulkan --profile -- load_and_call.py $D/model_vulkan.vmfb $D/model.irpa 3000 --device vulkan
watch_run cuda_hold -- hold_results.py $D/model_cuda.vmfb $D/model.irpa 400 --device cuda --sleep-ms 2
watch_run cuda_params_host -- host_memory_params.py $D/model_cuda.vmfb $D/model.irpa 200 --device cuda
fi
overhead() {  # NAME [watch_overhead options]: the program's own p50/p95 with and without gputop, alternating
  local name=$1; shift
  log "== overhead ($name): the program's own p50/p95, with and without gputop (CUDA, alternating rounds)"
  timeout 420 python3 bench/watch_overhead.py --device cuda --calls "${WATCH_CALLS:-3000}" \
    --rounds "${WATCH_ROUNDS:-6}" --python python3 \
    --program-path "$RT" --vmfb $D/model_cuda.vmfb --irpa $D/model.irpa --json "$OUT_DIR/overhead_$name.json" "$@" \
    2>&1 | tee -a "$OUT_DIR/log.txt"
}
if step overhead; then
overhead default
overhead agent_only --agent-only  # the watcher alone in the program, its stream dropped: no engine beside it
fi
if step overhead_nvml; then
overhead sample_100ms --gputop-arg=--sample-interval --gputop-arg=0.1  # the engine reading NVML every 0.1 s
fi
if step tui; then
log "== the TUI on the program (the real app, headless), CUDA after p, and Vulkan"
timeout 200 python3 scripts/screenshots.py "$OUT_DIR/gputop-program-cuda.svg" --calls 2000 --profile \
  --program "$(program load_and_call.py $D/model_cuda.vmfb $D/model.irpa 200000 --device cuda)" 2>&1 | tail -5 \
  | tee -a "$OUT_DIR/log.txt"
timeout 200 python3 scripts/screenshots.py "$OUT_DIR/gputop-program-vulkan.svg" --calls 500 \
  --program "$(program hold_results.py $D/model_vulkan.vmfb $D/model.irpa 200000 --device vulkan)" 2>&1 | tail -5 \
  | tee -a "$OUT_DIR/log.txt"
fi
if step test; then
log "== pytest -m gpu tests/test_program_profile.py"
GPUTOP_TEST_CUDA_ASSETS=$D timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_program_profile.py \
  2>&1 | tail -8 | tee -a "$OUT_DIR/log.txt"
fi
bash bench/gpu/pack.sh > /dev/null
