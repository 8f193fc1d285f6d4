#!/usr/bin/env bash
# Builds the packages' artifacts where their loaders look first, lib/addon/ of each package:
#   ctl-migration.<platform>.node          the client (src/, over crates/core): the production addon
#   testing/lib/addon/ctl-migration-testing.<platform>.node
#                                          the worker simulator (crates/simulator): the testing
#                                          package's
#   ctl-migration.wasm32-wasip1.wasm       the client's WebAssembly fallback (the same binding,
#                                          without the native transport)
#   wasm-runtime.js                        what runs that module (emnapi, bundled as CommonJS by
#                                          scripts/bundle-wasm-runtime.mjs)
# and the client's entries, its JavaScript glue bundled into one file each
# (lib/client.bundle.js, lib/client.bundle.mjs: scripts/bundle-glue.mjs),
# and regenerates the native loader (lib/addon/napi-loader.js) and the binding's types.
#   scripts/build.sh               release
#   scripts/build.sh --debug       debug (faster to build, for iterating)
#   scripts/build.sh --wasm-only   release, the WebAssembly module only (what a release publishes
#                                  in the root package; the native binaries come from each target's
#                                  own build, scripts/build-linux.sh for Linux)
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE=(--release)
DEBUG_FLAG=()
NATIVE=1
for arg in "$@"; do
  case "$arg" in
    --debug) PROFILE=() DEBUG_FLAG=(--debug) ;;
    --wasm-only) NATIVE=0 ;;
    *) echo "build.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
NAPI=node_modules/.bin/napi
[ -x "$NAPI" ] || npm ci --no-audit --no-fund
rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1

if [ "$NATIVE" = 1 ]; then
  scripts/build-addons.sh lib/addon --loader ${DEBUG_FLAG[@]+"${DEBUG_FLAG[@]}"}
fi
# napi-rs emits its own WASI loaders beside the .wasm; lib/addon/wasi.js replaces them (it also
# runs on Bun), so only the module itself is kept.
WASM_OUT=target/wasm-out
rm -rf "$WASM_OUT"
"$NAPI" build --platform "${PROFILE[@]}" --target wasm32-wasip1 --output-dir "$WASM_OUT" --no-js \
  --dts binding.d.ts
cp "$WASM_OUT/ctl-migration.wasm32-wasip1.wasm" lib/addon/
node scripts/bundle-wasm-runtime.mjs
node scripts/bundle-glue.mjs
