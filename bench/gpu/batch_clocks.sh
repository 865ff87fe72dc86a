#!/usr/bin/env bash
# Issue 19 on the H200 in one device call: the clock warning as a user meets it (bench/clock_idle.py:
# one live run paused until the GPU idles, then a pass at once and a pass 3 s later, on vulkan and
# cuda), then bench/gpu/issue19.sh (ncu FLOPs/bytes, roofline tables, the H200 screenshots).
# carry: .whl .whl-cuda .gl .device    Needs .device/issue19 (bench/prepare_issue19.py) and
# .device/common/call_marks.so. Results come back as $OUT/clock_idle.tgz and $OUT/issue19.tgz.
set -u
source bench/gpu/setup.sh
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
R=$OUT/clock_idle
mkdir -p "$R"
for dev in vulkan cuda; do
  timeout 150 python3 bench/clock_idle.py ".device/issue19/mlp_$dev.vmfb" --device "$dev" --idle-timeout 45 \
    --json "$R/clock_idle_$dev.json" > "$R/clock_idle_$dev.txt" 2>&1
  echo "clock_idle $dev exit $?"; tail -6 "$R/clock_idle_$dev.txt"
done
# The two-process repro of issue19.sh never saw a cold pass (the device's creation wakes the GPU):
# clock_idle above replaces it, so its idle wait is cut to 1 s.
ISSUE19_IDLE_S=1 timeout 330 bash bench/gpu/issue19.sh > "$OUT/issue19.log" 2>&1
echo "issue19 exit $?"; tail -3 "$OUT/issue19.log"; mv "$OUT/issue19.log" "$OUT/issue19/" 2>/dev/null
# Issue 23 in the same call when its bundle came along (one machine start for both).
[ -d .device/issue23 ] && bash bench/gpu/batch_params.sh
bash bench/gpu/pack.sh
