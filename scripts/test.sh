#!/usr/bin/env bash
# The whole test suite on a fresh clone: installs Node deps, builds the addon, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run build
cargo test
npx tsc -p tsconfig.json
npx vitest run
