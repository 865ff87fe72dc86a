# Issue 18 on the H200 (source bench/gpu/setup.sh first): where the call time goes for the demo MLP and
# the light ResNet-50 on CUDA and Vulkan, and gputop's own share of a call against iree-benchmark-module.
# Writes $OUT/issue18/*.json (reports with call_breakdown) and the overhead benchmark's JSON.
O=$OUT/issue18; mkdir -p "$O"
D=.device/common
for dev in cuda vulkan; do
  timeout 240 python3 -m gputop.tui run "$D/mlp_$dev.vmfb" --device "$dev" -n 50 --profile --quiet \
    --json "$O/mlp_$dev.json" > "$O/mlp_$dev.txt" 2>&1; echo "mlp $dev exit $?"
  timeout 300 python3 -m gputop.tui run "$D/light_resnet50_$dev.vmfb" --device "$dev" -n 50 --profile --quiet \
    --input "@$D/light_resnet50_in0.npy" --check "$D/light_resnet50_expected0.npy" \
    --json "$O/resnet50_$dev.json" > "$O/resnet50_$dev.txt" 2>&1; echo "resnet50 $dev exit $?"
done
for dev in cuda vulkan; do
  timeout 240 python3 bench/run_overhead.py --vmfb "$D/mlp_$dev.vmfb" --device "$dev" --function mlp \
    --iterations 100 --rounds 3 --json "$O/overhead_mlp_$dev.json" > "$O/overhead_mlp_$dev.txt" 2>&1
  echo "overhead $dev exit $?"; tail -4 "$O/overhead_mlp_$dev.txt"
done
grep -h -A9 "^breakdown" "$O"/*.txt | head -80
