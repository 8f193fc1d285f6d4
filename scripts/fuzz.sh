#!/usr/bin/env bash
# Fuzz one target for N seconds (default 600) with cargo-fuzz on nightly, from the committed
# corpus:  ./scripts/fuzz.sh worker_frame|protocol [seconds] [extra cargo-fuzz args...]
# (installs cargo-fuzz if missing; run the targets one at a time on a small machine).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
target=${1:?usage: $0 worker_frame|protocol [seconds]}; secs=${2:-600}; shift $(( $# < 2 ? $# : 2 ))
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
dict=(); [ -f "$target.dict" ] && dict=(-dict="$target.dict")
exec cargo +nightly fuzz run "$target" "$@" -- -max_total_time="$secs" -print_final_stats=1 "${dict[@]}"
