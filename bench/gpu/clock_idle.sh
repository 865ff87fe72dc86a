#!/usr/bin/env bash
# The clock warning as a user meets it, on the H200 (issue 19), in one device call: bench/clock_idle.py (one
# live run paused until the GPU idles, then a pass at once and a pass 3 s later, on vulkan and cuda), then
# bench/gpu/roofline.sh (ncu FLOPs/bytes, roofline tables, the H200 screenshots).
# carry: .whl .whl-cuda .gl .device    Needs .device/roofline (bench/prepare_roofline_bundle.py) and
# .device/common/call_marks.so. Results come back as $OUT/clock_idle.tgz and $OUT/roofline.tgz.
set -u
source bench/gpu/setup.sh
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
R=$OUT/clock_idle
mkdir -p "$R"
for dev in vulkan cuda; do
  timeout 150 python3 bench/clock_idle.py ".device/roofline/mlp_$dev.vmfb" --device "$dev" --idle-timeout 45 \
    --json "$R/clock_idle_$dev.json" > "$R/clock_idle_$dev.txt" 2>&1
  echo "clock_idle $dev exit $?"; tail -6 "$R/clock_idle_$dev.txt"
done
# The two-process repro of roofline.sh never saw a cold pass (the device's creation wakes the GPU):
# clock_idle above replaces it, so its idle wait is cut to 1 s.
ROOFLINE_IDLE_S=1 timeout 330 bash bench/gpu/roofline.sh > "$OUT/roofline.log" 2>&1
echo "roofline exit $?"; tail -3 "$OUT/roofline.log"; mv "$OUT/roofline.log" "$OUT/roofline/" 2>/dev/null
# The parameter loader's staging A/B in the same call when its bundle came along (one machine start for both).
[ -d .device/params ] && bash bench/gpu/params_staging.sh
bash bench/gpu/pack.sh
