# The device tool brings back at most 8 files from $OUT: each script's results folder becomes one archive.
cd "$OUT" || exit 0
for d in */; do
  d=${d%/}
  tar czf "$d.tgz" "$d" && rm -rf "$d"
done
ls -la "$OUT"
