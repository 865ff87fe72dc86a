#!/usr/bin/env bash
# IREE 3.13's two-device bugs on two real GPUs, reproduced with IREE's own tool alone (no gputop in the path).
#
# Found on nvidia-h100-x2 (2x H100 80GB HBM3, NV18, driver 580.159.04) on 2026-11-25 by bench/two_gpu_check.py;
# the output of these same commands there is bench/results/h100x2-2026-11-25/issue35/iree_two_device_bugs.txt.
# Modules and inputs: `python bench/prepare_two_gpu_bundle.py .device/two_gpu` on the CPU machine (iree-compile 3.13,
# CUDA sm_80 / Vulkan ampere, --iree-hal-target-device=device_a=BACKEND[0] ... device_b=BACKEND[1]); the
# references are the same sources compiled for two local-task devices. Run from the repository root after
# `source bench/gpu/setup.sh` (carry .whl .gl .device/two_gpu).
#   1. CUDA: every module that moves a value between the GPUs fails its first call with INVALID_ARGUMENT in
#      hal.device.queue.alloca or hal.device.queue.dealloca (the error the Python bindings also give).
#   2. CUDA: some never return (hidden_transfer, dynamic_matmul, scf_if): killed here after 60 s.
#   3. Vulkan: the calls return 0 but the results are wrong (zeros, huge values, inf/NaN).
set -u
D=.device/two_gpu
RUN=$(python3 -c "from iree._runtime import libs; print(libs.library_path)")/iree-run-module
inputs() { python3 -c "import json; print(' '.join('--input=' + a for a in json.load(open('$1'))['input_args']))"; }
for case in pipeline:pipeline:pipeline fan_out:fan_out:fan_out demo_hidden_transfer:hidden_transfer:hidden_transfer; do
  IFS=: read -r stem function label <<< "$case"
  for backend in cuda vulkan; do
    plan=$D/${stem}_${backend}2_${function}_plan.json
    [ -f "$plan" ] || continue
    # The first two devices IREE lists, by path (as gputop passes them: vulkan://N is refused).
    devices=$("$RUN" --list_devices | grep -o "^$backend://[^ ]*" | head -2 | sed 's/^/--device=/' | tr '\n' ' ')
    echo "== $stem on $backend: iree-run-module $devices --function=$function"
    timeout 60 "$RUN" --module=$D/${stem}_${backend}2.vmfb $devices --function=$function $(inputs "$plan") \
      --output=@/tmp/bug_out0.npy > /tmp/bug.log 2>&1
    code=$?
    grep -m1 -E '[A-Z_]{6,};' /tmp/bug.log
    echo "exit $code$([ $code = 124 ] && echo ' (killed after 60 s: the call never returned)')"
    [ $code = 0 ] && python3 -c "
import json, numpy as np
ref = np.load(json.load(open('$plan'))['expected'][0]); got = np.load('/tmp/bug_out0.npy')
print('output 0 vs the local-task reference: %d of %d elements differ, max abs err %.3g, %d NaN, %d inf'
      % ((~np.isclose(got, ref, rtol=1e-4, atol=1e-4)).sum(), ref.size, np.nanmax(np.abs(got - ref)),
         np.isnan(got).sum(), np.isinf(got).sum()))"
    rm -f /tmp/bug_out0.npy
  done
done
