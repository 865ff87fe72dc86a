#!/usr/bin/env bash
# Rebuild tests/data/lavapipe_compute.rdc: a RenderDoc capture of hand-written Vulkan compute on
# lavapipe, which replays on lavapipe (gputop's replay tests need one; IREE's work cannot be captured
# there). Needs gcc, spirv-as, librenderdoc, mesa-vulkan-drivers and Vulkan's headers
# (apt-get install libvulkan-dev, or VULKAN_INCLUDE=folder holding vulkan/vulkan.h).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
spirv-as --target-env vulkan1.0 "$here/shaders.spvasm" -o "$work/shaders.spv"
gcc -O1 -Wall ${VULKAN_INCLUDE:+-I"$VULKAN_INCLUDE"} "$here/main.c" -o "$work/lavapipe_compute" \
  /usr/lib/x86_64-linux-gnu/libvulkan.so.1 -ldl
VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json} \
  "$work/lavapipe_compute" "$work/shaders.spv" "$work/capture"
cp "$(ls "$work"/capture*.rdc | head -1)" "$here/../lavapipe_compute.rdc"
echo "wrote $(cd "$here/.." && pwd)/lavapipe_compute.rdc"
