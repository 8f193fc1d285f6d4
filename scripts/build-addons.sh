#!/usr/bin/env bash
# Builds the package's two native addons for one target with the napi CLI. The one place their
# build command is written: scripts/build.sh, build-linux.sh, build-macos.sh and the release
# workflow call it.
#   ctl-migration.<platform>.node          the client (the root crate: src/ over crates/core)
#   ctl-migration-testing.<platform>.node  the worker simulator (crates/simulator), for the testing
#                                          package (its napi config: testing/package.json)
#
#   scripts/build-addons.sh OUT_DIR [--target TRIPLE] [--cross-compile] [--debug] [--client-only]
#                                   [--loader] [-- CARGO_ARGS…]
# --loader also writes the native loader (OUT_DIR/napi-loader.js) and the bindings' types
# (binding.d.ts; testing-binding.d.ts), and puts the simulator's binary and types in the testing
# package's testing/lib/addon/, where its loader looks: what a checkout uses. Without it both
# binaries land in OUT_DIR, and no JavaScript and no types (the loader does not depend on the
# target).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:?usage: build-addons.sh OUT_DIR [--target TRIPLE] [--cross-compile] [--debug] [--client-only] [--loader] [-- CARGO_ARGS…]}
shift
NAPI_ARGS=(--platform)
PROFILE=(--release)
TESTING=1
LOADER=0
while [ $# -gt 0 ]; do
  case "$1" in
    --target) NAPI_ARGS+=(--target "${2:?--target needs a triple}"); shift ;;
    --cross-compile) NAPI_ARGS+=(--cross-compile) ;;
    --debug) PROFILE=() ;;
    --client-only) TESTING=0 ;;
    --loader) LOADER=1 ;;
    --) shift; break ;;
    *) echo "build-addons.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
NAPI_ARGS+=(${PROFILE[@]+"${PROFILE[@]}"} -- "$@")
NAPI=node_modules/.bin/napi
[ -x "$NAPI" ] || npm ci --no-audit --no-fund
mkdir -p "$OUT_DIR"

# One addon. With --loader its types stay (and the client's loader); otherwise a throwaway types
# file, and no JavaScript.
build() {
  local out=$1 dts=$2 js=$3
  shift 3
  if [ "$LOADER" = 1 ]; then
    "$NAPI" build "$@" --output-dir "$out" "$js" --dts "$dts" "${NAPI_ARGS[@]}"
  else
    "$NAPI" build "$@" --output-dir "$out" --no-js --dts "$dts.build.d.ts" "${NAPI_ARGS[@]}"
    rm -f "$out/$dts.build.d.ts"
  fi
}

build "$OUT_DIR" binding.d.ts --js=napi-loader.js
if [ "$TESTING" = 1 ]; then
  TESTING_OUT=$OUT_DIR
  [ "$LOADER" = 1 ] && TESTING_OUT=testing/lib/addon
  build "$TESTING_OUT" testing-binding.d.ts --no-js --manifest-path crates/simulator/Cargo.toml --package-json-path testing/package.json
fi
