# What every trip script does inside its one device call (sourced by tools/llm_bench_trip.sh and
# tools/kernelbench_trip.sh, from the repo root there): install (tools/device_setup.sh), note the device,
# run each step with a share of the time LIMIT, and pack the store for the way back.
# Before sourcing: OUT (default /tmp/out), LIMIT (seconds). SETUP=skip leaves the install out (skillbase
# already on PATH: a warm machine, or the CPU test of a trip here).
repo=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
if [ "${SETUP:-}" != skip ]; then
  source tools/device_setup.sh > "$OUT/setup.log" 2>&1 || { cat "$OUT/setup.log"; exit 1; }
fi
export SKILLBASE_CACHE=${SKILLBASE_CACHE:-/tmp/sbcache} SKILLBASE_BENCH_DIR=$repo/bench PYTHONUNBUFFERED=1
t0=$SECONDS
{ date -u +%FT%TZ; nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  ncu --version | tail -1; nvcc --version | tail -1; } > "$OUT/device.txt" 2>&1
left() { local s=$((LIMIT - (SECONDS - t0))); echo $((s > 1 ? s : 1)); }
step() {   # name command...: the command's JSON and its progress lines into trip.log, its wall time after;
  local name=$1; shift   # returns the command's exit status
  local s0=$SECONDS rc
  echo "== $name ($(date -u +%T)): $*" >> "$OUT/trip.log"
  ( cd /tmp && timeout -k 5 $(( $(left) + 60 )) "$@" ) >> "$OUT/trip.log" 2>&1
  rc=$?
  echo "== $name rc=$rc wall=$((SECONDS - s0))s" >> "$OUT/trip.log"
  tail -n 1 "$OUT/trip.log"
  return $rc
}
pack_store_back() {   # store: what waits now into trip.log, the whole store into $OUT/store.tar.gz
  local store=$1
  step pending skillbase pending --store "$store"
  ( cd /tmp && skillbase store pack "$OUT/store.tar.gz" --store "$store" --force ) >> "$OUT/trip.log" 2>&1
  # The device tool's per-file limit is 15 MiB: a larger archive comes back in parts (cat them together).
  if [ "$(stat -c %s "$OUT/store.tar.gz")" -gt $((15 << 20)) ]; then
    split -b 15M "$OUT/store.tar.gz" "$OUT/store.tar.gz.part-" && rm "$OUT/store.tar.gz"
  fi
  ls -l "$OUT" | tail -n +2
}
