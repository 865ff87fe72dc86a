# Where the call time goes, on the H200 (issue 18; source bench/gpu/setup.sh first): the call breakdown of the
# demo MLP and the light ResNet-50 on each DEVICE (default: cuda vulkan), and gputop's own share of a call against
# iree-benchmark-module (bench/run_overhead.py; CALL_BREAKDOWN_OVERHEAD=no: breakdowns only).
#   bash bench/gpu/call_breakdown.sh [DEVICE ...]     Needs .device/common (bench/prepare_gpu_bundle.py).
# Writes $OUT/call_breakdown/*.json (reports with call_breakdown) and the overhead benchmark's JSON.
# RenderDoc is off, as the Vulkan re-run with call marks had it: the GPU machine has no RenderDoc unless
# bench/gpu/replay_vs_profile.sh unpacked one, so the first runs' default (`auto`) loaded none either.
O=$OUT/call_breakdown; mkdir -p "$O"
D=.device/common
DEVICES=${*:-cuda vulkan}
for dev in $DEVICES; do
  timeout 240 python3 -m gputop.tui run "$D/mlp_$dev.vmfb" --device "$dev" -n 50 --profile --quiet --renderdoc off \
    --json "$O/mlp_$dev.json" > "$O/mlp_$dev.txt" 2>&1; echo "mlp $dev exit $?"
  timeout 300 python3 -m gputop.tui run "$D/light_resnet50_$dev.vmfb" --device "$dev" -n 50 --profile --quiet \
    --renderdoc off --input "@$D/light_resnet50_in0.npy" --check "$D/light_resnet50_expected0.npy" \
    --json "$O/resnet50_$dev.json" > "$O/resnet50_$dev.txt" 2>&1; echo "resnet50 $dev exit $?"
done
if [ "${CALL_BREAKDOWN_OVERHEAD:-yes}" != no ]; then
  for dev in $DEVICES; do
    timeout 240 python3 bench/run_overhead.py --vmfb "$D/mlp_$dev.vmfb" --device "$dev" --function mlp \
      --iterations 100 --rounds 3 --json "$O/overhead_mlp_$dev.json" > "$O/overhead_mlp_$dev.txt" 2>&1
    echo "overhead $dev exit $?"; tail -4 "$O/overhead_mlp_$dev.txt"
  done
fi
grep -h -A9 "^breakdown" "$O"/*.txt | head -80
