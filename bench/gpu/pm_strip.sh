#!/usr/bin/env bash
# The PM sampling strip on a real GPU (issue 48). Steps (PM_STEPS, default "run session overhead test tui"):
#  catalogue  the chip's PM sampling metrics that the strip's roles could use, and the set the sampler picks
#  pattern    bench/gpu/pm_pattern.py's known busy/idle phases of mm_f32 and mm_f16, sampled from inside the calling
#             process: the committed sample records (tests/data/pm_sampling/) come from here
#  run        gputop run on mm_f32 and mm_f16 with --profile --counters (the second source: ncu), and ResNet-20
#  session    one live engine session: a profile pass, a counters pass, g off and on (bench/gpu/pm_session.py)
#  overhead   ResNet-20's calls with the strip on and off, alternating (bench/pm_overhead.py)
#  costs      the sampler's CPU time by step (decode, evaluate, image set-up) at 10 and 1 ms
#  intervals  the strip's own CPU time (ms a second) at 1, 2, 5 and 10 ms intervals
#  test       the GPU test of tests/test_pm_sampling.py
#  tui        screenshots of the real app with the strip (scripts/screenshots.py --pm)
# 1. Here: python bench/prepare_pm_bundle.py .device/pm
#    and copy .device/layers/cnn_cuda.vmfb and cnn_x.npy (bench/prepare_layers_bundle.py) into .device/pm
# 2. There: carry .whl .whl-cuda .whl-test .device/pm, then: bash bench/gpu/pm_strip.sh
set -u
STEPS=${PM_STEPS:-run session overhead test tui}
source bench/gpu/setup.sh > /dev/null
results_folder pm_strip
D=.device/pm
log "$(gpu_host)"
if step catalogue; then
  log "== catalogue"
  timeout 120 python3 - << 'PY' 2>&1 | tee -a "$OUT_DIR/log.txt"
from gputop.core.profiling.cupti import pm_sampler as s
s.load_libraries()
ordinal, name = s.cuda_ordinal(None)
sp = s.Sampler(ordinal, 1.0)
sp._call("ProfilerInitialize")
sp.chip = sp._call("DeviceGetChipName", device_index=ordinal).p_chip_name
import numpy as np
p = sp._call("PmSamplingGetCounterAvailability", device_index=ordinal, p_counter_availability_image=0)
sp._availability = np.zeros(p.counter_availability_image_size, dtype=np.uint8)
p.p_counter_availability_image = sp._availability.ctypes.data
sp.cc.pm_sampling_get_counter_availability(p.ptr)
ph = sp.ph
import time, json
host = sp._new_host()
names = []
for t in (ph.MetricType.COUNTER, ph.MetricType.RATIO, ph.MetricType.THROUGHPUT):
    names += [(t, n) for n in host.get_base_metrics(t)]
host.deinitialize()
print(name, sp.chip, len(names), "base metrics")
for t, n in names:
    if any(k in n for k in ("tensor", "dram__th", "sm__throughput", "gpc__cycles", "gr__cycles", "sm__cycles_el")):
        print(" ", t.name, n)
sets = sp.single_pass_sets()
print("single-pass sets", sets)
for set_name in sets:
    members = ph.get_metrics_in_single_pass_set(sp.chip, set_name)
    print(f"  set {set_name}: {len(members)} metrics: {members[:60]}")
for set_name in [None, *sets]:
    for role, cands in s.ROLES.items():
        for m in [*cands, *(f"{set_name}.{c}" for c in cands if set_name)]:
            print("  passes", set_name, role, m, *sp.passes([m], set_name))
started = time.perf_counter()
print("picked", sp._pick(None), f"in {time.perf_counter() - started:.2f} s")
PY
fi
summarize() {  # SAMPLES.jsonl|SAMPLES.json CALLS.json: the samples in the busy phases against those outside
  python3 - "$1" "$2" << 'PY' 2>&1 | tee -a "$OUT_DIR/log.txt"
import json, sys
import numpy as np
if sys.argv[1].endswith(".jsonl"):
    lines = [json.loads(l) for l in open(sys.argv[1])]
    metrics = next(l["ready"]["metrics"] for l in lines if "ready" in l)
    rows = np.array([r for l in lines if "samples" in l for r in l["samples"]])
else:
    data = json.load(open(sys.argv[1])); metrics, rows = data["metrics"], np.array(data["rows"])
calls = json.load(open(sys.argv[2]))
if len(rows) == 0:
    print("no samples"); sys.exit()
rows = rows[rows[:, 0] > 0]
print("samples", len(rows), "median length ms", np.median(rows[:, 1] - rows[:, 0]) * 1e3)
busy = calls["busy_phases"]
inside = np.zeros(len(rows), bool); outside = np.ones(len(rows), bool)
for a, b in busy:
    inside |= (rows[:, 0] >= a) & (rows[:, 1] <= b)
    outside &= (rows[:, 1] < a) | (rows[:, 0] > b)
for i, m in enumerate(metrics):
    col = rows[:, 2 + i]
    print(f"  {m}: busy phases mean {col[inside].mean() if inside.any() else float('nan'):.4g} (n {inside.sum()}), "
          f"outside {col[outside].mean() if outside.any() else float('nan'):.4g} (n {outside.sum()})")
PY
}
if step pattern; then
  # A sampler in a process of its own (with a CUDA context or without) decoded no samples beside this pattern on an
  # H100 (2026-11-27): PM sampling sees the work of the process that samples, so it samples from inside it.
  for fn in mm_f32 mm_f16; do
    log "== pattern $fn, sampler inside the calling process"
    timeout 60 python3 bench/gpu/pm_pattern.py $D/pm_cuda.vmfb $fn "$OUT_DIR/calls_${fn}_inside.json" \
      --sample-inside "$OUT_DIR/samples_${fn}_inside.json" 2>&1 | tail -4 | tee -a "$OUT_DIR/log.txt"
    summarize "$OUT_DIR/samples_${fn}_inside.json" "$OUT_DIR/calls_${fn}_inside.json"
  done
fi
if step run; then
  for fn in mm_f32 mm_f16; do
    log "== gputop run $fn --profile --counters: the strip's figures over the calls against the counters pass (ncu)"
    timeout 300 python3 -m gputop.tui run $D/pm_cuda.vmfb --device cuda --function $fn -n 80 --profile --counters \
      --json "$OUT_DIR/run_$fn.json" > "$OUT_DIR/run_$fn.txt" 2>&1
    log "exit $?"; grep -E "^(calls|pm|  |clocks|counters)" "$OUT_DIR/run_$fn.txt" | head -30 | tee -a "$OUT_DIR/log.txt"
  done
  log "== gputop run cnn (ResNet-20)"
  timeout 300 python3 -m gputop.tui run $D/cnn_cuda.vmfb --device cuda --input @$D/cnn_x.npy -n 3000 \
    --json "$OUT_DIR/run_cnn.json" > "$OUT_DIR/run_cnn.txt" 2>&1
  log "exit $?"; grep -E "^(calls|pm|  )" "$OUT_DIR/run_cnn.txt" | head -12 | tee -a "$OUT_DIR/log.txt"
fi
if step session; then
  log "== one engine session: profile pass, counters pass, g off and on"
  timeout 400 python3 bench/gpu/pm_session.py $D/pm_cuda.vmfb mm_f32 "$OUT_DIR/session.json" 2>&1 | tail -60 | tee -a "$OUT_DIR/log.txt"
fi
if step overhead; then
  log "== overhead: ResNet-20 calls with the strip on and off, alternating"
  timeout 500 python3 bench/pm_overhead.py --vmfb $D/cnn_cuda.vmfb --input @$D/cnn_x.npy --iterations ${PM_CALLS:-4000} \
    --rounds ${PM_ROUNDS:-8} --json "$OUT_DIR/overhead_cnn.json" 2>&1 | tail -20 | tee -a "$OUT_DIR/log.txt"
fi
if step costs; then
  for ms in 10 1; do
    log "== the sampler's own CPU time at a $ms ms interval (mm_f32 pattern, sampled inside)"
    timeout 60 python3 bench/gpu/pm_pattern.py $D/pm_cuda.vmfb mm_f32 "$OUT_DIR/costs_calls_${ms}ms.json" --phases 2 \
      --interval-ms $ms --sample-inside "$OUT_DIR/costs_samples_${ms}ms.json" 2>&1 | tail -4 | tee -a "$OUT_DIR/log.txt"
    rm -f "$OUT_DIR/costs_samples_${ms}ms.json"
  done
fi
if step intervals; then
  for ms in 1 2 5 10; do
    log "== the strip's own CPU time at a $ms ms interval (2 rounds, ResNet-20)"
    timeout 300 python3 bench/pm_overhead.py --vmfb $D/cnn_cuda.vmfb --input @$D/cnn_x.npy --iterations 4000 \
      --rounds 2 --interval-ms $ms --json "$OUT_DIR/interval_${ms}ms.json" 2>&1 | tail -6 | tee -a "$OUT_DIR/log.txt"
  done
fi
if step test; then
  log "== pytest -m gpu tests/test_pm_sampling.py tests/test_call_clocks.py"
  GPUTOP_TEST_PM_VMFB=$D/pm_cuda.vmfb timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu \
    tests/test_pm_sampling.py tests/test_call_clocks.py \
    2>&1 | tail -8 | tee -a "$OUT_DIR/log.txt"
fi
if step tui; then
  for size in 120x40 80x24; do
    log "== screenshot $size: the TUI on ResNet-20 with the strip"
    timeout 240 python3 scripts/screenshots.py "$OUT_DIR/gputop-pm-strip-$size.svg" --target $D/cnn_cuda.vmfb --device cuda \
      --input @$D/cnn_x.npy --calls 2000 --pm 5 --size $size --engine-process 2>&1 | tail -3 | tee -a "$OUT_DIR/log.txt"
  done
  log "== screenshot 80x24 on mm_f16 (the tensor pipes)"
  timeout 240 python3 scripts/screenshots.py "$OUT_DIR/gputop-pm-strip-f16-80x24.svg" --target $D/pm_cuda.vmfb --device cuda \
    --function mm_f16 --calls 50 --pm 5 --size 80x24 --engine-process 2>&1 | tail -3 | tee -a "$OUT_DIR/log.txt"
fi
