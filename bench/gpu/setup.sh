# Source this on the GPU machine, from the repository root: gputop and its runtime from the carried
# wheels (.whl) and Vulkan loaders (.gl), NVIDIA's Vulkan ICD and OpenCL ICD, no compiler there.
#   carry: .whl .gl .device (and .whl-cuda, .whl-test: pytest for the GPU tests)     then:  source bench/gpu/setup.sh
# Facts behind each line: ../shared/PLATFORM.md and the device tool's README.
# .gl holds Debian bookworm's libvulkan1 libglvnd0 libglx0 libegl1 libgl1 libgles2 libopengl0 and libx11-6
# libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libxext6 (`apt-get download`): with only the first three, the
# loader finds NVIDIA's ICD but "Could not get 'vkCreateInstance'" (VK_ERROR_INCOMPATIBLE_DRIVER), 2026-11-23.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
# A warm machine keeps /tmp between calls: install once.
[ -d /tmp/site/iree/_runtime_libs ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl $(ls .whl-cuda/*.whl .whl-test/*.whl 2>/dev/null) \
  || { echo "gpu setup: wheels did not install"; return 1 2>/dev/null || exit 1; }
# gputop itself over this checkout, laid out as its wheel is (no build step there): gputop/__init__.py
# (gputop.watch(), src/gputop), gputop.core and gputop.tui.
mkdir -p /tmp/site/gputop
ln -sfn "$PWD/src/gputop/__init__.py" /tmp/site/gputop/__init__.py
ln -sfn "$PWD/core" /tmp/site/gputop/core
ln -sfn "$PWD/tui" /tmp/site/gputop/tui
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export PATH=/tmp/site/bin:$PATH  # the wheels' commands (py-spy: a watched program's stacks)
export PYTHONUNBUFFERED=1
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
  [ -f "$icd" ] && export VK_DRIVER_FILES="$icd" && break
done
mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
export GPUTOP_STATE_DIR=/tmp/gputop-state GPUTOP_CACHE_DIR=/tmp/gputop-cache
# No C compiler there: the call marks (core/profiling/ireeprof/call_marks.c) come built from the CPU machine.
[ -f .device/common/call_marks.so ] && export GPUTOP_CALL_MARKS_LIB=$PWD/.device/common/call_marks.so
gputop() { python3 -m gputop.tui "$@"; }
# A script's steps: `step NAME` is true when NAME is among the words of $STEPS (each script sets its default).
step() { [[ " $STEPS " == *" $1 "* ]]; }
# A script's results folder, $OUT/NAME (OUT_DIR), and its `log`: a timestamped line to the screen and to its log.txt.
results_folder() { OUT_DIR="${OUT:-/tmp/out}/$1"; RESULTS_TAG=${2:-$1}; mkdir -p "$OUT_DIR"; }
log() { echo "[$RESULTS_TAG $(date +%T)] $*" | tee -a "$OUT_DIR/log.txt"; }
# The machine in one line: the GPU, its driver and PCIe link, the cores and the kernel.
gpu_host() {
  echo "$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader); $(nproc) cores; $(uname -r)"
}
# A watched program's own environment there: system python3 -s with only iree.runtime (and what it needs) linked
# into RT, and `program ARGS`, the command of tests/programs/ARGS in it for `gputop run --` (its own path after
# gputop's watcher folder, the first entry gputop puts on PYTHONPATH).
program_runtime() {
  RT=/tmp/program-runtime
  rm -rf "$RT" && mkdir -p "$RT"
  SITE=$(python3 -c "import iree.runtime, pathlib; print(pathlib.Path(iree.runtime.__file__).resolve().parents[2])")
  for e in "$SITE"/iree "$SITE"/iree_base_runtime*; do [ -e "$e" ] && ln -s "$e" "$RT/"; done
  python3 -s -c "import ml_dtypes" 2> /dev/null || for e in "$SITE"/ml_dtypes*; do ln -s "$e" "$RT/"; done
}
program() { echo "sh -c 'PYTHONPATH=\${PYTHONPATH%%:*}:$RT exec python3 -s tests/programs/$*'"; }
# The 16 GiB, 256-tensor model-like archive the parameter scripts load (bench/params.py's --tensors 256 --gib 16),
# written at PATH unless it is there already (a warm machine keeps /tmp); what it took goes to stdout.
PARAMS_ARCHIVE=/tmp/params/model_256x16.irpa
params_archive() {
  [ -f "$1" ] && return 0
  mkdir -p "$(dirname "$1")"
  timeout 150 python3 - "$1" << 'PY'
import sys, time
from pathlib import Path
from gputop.core.params.archive import model_layout, write_irpa
started = time.perf_counter()
write_irpa(Path(sys.argv[1]), model_layout(256, 16 * 2**30), writers=16)
print(f"archive: 16 GiB, 256 tensors, written in {time.perf_counter() - started:.1f} s")
PY
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,pstate --format=csv,noheader || true
python3 -c "import iree.runtime as rt; print('iree drivers:', rt.query_available_drivers())"
