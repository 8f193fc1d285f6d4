#!/usr/bin/env bash
# The fault-injection suite (__test__/faults): ./scripts/faults.sh [short|soak]
#   short  the CI form (also part of `vitest run`): 50 worker restarts, one of each fault
#   soak   the long form: 1000 restarts, repeated half-open cycles, 10^7 continuation frames...
# Runs with Rust logging at trace level and greps everything the run printed, and everything the
# clients printed or logged, for the canary token: any hit fails the run. The figures (restarts,
# fds/threads/RSS, detection times, gaps between attempts) are printed at the end.
# FAULTS_SEED=<n> replays a random run; FAULTS_NO_BUILD=1 uses the addon as built.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-short}
case "$mode" in
  short) unset FAULTS ;;
  soak) export FAULTS=soak ;;
  *) echo "usage: $0 [short|soak]" >&2; exit 2 ;;
esac
[ -d node_modules ] || npm ci --no-audit --no-fund
[ "${FAULTS_NO_BUILD:-}" = 1 ] || npm run build
out=$(mktemp -d "${TMPDIR:-/tmp}/ctl-faults.XXXXXX")
export FAULTS_OUTPUT_DIR="$out" RUST_LOG=trace RUST_BACKTRACE=1
status=0
npx vitest run __test__/faults 2>&1 | tee "$out/vitest.out" || status=$? # pipefail: vitest's exit code
echo
echo "── figures ($mode) ──"
cat "$out/figures.txt" 2>/dev/null || true
hits=$({ grep -rc ctlcanary "$out" || true; } | awk -F: '{ n += $NF } END { print n + 0 }')
echo "── token canary: $hits hit(s) in $(cat "$out"/*.log 2>/dev/null | wc -l) captured client lines and the run's output ($out) ──"
if [ "$hits" -ne 0 ]; then
  grep -rn ctlcanary "$out" | head -20
  exit 1
fi
exit "$status"
