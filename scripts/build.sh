#!/usr/bin/env bash
# Builds what a checkout's loaders load, in each package's lib/addon/: the client's addon
# (ctl-migration.<platform>.node), the simulator's (testing/lib/addon/ctl-migration-testing.
# <platform>.node), with the native loader (napi-loader.js) and the bindings' types, all through
# scripts/build-addons.sh; the client's WebAssembly fallback (ctl-migration.wasm: crates/wasm,
# run by lib/addon/wasm.js); and the client's entries (scripts/bundle-glue.mjs).
#   scripts/build.sh               release
#   scripts/build.sh --debug       debug (faster to build, for iterating)
#   scripts/build.sh --wasm-only   release, the WebAssembly module only (a release's native
#                                  binaries come from each target's own build)
set -euo pipefail
cd "$(dirname "$0")/.."

PROFILE=(--release)
PROFILE_DIR=release
DEBUG_FLAG=()
NATIVE=1
for arg in "$@"; do
  case "$arg" in
    --debug) PROFILE=() PROFILE_DIR=debug DEBUG_FLAG=(--debug) ;;
    --wasm-only) NATIVE=0 ;;
    *) echo "build.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
NAPI=node_modules/.bin/napi
[ -x "$NAPI" ] || npm ci --no-audit --no-fund
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

if [ "$NATIVE" = 1 ]; then
  scripts/build-addons.sh lib/addon --loader ${DEBUG_FLAG[@]+"${DEBUG_FLAG[@]}"}
fi
# wasm32-unknown-unknown, not wasm32-wasip1: the binding needs no files, clock, environment or
# threads, so the module imports nothing and runs on `WebAssembly` alone (no WASI shim to load).
cargo build --locked -p ctl-migration-wasm --target wasm32-unknown-unknown ${PROFILE[@]+"${PROFILE[@]}"}
cp "target/wasm32-unknown-unknown/$PROFILE_DIR/ctl_migration_wasm.wasm" lib/addon/ctl-migration.wasm
node scripts/bundle-glue.mjs
