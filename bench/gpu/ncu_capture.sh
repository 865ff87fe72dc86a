#!/usr/bin/env bash
# Nsight Compute reports of IREE's CUDA kernels, captured on the GPU machine (issue 30, first step), to build and test
# the counters pass's parsing on the CPU machine (which has no ncu). For each module in .device/perturb (mm2, mlp):
# one call of iree-run-module under ncu with the clocks and caches as the run has them, the sections the pass reads
# (SpeedOfLight, Occupancy, LaunchStats) plus the FLOP, DRAM and L2 metrics, saved as .ncu-rep and imported to
# CSV (raw and details pages) and text. Also: ncu's version, the metrics GH100 offers (tensor-core names), and the
# error ncu gives for an unknown metric. Results: $OUT/ncu_capture/.
#   carry: .whl .whl-cuda .gl .device     then:  bash bench/gpu/ncu_capture.sh
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
D=.device/perturb
results_folder ncu_capture
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
RUN=$(python3 -c "from gputop.core.profiling.ireeprof.tools import runtime_tool; print(runtime_tool('iree-run-module'))")
log "ncu: $NCU; $("$NCU" --version | tail -1); iree-run-module: $RUN"
"$NCU" --version > "$OUT_DIR/ncu_version.txt" 2>&1
timeout 60 "$NCU" --query-metrics > "$OUT_DIR/query_metrics.txt" 2>&1
grep -iE "tensor|ops_path|inst_executed_pipe" "$OUT_DIR/query_metrics.txt" > "$OUT_DIR/query_metrics_tensor.txt"
timeout 60 "$NCU" --list-sections > "$OUT_DIR/list_sections.txt" 2>&1
METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second
for p in h f d; do for op in fma add mul; do
  METRICS=$METRICS,smsp__sass_thread_inst_executed_op_${p}${op}_pred_on.sum
done; done
METRICS=$METRICS,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
METRICS=$METRICS,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
METRICS=$METRICS,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
METRICS=$METRICS,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic
METRICS=$METRICS,launch__block_size,launch__grid_size
echo "$METRICS" > "$OUT_DIR/metrics.txt"
for module in mm2 mlp; do
  args=()
  for i in "$D/${module}"_in*.npy; do args+=("--input=@$i"); done
  started=$(date +%s.%N)
  timeout 120 "$NCU" --clock-control none --cache-control none --section SpeedOfLight --section Occupancy \
    --section LaunchStats --metrics "$METRICS" -f -o "$OUT_DIR/$module" \
    "$RUN" --device=cuda --module="$D/${module}_cuda.vmfb" --function="$module" "${args[@]}" \
    --output_max_element_count=0 > "$OUT_DIR/${module}_ncu.txt" 2>&1
  rc=$?
  log "$module: ncu exit $rc in $(python3 -c "import time; print(round(time.time() - $started, 2))") s"
  for page in raw details; do
    "$NCU" --import "$OUT_DIR/$module.ncu-rep" --csv --page "$page" --print-units base > "$OUT_DIR/${module}_$page.csv" 2>&1
  done
  "$NCU" --import "$OUT_DIR/$module.ncu-rep" --page details --print-units base > "$OUT_DIR/${module}_details.txt" 2>&1
  head -c 3000 "$OUT_DIR/${module}_details.txt" | tee -a "$OUT_DIR/log.txt"
done
# The same call with the default sets, for the timings only (what the sections alone cost).
started=$(date +%s.%N)
args=(); for i in "$D/mm2"_in*.npy; do args+=("--input=@$i"); done
timeout 60 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
  "$RUN" --device=cuda --module="$D/mm2_cuda.vmfb" --function=mm2 "${args[@]}" --output_max_element_count=0 \
  > "$OUT_DIR/mm2_time_only.csv" 2>&1
log "mm2 time only: exit $? in $(python3 -c "import time; print(round(time.time() - $started, 2))") s"
timeout 60 "$NCU" --metrics not__a_metric.sum "$RUN" --device=cuda --module="$D/mm2_cuda.vmfb" --function=mm2 \
  "${args[@]}" > "$OUT_DIR/unknown_metric.txt" 2>&1
log "unknown metric: exit $? $(grep -m2 -i "error" "$OUT_DIR/unknown_metric.txt")"
# A Vulkan process under ncu: what it answers when there is no CUDA kernel to profile.
args=(); for i in "$D/mm2"_in*.npy; do args+=("--input=@$i"); done
timeout 60 "$NCU" --metrics gpu__time_duration.sum "$RUN" --device=vulkan --module="$D/mm2_vulkan.vmfb" \
  --function=mm2 "${args[@]}" --output_max_element_count=0 > "$OUT_DIR/vulkan_under_ncu.txt" 2>&1
log "vulkan under ncu: exit $? $(grep -m2 "==PROF==\|==WARNING==\|==ERROR==" "$OUT_DIR/vulkan_under_ncu.txt" | tr '\n' ' ')"
