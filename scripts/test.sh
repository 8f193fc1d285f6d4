#!/usr/bin/env bash
# The whole test suite on a fresh clone: installs Node deps (and Node 22 and Bun from the npm
# registry), builds the addons (native client, testing kit, WebAssembly fallback), runs every
# test: the Rust crates' unit tests, the type checks, the docs' checks (examples, links, the API
# reference), the vitest suites on the native build (the docs' complete examples among them), the
# client's suites again on the WebAssembly build under Node 20 and Node 22, the testing kit's
# recipes (vitest, jest, node:test, bun test), and the runtime smoke suite on both builds, and
# under Bun on both (Bun has no libuv: there the native client's own thread reads the socket all
# the time, the path Node takes while its JavaScript is busy).
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run build
cargo test --workspace --locked
npx tsc -p tsconfig.json
npx tsc -p tsconfig.lib.json && npx tsc -p testing/tsconfig.json
# A product's test code against the public types alone: strict, exactOptionalPropertyTypes, no @types/node.
npx tsc -p __test__/types/no-node
# The docs: each code example is its file's text and type-checks, every relative link and #anchor
# resolves, and the API reference builds with every export documented (about 15 s).
./scripts/check-docs.sh
npx vitest run
# ctl-migration, run with npx from the package installed out of packed tarballs; its report test
# renders the page in headless Chromium from Debian's packages (installed here, as root).
command -v chromium >/dev/null || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; }
npx vitest run -c vitest.cli.config.mjs
npx vitest run -c vitest.wasm.config.mjs
"$(scripts/runtime-bin.sh node22)" node_modules/vitest/vitest.mjs run -c vitest.wasm.config.mjs
node smoke/run.mjs
NAPI_RS_FORCE_WASI=error node smoke/run.mjs
# The testing kit's recipes in docs/testing.md, each under its runner: vitest, jest (CommonJS and
# ESM), node:test, bun test.
testing/recipes/run.sh
scripts/runtimes.sh bun
FLAVOR=wasm scripts/runtimes.sh bun
