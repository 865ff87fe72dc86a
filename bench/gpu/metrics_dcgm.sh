#!/usr/bin/env bash
# Issue 58 on a real GPU: /metrics of a CUDA run carries NVML's UUID (and gpu, modelName, pci_bus_id), and
# PromQL joins the run's series by UUID to a DCGM-style series written from NVML (dcgm-exporter is not there).
# 1. Here:  mkdir -p .device/metrics && gzip -9 -c /usr/bin/prometheus > .device/metrics/prometheus.gz
#           .venv/bin/iree-compile core/demos/mlp.mlir --iree-hal-target-device=cuda --iree-cuda-target=sm_80 \
#             -o .device/metrics/mlp_cuda.vmfb
# 2. There: carry .whl .whl-cuda .whl-test .device/metrics (about 53 MB), then: bash bench/gpu/metrics_dcgm.sh
set -u
source bench/gpu/setup.sh > /dev/null
results_folder metrics_dcgm
D=.device/metrics
[ -x /tmp/prom/prometheus ] || { mkdir -p /tmp/prom && gunzip -c $D/prometheus.gz > /tmp/prom/prometheus && chmod +x /tmp/prom/prometheus; }
log "$(gpu_host)"
log "== one CUDA run's /metrics, beside nvidia-smi's UUID and PCI bus id"
python3 -m gputop.tui serve $D/mlp_cuda.vmfb --device cuda --metrics-port 19470 --quiet --profile-every 3600 \
  --session-dir /tmp/metrics-cuda 2> "$OUT_DIR/serve_stderr.txt" &
pid=$!
sleep 30
python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:19470/metrics', timeout=10).read().decode())" \
  > "$OUT_DIR/metrics_cuda.txt"
kill -TERM $pid; wait $pid
grep -E '^gputop_(info|gpu_sm_clock_hertz|device_memory_used_bytes|pm_value)\{' "$OUT_DIR/metrics_cuda.txt" | tee -a "$OUT_DIR/log.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv | tee -a "$OUT_DIR/log.txt"
log "== pytest -m gpu tests/test_dashboard.py (the join on UUID, every dashboard query on the CUDA run)"
GPUTOP_TEST_PROMETHEUS=/tmp/prom/prometheus GPUTOP_TEST_CUDA_VMFB=$D/mlp_cuda.vmfb timeout 420 \
  python3 -m pytest -q -s -p no:cacheprovider -m gpu tests/test_dashboard.py 2>&1 | tail -40 | tee -a "$OUT_DIR/log.txt"
