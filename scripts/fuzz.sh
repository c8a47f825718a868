#!/usr/bin/env bash
# Runs every fuzz target for $1 seconds each, or for $FUZZ_RUNS executions each when that is
# set (cargo-fuzz, on the machine's nightly), with
# the committed seeds, a dictionary where there is one, and a growing corpus in fuzz/corpus.
# Prints each target's execution count; on a crash prints the end of the log and fails.
set -euo pipefail
seconds=${1:-15}
shift || true
cd "$(dirname "$0")/../fuzz"
mkdir -p artifacts
for t in "$@"; do
  mkdir -p "corpus/$t"
  dict=()
  [[ -f "dicts/$t.dict" ]] && dict=("-dict=dicts/$t.dict")
  log="artifacts/$t.log"
  limit=(-max_total_time="$seconds")
  what="in ${seconds} s"
  if [[ -n "${FUZZ_RUNS:-}" ]]; then limit=(-runs="$FUZZ_RUNS"); what="(of ${FUZZ_RUNS} asked)"; fi
  start=$(date +%s)
  # Safe Rust: no sanitizer, several times the executions per second (set FUZZ_SANITIZER).
  if cargo +nightly fuzz run --sanitizer "${FUZZ_SANITIZER:-none}" "$t" "corpus/$t" "seeds/$t" -- "${limit[@]}" "${dict[@]}" \
      -print_final_stats=1 >"$log" 2>&1; then
    runs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "fuzz $t: ${runs:-?} executions ${what}, $(( $(date +%s) - start )) s, no crash"
  else
    echo "fuzz $t: FAILED (log: fuzz/$log)"
    grep -n -m3 -A4 'panicked\|ERROR: AddressSanitizer\|ERROR: libFuzzer' "$log" || tail -40 "$log"
    exit 1
  fi
done
