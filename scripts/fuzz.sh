#!/usr/bin/env bash
# Fuzz the pure core with cargo-fuzz on nightly (installs cargo-fuzz if missing; run the targets
# one at a time on a small machine):
#   ./scripts/fuzz.sh worker_frame|protocol [seconds]   one target, default 600 s
#   ./scripts/fuzz.sh --ci [seconds]                    what CI runs: the fuzz crate's own tests
#                                                       (the oracle over every seed and regression),
#                                                       then each target briefly (default 30 s)
# The working corpus, fuzz/corpus/<target>, is not in git: it starts from the committed seeds
# (fuzz/seeds/<target>, a few hundred inputs) and regressions (fuzz/regressions/<target>, every
# input that once found a bug), grows with each run and stays on this machine. libFuzzer runs
# every input of those folders before it mutates any, so each run replays the regressions first.
# FUZZ_FEATURES passes cargo features to the fuzz crate.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
usage="usage: $0 worker_frame|protocol [seconds] | --ci [seconds]"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
features=(); [ -n "${FUZZ_FEATURES:-}" ] && features=(--features "$FUZZ_FEATURES")

fuzz() {
  local target=$1 secs=$2
  shift 2
  local dict=(); [ -f "$target.dict" ] && dict=(-dict="$target.dict")
  mkdir -p "corpus/$target"
  local inputs=("corpus/$target" "seeds/$target")
  [ -d "regressions/$target" ] && inputs+=("regressions/$target")
  cargo +nightly fuzz run "$@" "$target" "${features[@]}" "${inputs[@]}" -- \
    -max_total_time="$secs" -print_final_stats=1 "${dict[@]}"
}

if [ "${1:?$usage}" = --ci ]; then
  secs=${2:-30}
  # The crate is its own workspace, so the main `cargo test` never builds it: this is where its
  # oracle is kept compiling (and checked over every seed and regression), and the brief runs
  # below keep the targets' model compiling. Those replay the seeds and regressions and mutate a
  # little: a debug build without AddressSanitizer (the core is safe Rust) builds in half the
  # time of a fuzzing build.
  cargo test --locked --no-default-features "${features[@]}"
  for target in $(cargo +nightly fuzz list); do
    echo "== fuzz $target for ${secs}s"
    fuzz "$target" "$secs" --dev --sanitizer none
  done
else
  fuzz "$1" "${2:-600}"
fi
