#!/usr/bin/env bash
# RenderDoc's replay against the profile pass on the H200 (issue 22): capture demo:mlp on Vulkan, replay it there for
# per-dispatch GPU durations, and compare them with the profile pass's device times of the same module.
#
# Before (on the CPU machine): bash bench/gpu/prepare_replay_bundle.sh   -> .device/replay (about 14 MB:
# mlp_vulkan.vmfb for --iree-vulkan-target=ampere, and Debian bookworm's librenderdoc, python3-renderdoc,
# python3.11 + its standard library, and their X11/xcb/stb libraries as .deb files).
# On the GPU machine: gputop importable as `python3 -m gputop.tui` (this branch merged), IREE's runtime,
# and Vulkan set up (the loader unpacked, VK_DRIVER_FILES at NVIDIA's ICD): bench/gpu/setup.sh does it.
# Run from the repository root; writes $OUT/replay_vs_profile/summary.txt and .../replay_vs_profile.json (two
# files, whatever happens); about a minute when all goes well, each step bounded by a timeout.
# On the GPU machine, in one device call (carry .whl .gl .device/replay; no .whl-cuda: the capture is Vulkan
# work, and the carry limit is 64 MiB), results packed as one archive:
#   source bench/gpu/setup.sh && timeout 400 bash bench/gpu/replay_vs_profile.sh; bash bench/gpu/pack.sh
#
# The recipe for RenderDoc's Python module on a machine whose Python (3.12) it was not built for:
#   dpkg -x every .deb into one private folder R (nothing installed system-wide);
#   GPUTOP_RENDERDOC_LIB=R/usr/lib/librenderdoc.so, and R/usr/lib{,/x86_64-linux-gnu} on LD_LIBRARY_PATH;
#   RenderDoc's implicit-layer json copied with an absolute library_path into XDG_DATA_HOME/vulkan/...;
#   then gputop finds R/usr/bin/python3.11 (relocatable: it finds its standard library beside itself)
#   and R/usr/lib/python3/dist-packages/renderdoc.so by itself, from GPUTOP_RENDERDOC_LIB.
# Env: REPLAY_DIR (default .device/replay), PYTHON (default python3), OUT (default ./out).
# A dry run on the CPU machine (lavapipe cannot capture IREE's work: a recorded capture stands in):
#   REPLAY_VMFB=some_default_vulkan.vmfb REPLAY_CAPTURE=tests/data/lavapipe_compute.rdc bash bench/gpu/replay_vs_profile.sh
set -u
DIR=${REPLAY_DIR:-.device/replay}
PY=${PYTHON:-python3}
VMFB=${REPLAY_VMFB:-$DIR/mlp_vulkan.vmfb}
RES=${OUT:-./out}/replay_vs_profile
WORK=$(mktemp -d /tmp/replay_vs_profile.XXXXXX)
R=$WORK/rd
mkdir -p "$RES" "$R"
SUMMARY=$RES/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
clocks() {
  echo "$1: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,pstate --format=csv,noheader 2>/dev/null || echo no nvidia-smi)" \
    >> "$WORK/clocks.txt"
}
say "date: $(date -u +%FT%TZ)  host: $(hostname)  python: $("$PY" --version 2>&1)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$SUMMARY"

# 1. RenderDoc, its Python module and a Python 3.11, unpacked privately.
for f in "$DIR"/debs/*.deb; do dpkg -x "$f" "$R" || say "dpkg -x $f failed"; done
export GPUTOP_RENDERDOC_LIB=$R/usr/lib/librenderdoc.so
export LD_LIBRARY_PATH=$R/usr/lib:$R/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$R/xdg/vulkan/implicit_layer.d"
sed "s#\"library_path\": *\"[^\"]*\"#\"library_path\": \"$GPUTOP_RENDERDOC_LIB\"#" \
  "$R/usr/share/vulkan/implicit_layer.d/renderdoc_capture.json" > "$R/xdg/vulkan/implicit_layer.d/renderdoc_capture.json"
export XDG_DATA_HOME=$R/xdg
say "unpacked: $(du -sh "$R" | cut -f1) in $R; layer json: $(grep -o '"library_path": *"[^"]*"' "$XDG_DATA_HOME/vulkan/implicit_layer.d/renderdoc_capture.json")"
READER=$("$PY" -c "import gputop.core.renderdoc.capture_files as c; print(c.READER)")
for python in "$R/usr/bin/python3.11" "$(command -v "$PY")"; do
  out=$(timeout 60 "$python" -I "$READER" --probe "--module-dir=$R/usr/lib/python3/dist-packages" 2>&1 | tail -c 400)
  say "module probe with $python: $out"
  echo "$python: $out" >> "$WORK/probes.txt"
done

# 2. The profile pass: IREE's device timestamps around every dispatch of 50 back-to-back calls (warm).
clocks "before the profile run"
timeout 90 "$PY" -m gputop.tui run "$VMFB" --device vulkan -n 50 --profile --renderdoc off --json "$WORK/profile_run.json" \
  > "$WORK/profile_run.txt" 2>&1
say "profile run: exit $? $(grep -m1 -o '"error": [^,]*' "$WORK/profile_run.json" 2>/dev/null)"
clocks "after the profile run"

# 3. The capture: one call (the second) of the same module, RenderDoc required (--renderdoc on).
if [ -n "${REPLAY_CAPTURE:-}" ]; then
  CAP=$REPLAY_CAPTURE
  say "capture: $CAP given (dry run), no capture made"
else
  timeout 90 "$PY" -m gputop.tui run "$VMFB" --device vulkan -n 5 --capture 1 --renderdoc on --json "$WORK/capture_run.json" \
    > "$WORK/capture_run.txt" 2>&1
  code=$?
  CAP=$("$PY" -c "import json,sys; c=json.load(open(sys.argv[1]))['captures']; print(c[0]['path'] if c else '')" \
    "$WORK/capture_run.json" 2>/dev/null)
  say "capture run: exit $code, capture: ${CAP:-none} ($(tail -n 2 "$WORK/capture_run.txt" | tr '\n' ' ' | tail -c 300))"
  "$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); print('renderdoc:', r.get('renderdoc')); print('captures:', json.dumps(r.get('captures')))" \
    "$WORK/capture_run.json" >> "$SUMMARY" 2>&1
fi

# 4. Read and replay it: the module under the private Python 3.11, found from GPUTOP_RENDERDOC_LIB.
if [ -n "$CAP" ] && [ -f "$CAP" ]; then
  clocks "before the replay"
  timeout 90 "$PY" -m gputop.tui capture-info "$CAP" --passes 10 --replay-timeout 60 --json "$WORK/capture_info.json" \
    > /dev/null 2> "$WORK/capture_info.err"
  say "capture-info (replay): exit $? $(head -c 300 "$WORK/capture_info.err")"
  clocks "after the replay"
  "$PY" -c "import json,sys; from gputop.tui.text import capture_text; print(capture_text(json.load(open(sys.argv[1]))))" \
    "$WORK/capture_info.json" >> "$SUMMARY" 2>&1
  # 5. The same read with this machine's own Python (3.12) as the module's interpreter: does it work?
  GPUTOP_RENDERDOC_PYTHON=$(command -v "$PY") timeout 60 "$PY" -m gputop.tui capture-info "$CAP" --passes 3 \
    --replay-timeout 30 --json "$WORK/capture_info_own_python.json" > /dev/null 2> "$WORK/capture_info_own_python.err"
  say "capture-info under $("$PY" --version 2>&1): exit $? $(head -c 300 "$WORK/capture_info_own_python.err")"
  "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print('  reader:', d.get('reader'), '| note:', d.get('reader_note')); print('  replay:', d.get('replay')); print('  durations:', [x.get('gpu_duration_us') for x in d.get('dispatch_list', [])])" \
    "$WORK/capture_info_own_python.json" >> "$SUMMARY" 2>&1
else
  say "no capture to read"
fi

# 6. The two clocks side by side, and one JSON file with everything.
"$PY" bench/replay_vs_profile.py "$WORK/profile_run.json" "$WORK/capture_info.json" "$RES/replay_vs_profile.json" \
  --extra "capture_info_own_python=$WORK/capture_info_own_python.json" --extra "clocks=$WORK/clocks.txt" \
  --extra "probes=$WORK/probes.txt" --extra "capture_run=$WORK/capture_run.json" \
  --extra "capture_run_log=$WORK/capture_run.txt" --extra "profile_run_log=$WORK/profile_run.txt" >> "$SUMMARY" 2>&1
cat "$WORK/clocks.txt" >> "$SUMMARY" 2>/dev/null
say "done: $(date -u +%FT%TZ)"
