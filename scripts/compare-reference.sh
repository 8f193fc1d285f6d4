#!/usr/bin/env bash
# Developer command, not a CI step: runs the product-style fake-socket suite
# (__test__/js-socket.test.ts) against the JavaScript reference client and then against this
# package, so a pass on both shows the `opts.WebSocket` path behaves like the reference.
#
#   scripts/compare-reference.sh                 # install the reference into a temp dir, run both
#   scripts/compare-reference.sh -t backoff      # extra arguments go to vitest
#   REFERENCE_DIR=/tmp/ref scripts/compare-reference.sh   # reuse (or create) an install there
#
# Needs the reference kit next to the repository: ../shared/reference/install.sh (it copies the
# reference client and npm-installs its dependencies). The project's own tests never need it.
set -euo pipefail
cd "$(dirname "$0")/.."

install=../shared/reference/install.sh
[ -f "$install" ] || { echo "compare-reference: needs the JavaScript reference kit beside the repository ($install); the project's own tests do not (npm test)" >&2; exit 2; }

if [ -n "${REFERENCE_DIR:-}" ] && [ -f "$REFERENCE_DIR/migration-client.js" ] && [ -d "$REFERENCE_DIR/node_modules" ]; then
  dir=$REFERENCE_DIR
else
  echo "== installing the reference client${REFERENCE_DIR:+ into $REFERENCE_DIR}"
  dir=$(bash "$install" ${REFERENCE_DIR:+"$REFERENCE_DIR"})
  if [ -z "${REFERENCE_DIR:-}" ]; then trap 'rm -rf "$dir"' EXIT; fi
fi

if ! ls lib/addon/ctl-migration.*.node >/dev/null 2>&1; then
  echo "== building the addons (debug)"
  npm run build:debug
fi

status=0
echo "== __test__/js-socket.test.ts against the reference: $dir/migration-client.js"
MIGRATION_MODULE="$dir/migration-client.js" npx vitest run __test__/js-socket.test.ts "$@" || status=1
echo "== __test__/js-socket.test.ts against this package"
npx vitest run __test__/js-socket.test.ts "$@" || status=1

if [ "$status" -eq 0 ]; then echo "compare-reference: the suite passes against both implementations"; else echo "compare-reference: FAILED (see above for which)" >&2; fi
exit "$status"
