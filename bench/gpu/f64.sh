#!/usr/bin/env bash
# Float64 ONNX models on the H200 (issue 17): each model compiled here for CUDA and Vulkan with f64 kept
# (bench/prepare_f64.py -> .device/f64), run there as a user would, its output checked against numpy's
# float64 reference with f64's tolerance. carry: .whl .gl .device/f64; after `source bench/gpu/setup.sh`.
# Writes $OUT/f64/<model>_<target>.json (the reports) and summary.txt.
set -u
DIR=${F64_DIR:-.device/f64}
RES=${OUT:-./out}/f64
mkdir -p "$RES"
for target in cuda vulkan; do
  for vmfb in "$DIR"/*_"$target".vmfb; do
    name=$(basename "$vmfb" .vmfb)
    model=${name%_"$target"}
    timeout 120 python3 -m gputop.tui run "$vmfb" --device "$target" -n 3 --quiet \
      --input "@$DIR/${model}_in0.npy" --input "@$DIR/${model}_in1.npy" --check "$DIR/${model}_out0.npy" \
      --json "$RES/$name.json" > "$RES/$name.log" 2>&1
    code=$?
    line=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); c=r['check'] or {}; d=r['device'] or {}; \
print('check', c.get('passed'), 'max_abs_err', c.get('max_abs_err'), 'max_rel_err', c.get('max_rel_err'), \
'f64', (r['compile'] or {}).get('f64'), 'on', d.get('name'))" "$RES/$name.json" 2>/dev/null || tail -1 "$RES/$name.log")
    echo "$name exit $code: $line" | tee -a "$RES/summary.txt"
  done
done
