#!/usr/bin/env bash
# Page-cache pinning on the GPU machine (issue 32): can the DMA engine read a warm archive straight from the page
# cache (the file mapped and page-locked read-only with cuMemHostRegister) faster than gputop's readers copy it into
# pinned staging? bench/page_cache_pinning.py on the 16 GiB, 256-tensor archive: the host's copy bandwidth, the
# page-cache copy, registering the mapped file (1, 8, 16 threads), the DMA from it, and both end to end.
#   carry: .whl .whl-cuda .gl .device/common     then:  bash bench/gpu/page_cache_pinning.sh     About 2 minutes.
# Results: $OUT/page_cache_pinning/.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu/setup.sh >/dev/null
results_folder page_cache_pinning
ARCHIVE=$PARAMS_ARCHIVE
log "$(gpu_host)"
params_archive "$ARCHIVE" | tee -a "$OUT_DIR/log.txt"
cat "$ARCHIVE" > /dev/null  # warm
grep -E "MemTotal|MemAvailable|^Cached" /proc/meminfo | tr -s ' ' | tee -a "$OUT_DIR/log.txt"
timeout 240 python3 bench/page_cache_pinning.py "$ARCHIVE" --threads 1,8,16 --piece-mib 64 \
  --json "$OUT_DIR/pinning.json" 2>&1 | tee -a "$OUT_DIR/log.txt"
log "pinning: exit ${PIPESTATUS[0]}"
