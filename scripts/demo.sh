#!/usr/bin/env bash
# The demo on a fresh clone: installs Node deps, builds the addon, runs the handover demo.
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run build
npm run demo
