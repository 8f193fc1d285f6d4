#!/usr/bin/env bash
# Fuzz one target for N seconds (default 600) with cargo-fuzz on nightly (installs cargo-fuzz if
# missing; run the targets one at a time on a small machine):
#   ./scripts/fuzz.sh worker_frame|protocol [seconds]
# The working corpus, fuzz/corpus/<target>, is not in git: it starts from the committed seeds
# (fuzz/seeds/<target>, a few hundred inputs) and regressions (fuzz/regressions/<target>, every
# input that once found a bug), grows with each run and stays on this machine.
# FUZZ_FEATURES passes cargo features to the fuzz crate.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
target=${1:?usage: $0 worker_frame|protocol [seconds]}
secs=${2:-600}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
features=(); [ -n "${FUZZ_FEATURES:-}" ] && features=(--features "$FUZZ_FEATURES")
dict=(); [ -f "$target.dict" ] && dict=(-dict="$target.dict")
mkdir -p "corpus/$target"
inputs=("corpus/$target" "seeds/$target")
[ -d "regressions/$target" ] && inputs+=("regressions/$target")
exec cargo +nightly fuzz run "$target" "${features[@]}" "${inputs[@]}" -- -max_total_time="$secs" -print_final_stats=1 "${dict[@]}"
