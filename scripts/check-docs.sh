#!/usr/bin/env bash
# The docs as CI checks them (CONTRIBUTING.md, "Docs"): every code block in the tracked Markdown
# is its file's text (scripts/doc-examples.mjs) and those files type-check (docs/examples); every
# relative link and #anchor resolves (remark-validate-links, offline, .remarkrc.json); the API
# reference builds with every export and member documented (typedoc, its warnings errors).
# OUT=DIR keeps the reference there (default target/api-docs).
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/doc-examples.mjs
npx tsc -p docs/examples
git ls-files -z '*.md' | xargs -0 npx remark --quiet --frail --no-stdout
npm run --silent docs -- --out "${OUT:-target/api-docs}" --logLevel Warn
