#!/usr/bin/env bash
# Install the Debian packages gputop's backends need (software Vulkan, OpenCL on
# the CPU, RenderDoc, tmux for the end-to-end test, Prometheus for the exporter test, Chromium as the headless
# browser of the gputop web test), when we can: as root with
# apt-get. Otherwise say what is missing and carry on: gputop still runs on
# local-task without them, and the tests that need them skip with a reason.
set -u
PACKAGES="mesa-vulkan-drivers libvulkan1 vulkan-tools pocl-opencl-icd ocl-icd-libopencl1 librenderdoc python3-renderdoc renderdoccmd tmux asciinema prometheus chromium"
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "gputop setup: installing Debian packages:$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null || echo "gputop setup: apt-get update failed; trying the install anyway"
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null \
    || echo "gputop setup: could not install some of:$missing (continuing)"
else
  echo "gputop setup: missing Debian packages:$missing"
  echo "gputop setup: run as root (or: sudo apt-get install$missing) for Vulkan/OpenCL/RenderDoc; continuing"
fi
exit 0
