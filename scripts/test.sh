#!/usr/bin/env bash
# The whole test suite on a fresh clone: installs Node deps, builds the addons (native client,
# testing kit, WebAssembly fallback), runs every test: the Rust crates' unit tests, the type
# checks, the vitest suites on the native build, and the client's suites again on the
# WebAssembly build.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run build
cargo test --workspace
npx tsc -p tsconfig.json
npx vitest run
npx vitest run -c vitest.wasm.config.mjs
