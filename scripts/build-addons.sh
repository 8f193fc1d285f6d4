#!/usr/bin/env bash
# The package's two native addons for one target, built by napi's CLI; the one place their build
# command is written (scripts/build.sh, scripts/lib/cross.sh and the release workflow call it):
#   ctl-migration.<platform>.node          the client (the root crate: src/ over crates/core)
#   ctl-migration-testing.<platform>.node  the worker simulator (crates/simulator; its napi config
#                                          is testing/package.json's)
#
#   scripts/build-addons.sh OUT_DIR [--target TRIPLE] [--cross-compile] [--debug] [--loader] [-- CARGO_ARGS…]
# --loader: also the native loader (OUT_DIR/napi-loader.js) and the bindings' types, and the
# simulator where the testing package's loader looks (testing/lib/addon/), as a checkout has
# them. Without it: both binaries in OUT_DIR, and nothing else (the loader is the same for every
# target).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
OUT_DIR=${1:?usage: build-addons.sh OUT_DIR [--target TRIPLE] [--cross-compile] [--debug] [--loader] [-- CARGO_ARGS…]}
shift
NAPI_ARGS=(--platform)
PROFILE=(--release)
LOADER=0
while [ $# -gt 0 ]; do
  case "$1" in
    --target) NAPI_ARGS+=(--target "${2:?--target needs a triple}"); shift ;;
    --cross-compile) NAPI_ARGS+=(--cross-compile) ;;
    --debug) PROFILE=() ;;
    --loader) LOADER=1 ;;
    --) shift; break ;;
    *) fail "unknown option $1" ;;
  esac
  shift
done
# --locked: the crates Cargo.lock names, never a newer one resolved on the day.
NAPI_ARGS+=(${PROFILE[@]+"${PROFILE[@]}"} -- --locked "$@")
ensure_node_modules
mkdir -p "$OUT_DIR"

# build OUT_DIR DTS JS_ARG NAPI_ARGS…: one addon; without --loader its types are thrown away.
build() {
  local out=$1 dts=$2 js=$3
  shift 3
  if [ "$LOADER" = 1 ]; then
    node_modules/.bin/napi build "$@" --output-dir "$out" "$js" --dts "$dts" "${NAPI_ARGS[@]}"
  else
    node_modules/.bin/napi build "$@" --output-dir "$out" --no-js --dts "$dts.build.d.ts" "${NAPI_ARGS[@]}"
    rm -f "$out/$dts.build.d.ts"
  fi
}
build "$OUT_DIR" binding.d.ts --js=napi-loader.js
TESTING_OUT=$OUT_DIR
[ "$LOADER" = 0 ] || TESTING_OUT=testing/lib/addon
build "$TESTING_OUT" testing-binding.d.ts --no-js --manifest-path crates/simulator/Cargo.toml --package-json-path testing/package.json
