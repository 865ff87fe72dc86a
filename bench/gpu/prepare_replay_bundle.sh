#!/usr/bin/env bash
# RenderDoc's replay against the profile pass (issue 22), on the CPU machine: what bench/gpu/replay_vs_profile.sh
# needs on the H200, into .device/replay/
# (git-ignored; carry it): demo:mlp compiled for Vulkan on NVIDIA (ampere), and Debian bookworm's
# RenderDoc 1.24 with its Python module and a Python 3.11 to run it under (the GPU machine's Python
# is 3.12, the module is built for 3.11), each with the libraries they need that a CUDA image lacks.
# About 14 MB. Run from the repository root: bash bench/gpu/prepare_replay_bundle.sh
set -euo pipefail
DIR=.device/replay
PY=${PYTHON:-.venv/bin/python}
mkdir -p "$DIR/debs"
"$PY" - "$DIR/mlp_vulkan.vmfb" <<'PYEOF'
import sys
from pathlib import Path

from gputop.core.module.compile import compile_module
from gputop.core.module.demos import DEMOS
from gputop.core.module.targets import VULKAN_NVIDIA_FLAGS

demo = DEMOS["mlp"]
compiled = compile_module(Path("mlp.mlir"), VULKAN_NVIDIA_FLAGS, source_bytes=demo.source())
Path(sys.argv[1]).write_bytes(compiled.vmfb_path.read_bytes())
print(f"{sys.argv[1]}: demo:mlp for {' '.join(VULKAN_NVIDIA_FLAGS)}")
PYEOF
# RenderDoc (librenderdoc: the capture layer and the replay), its Python module, their X11/xcb/stb
# libraries, and Python 3.11 itself (interpreter and standard library; relocatable: it finds its
# library beside its binary).
PACKAGES="librenderdoc python3-renderdoc libx11-6 libxcb1 libxcb-keysyms1 libstb0 libxau6 libxdmcp6 libbsd0 libmd0
python3.11-minimal libpython3.11-minimal libpython3.11-stdlib"
(cd "$DIR/debs" && rm -f ./*.deb && apt-get download $PACKAGES 2>&1 | grep -v "^W: Download is performed unsandboxed")
# Epochs come as %3a, versions hold '+' and '~': keep the carried names to letters, digits, '.', '_', '-'.
for f in "$DIR"/debs/*.deb; do
  name=$(basename "$f" | sed 's/%3a/_/g; s/[^A-Za-z0-9._-]/_/g')
  [ "$(basename "$f")" = "$name" ] || mv "$f" "$DIR/debs/$name"
done
du -sh "$DIR" "$DIR/debs"
