#!/usr/bin/env bash
# Issue 16 on two GPUs: the hidden-transfer affinity table for cuda:0,cuda:1, and the runtime cross-check.
#
# Needs two GPUs (nvidia-h200-x2); on one GPU it falls back to the same GPU twice and says so in
# $OUT/issue16/summary.txt. Run from the repository root, after (on the CPU machine)
#   python bench/prepare_issue16.py .device/issue16            # cuda2 + vulkan2 .vmfb, plans, inputs (~1 MB)
# and with the gputop wheel (this branch merged) and IREE's runtime tools installed. Writes small files
# under $OUT/issue16/; finishes in well under 3 minutes.
#
# What it does, per demo (hidden_transfer, pipeline) and backend (cuda, vulkan):
#   1. gputop affinity demo:hidden-transfer --devices cuda:0,cuda:1 --json   (needs iree-compile: without
#      it, this records the one-line error; the same table was made on the CPU machine: *_affinity.txt)
#   2. iree-run-module on the two devices, output checked against the NumPy reference
#   3. iree-benchmark-module, one call, --device_profiling_mode=queue-events[,dispatch-events]; then
#      bench/gpu_transfer_check.py matches the profile's copies with the plan (observed bytes)
# Env: ISSUE16_DIR (default .device/issue16), ISSUE16_BACKENDS (default "cuda vulkan"; a dry run on a
# CPU machine: "local vulkan-default"), PYTHON (default python3), OUT (default ./out).
set -u
DIR=${ISSUE16_DIR:-.device/issue16}
BACKENDS=${ISSUE16_BACKENDS:-cuda vulkan}
PY=${PYTHON:-python3}
RES=${OUT:-./out}/issue16
mkdir -p "$RES"
SUMMARY=$RES/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

say "date: $(date -u +%FT%TZ)  host: $(hostname)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name,uuid --format=csv,noheader >> "$SUMMARY"
iree-run-module --list_devices > "$RES/list_devices.txt" 2>&1
say "IREE devices: $(tr '\n' ' ' < "$RES/list_devices.txt")"

# 1. The static table, as the issue asks (the GPU machine has no compiler: the error is the finding).
timeout 120 "$PY" -m gputop.tui affinity demo:hidden-transfer --devices cuda:0,cuda:1 --json - \
  > "$RES/affinity_cuda.json" 2> "$RES/affinity_cuda.err"
say "gputop affinity demo:hidden-transfer --devices cuda:0,cuda:1: exit $? $(head -c 300 "$RES/affinity_cuda.err")"

# Two device URIs of a backend: the first two listed, or the one listed twice (said in the summary).
uris() {
  local scheme=$1 found
  found=$(grep -o "^${scheme}://[^ ]*" "$RES/list_devices.txt" | head -2)
  if [ "$scheme" = local-task ]; then found="local-task local-task"; fi
  # CUDA by ordinal, as IREE's docs write it (cuda://0, cuda://1), when two GPUs are listed.
  if [ "$scheme" = cuda ] && [ "$(echo "$found" | wc -w)" -ge 2 ]; then found="cuda://0 cuda://1"; fi
  set -- $found
  if [ $# -eq 1 ]; then say "$scheme: only one device, $1 used twice (not a pair)" >&2; set -- "$1" "$1"; fi
  if [ $# -eq 0 ]; then return 1; fi
  echo "--device=$1 --device=$2"
}

for backend in $BACKENDS; do
  case $backend in
    cuda) scheme=cuda; mode=queue-events ;;
    vulkan | vulkan-default) scheme=vulkan; mode=queue-events,dispatch-events ;;
    local) scheme=local-task; mode=queue-events,command-region-events ;;
  esac
  if ! devices=$(uris $scheme); then say "$backend: no $scheme device"; continue; fi
  for function in hidden_transfer pipeline; do
    label=${function}_${backend}2
    plan=$DIR/${label}_plan.json
    [ -f "$plan" ] || { say "$label: no plan (run bench/prepare_issue16.py)"; continue; }
    inputs=$("$PY" -c "import json,sys; print(' '.join('--input=@$DIR/'+i for i in json.load(open('$plan'))['inputs']))")
    # 2. One call, outputs checked.
    timeout 120 iree-run-module $devices --module="$DIR/$label.vmfb" --function=$function $inputs \
      --output=@"$RES/${label}_out0.npy" > "$RES/${label}_run.log" 2>&1
    rc=$?
    check=$("$PY" -c "
import numpy as np
out, ref = np.load('$RES/${label}_out0.npy'), np.load('$DIR/${function}_expected0.npy')
print('max abs err %.3g, nan %d' % (np.abs(out - ref).max(), np.isnan(out).sum()))" 2>/dev/null || echo "no output")
    rm -f "$RES/${label}_out0.npy"
    say "$label: iree-run-module $devices: exit $rc; $check; $(grep -m1 -E '[A-Z_]{6,};' "$RES/${label}_run.log")"
    # 3. One profiled call; its copies matched with the plan.
    bundle=$RES/${label}.ireeprof
    timeout 120 iree-benchmark-module $devices --module="$DIR/$label.vmfb" --function=$function $inputs \
      --device_profiling_mode=$mode --device_profiling_output="$bundle" --benchmark_min_time=1x \
      > "$RES/${label}_profile.log" 2>&1
    rc=$?
    say "$label: profiled call ($mode): exit $rc $(grep -m1 -E '[A-Z_]{6,};|not implemented' "$RES/${label}_profile.log")"
    if [ -s "$bundle" ]; then
      "$PY" bench/gpu_transfer_check.py "$plan" "$bundle" > "$RES/${label}_observed.json" 2> "$RES/${label}_observed.err"
      "$PY" -c "
import json
d = json.load(open('$RES/${label}_observed.json'))
for t in d['transfers']:
    print('  transfer %s -> %s %d bytes (%s): observed %s' % (t['source'], t['target'], t['bytes'], t['op'], t['observed_bytes']))
for r in d['records']:
    print('  %s %d: static %d observed %s flag %s' % (r['kind'], r['index'], r['transfer_bytes'], r['observed_transfer_bytes'], r['flag']))
print('  copies seen %d, unexplained %d' % (len(d['copies_seen']), len(d['unexplained_copies'])))" 2>&1 | tee -a "$SUMMARY"
      rm -f "$bundle"  # the matched JSON is what comes back; the bundle can be large
    fi
  done
done
say "done"
