# The clock warning on purpose (issue 19), on Vulkan: a profile pass as the first work after the GPU
# idled (its clock falls to 345 MHz), then one after a warm-up. Only the first should be flagged, and
# their kernel times should differ as their clocks do. Results: $OUT/clock/.
O=$OUT/clock; mkdir -p "$O"
V=.device/issue19/mlp_vulkan.vmfb
smi() { nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,pstate --format=csv,noheader >> "$O/smi.txt"; }
for round in 1 2; do
  sleep 20; smi
  timeout 60 python3 -m gputop.tui run "$V" --device vulkan -n 0 --profile --profile-calls 5 --warmup 0 \
    --renderdoc off --json "$O/cold$round.json" > "$O/cold$round.txt" 2>&1; smi
  timeout 60 python3 -m gputop.tui run "$V" --device vulkan -n 0 --profile --profile-calls 5 --warmup 3 \
    --renderdoc off --json "$O/warm$round.json" > "$O/warm$round.txt" 2>&1; smi
  python3 bench/clock_repro.py "$O/cold$round.json" "$O/warm$round.json" --json "$O/repro$round.json" | tail -8
done
