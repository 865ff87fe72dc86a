#!/usr/bin/env bash
# Issue 22 on the H200 in one device call: bench/gpu/setup.sh, then bench/gpu/issue22.sh (RenderDoc's
# replay of a captured demo:mlp call beside the profile pass). carry: .whl .gl .device/issue22
# (no .whl-cuda: the capture is Vulkan work, and the carry limit is 64 MiB).
set -u
source bench/gpu/setup.sh
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
timeout 400 bash bench/gpu/issue22.sh
cat "$OUT/issue22/summary.txt" 2>/dev/null | tail -30
bash bench/gpu/pack.sh
