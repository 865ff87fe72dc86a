# Issue 18 again on Vulkan, now with call marks: the demo MLP and the light ResNet-50, breakdowns only.
O=$OUT/issue18b; mkdir -p "$O"; D=.device/common
timeout 120 python3 -m gputop.tui run "$D/mlp_vulkan.vmfb" --device vulkan -n 50 --profile --quiet --renderdoc off \
  --json "$O/mlp_vulkan.json" > "$O/mlp_vulkan.txt" 2>&1; echo "mlp vulkan exit $?"
timeout 200 python3 -m gputop.tui run "$D/light_resnet50_vulkan.vmfb" --device vulkan -n 50 --profile --quiet \
  --renderdoc off --input "@$D/light_resnet50_in0.npy" --check "$D/light_resnet50_expected0.npy" \
  --json "$O/resnet50_vulkan.json" > "$O/resnet50_vulkan.txt" 2>&1; echo "resnet50 vulkan exit $?"
grep -h -A9 "^breakdown" "$O"/*.txt
