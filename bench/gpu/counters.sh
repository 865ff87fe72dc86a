#!/usr/bin/env bash
# The counters pass end to end on the GPU machine (issue 30; about 3 minutes). `gputop run --profile --counters`
# on the two-matmul module and demo:mlp (.device/perturb, work read from the dispatch names) and, when the
# roofline bundle is there, demo:mlp, demo:conv and the light ResNet-50 (.device/roofline, work from the IR):
# each report as NAME.json and its printout as NAME.txt, the pass's wall time in log.txt. Then the counters
# alone (no profile pass), the one-line refusals a GPU machine can show (a Vulkan run; GPUTOP_NCU pointing
# nowhere), the measured-against-estimated tables (bench/counters_table.py), and the Kernels pane and the roofline
# with measured points from the real app (scripts/screenshots.py --counters), and the GPU test of
# tests/test_counters.py where pytest is carried (.whl-test).
#   carry: .whl .whl-cuda .whl-test .gl .device/perturb .device/roofline .device/common
#   then:  bash bench/gpu/counters.sh
# (the whole of .device no longer fits the device tool's 64 MiB beside the wheels: these three folders are what
# this needs, about 63 MiB with the tracked tree; leave .whl-test out to save 0.6 MB, and the GPU test with it).
# Results: $OUT/counters/, all of it in $OUT/counters.tgz (the device tool returns a few files a call: the folder
# is moved out of $OUT once archived, and only log.txt, tables.md, pytest.txt and the two SVGs are left beside it).
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
P=.device/perturb
B=.device/roofline
OUT_ROOT="${OUT:-/tmp/out}"
OUT_DIR="$OUT_ROOT/counters"
BUDGET_S=${COUNTERS_BUDGET_S:-270}  # optional steps are skipped past this, so the whole stays near 5 minutes
mkdir -p "$OUT_DIR"
log() { echo "[counters $(date +%T) +${SECONDS}s] $*" | tee -a "$OUT_DIR/log.txt"; }
ins() { for i in "$P/$1"_in*.npy; do printf -- '--input @%s ' "$i"; done; }
in_budget() { [ "$SECONDS" -lt "$BUDGET_S" ] || { log "skipped $1: past ${BUDGET_S}s"; return 1; }; }
counted() {  # NAME LIMIT_S ARGS...: one profiled and counted run, NAME.json and NAME.txt; its counters line logged
  local name=$1 limit=$2; shift 2
  local started=$SECONDS
  timeout "$limit" python3 -m gputop.tui run "$@" --json "$OUT_DIR/$name.json" > "$OUT_DIR/$name.txt" 2>&1
  local rc=$?
  log "$name: exit $rc in $((SECONDS - started)) s; $(grep -m1 '^counters' "$OUT_DIR/$name.txt" || tail -1 "$OUT_DIR/$name.txt")"
}

log "start; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
log "ncu: $(python3 -c 'from gputop.core.profiling.ncu.ncu_command import find_ncu, ncu_version as v; p, why = find_ncu(); print(p, v(p)) if p else print(why)')"

# 1. Profiled and counted: the perturb modules (no sources beside them: the estimate is read from the names).
# shellcheck disable=SC2046
counted mm2 90 "$P/mm2_cuda.vmfb" --device cuda --function mm2 $(ins mm2) -n 20 --profile --counters
# shellcheck disable=SC2046
counted mlp 90 "$P/mlp_cuda.vmfb" --device cuda --function mlp $(ins mlp) -n 20 --profile --counters

# 2. The counters alone: no profile pass, the counters' own kernel table.
# shellcheck disable=SC2046
counted mm2_counters_only 90 "$P/mm2_cuda.vmfb" --device cuda --function mm2 $(ins mm2) -n 5 --counters

# 3. What a GPU machine answers in one line: a Vulkan run, and no ncu where GPUTOP_NCU points.
# shellcheck disable=SC2046
counted refused_vulkan 60 "$P/mm2_vulkan.vmfb" --device vulkan --function mm2 $(ins mm2) -n 2 --counters
# shellcheck disable=SC2046
(export GPUTOP_NCU=/nonexistent/ncu; counted refused_no_ncu 60 "$P/mm2_cuda.vmfb" --device cuda --function mm2 \
  $(ins mm2) -n 2 --counters)

# 4. The roofline bundle, when carried: the estimate counted from the IR (its .work.json beside each .vmfb).
if [ -f "$B/manifest.json" ]; then
  for model in mlp conv resnet50; do
    in_budget "roofline_$model" || continue
    extra=()
    [ "$model" = resnet50 ] && extra=(--input "@$B/resnet50_in0.npy")  # the imported model declares no inputs
    counted "roofline_$model" "$([ "$model" = resnet50 ] && echo 150 || echo 90)" "$B/${model}_cuda.vmfb" \
      --device cuda -n 20 --profile --counters ${extra[@]+"${extra[@]}"}
  done
else
  log "no $B/manifest.json: the roofline modules are left out"
fi
# shellcheck disable=SC2046
python3 bench/counters_table.py "$OUT_DIR"/mm2.json "$OUT_DIR"/mlp.json "$OUT_DIR"/mm2_counters_only.json \
  $(ls "$OUT_DIR"/roofline_*.json 2>/dev/null) --markdown "$OUT_DIR/tables.md" --json "$OUT_DIR/tables.json" \
  > /dev/null 2>> "$OUT_DIR/log.txt" || log "counters_table failed"

# 5. The real app: the Kernels pane (measured columns, ncu's verdict) and the roofline (measured beside estimated).
if in_budget "screenshots"; then
  # shellcheck disable=SC2046
  timeout 120 python3 scripts/screenshots.py "$OUT_DIR/gputop-kernels-counters.svg" --engine-process --target "$P/mlp_cuda.vmfb" \
    --device cuda $(ins mlp) --calls 30 --profile --counters > "$OUT_DIR/screenshots.txt" 2>&1
  log "kernels screenshot: exit $? ($(head -1 "$OUT_DIR/screenshots.txt"))"
  # shellcheck disable=SC2046
  timeout 120 python3 scripts/screenshots.py "$OUT_DIR/gputop-roofline-counters.svg" --engine-process --target "$P/mlp_cuda.vmfb" \
    --device cuda $(ins mlp) --calls 30 --profile --counters --roofline >> "$OUT_DIR/screenshots.txt" 2>&1
  log "roofline screenshot: exit $?"
fi
# 6. The GPU test of tests/test_counters.py, where pytest was carried (.whl-test).
if in_budget "pytest" && python3 -c "import pytest" 2> /dev/null; then
  timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_counters.py -k on_the_gpu -rs \
    > "$OUT_DIR/pytest.txt" 2>&1
  log "pytest exit $? ($(tail -1 "$OUT_DIR/pytest.txt"))"
fi
log "done in ${SECONDS}s"

tar czf "$OUT_ROOT/counters.tgz" -C "$OUT_ROOT" counters
KEEP=/tmp/counters-results
rm -rf "$KEEP" && mv "$OUT_DIR" "$KEEP" && mkdir -p "$OUT_DIR"
for f in log.txt tables.md gputop-kernels-counters.svg gputop-roofline-counters.svg pytest.txt; do
  [ -f "$KEEP/$f" ] && cp "$KEEP/$f" "$OUT_DIR/"
done
ls -la "$OUT_ROOT/counters.tgz"
