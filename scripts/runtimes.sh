#!/usr/bin/env bash
# The runtime matrix: the smoke suite (smoke/run.mjs) under Node 20, 22, 24, 26, Bun and Deno,
# each installed from the npm registry (node@22, bun, deno, ...) into ~/.cache/ctl-migration/runtimes/.
#
#   scripts/runtimes.sh                 # the whole matrix
#   scripts/runtimes.sh node20 bun      # some of it
#
# Uses the addon built in this checkout (`npm run build`, run here if there is none), or the one
# BINARY names (e.g. BINARY=target/cross/out/ctl-migration.linux-x64-gnu.node). FLAVOR=wasm runs
# the client on its WebAssembly build instead (NAPI_RS_FORCE_WASI=error; the kit stays native).
# Prints one line per runtime and fails if any runtime failed, except Deno, whose Node-API
# support is reported but not required (STRICT_DENO=1 requires it too).
set -euo pipefail
cd "$(dirname "$0")/.."
RT_DIR=${RUNTIMES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ctl-migration/runtimes}
ALL=(node20 node22 node24 node26 bun deno)
case "${FLAVOR:-native}" in
  native) ;;
  wasm) export NAPI_RS_FORCE_WASI=error ;;
  *) echo "runtimes.sh: FLAVOR is native or wasm, not $FLAVOR" >&2; exit 2 ;;
esac
if [ "$#" -gt 0 ]; then WANT=("$@"); else WANT=("${ALL[@]}"); fi

[ -d node_modules ] || npm ci --no-audit --no-fund
if [ -n "${BINARY:-}" ]; then
  NAPI_RS_NATIVE_LIBRARY_PATH=$(realpath "$BINARY")
  export NAPI_RS_NATIVE_LIBRARY_PATH
elif ! compgen -G 'lib/addon/ctl-migration.*.node' >/dev/null || [ ! -f lib/addon/ctl-migration.wasm ]; then
  npm run build
fi

declare -A RESULT
status=0
for name in "${WANT[@]}"; do
  bin=$(RUNTIMES_DIR=$RT_DIR scripts/runtime-bin.sh "$name")
  case "$name" in
    deno) cmd=("$bin" run -A smoke/run.mjs) ;;
    *) cmd=("$bin" smoke/run.mjs) ;;
  esac
  version=$("$bin" --version | head -n 1)
  echo "== $name ($version): ${cmd[*]}" >&2
  log="$RT_DIR/$name.log"
  code=0
  timeout 300 "${cmd[@]}" 2>&1 | tee "$log" || code=$? # pipefail: the run's exit code
  summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  RESULT[$name]="$version: ${summary:-no summary} (exit $code)"
  if [ "$code" != 0 ]; then
    if [ "$name" = deno ] && [ "${STRICT_DENO:-0}" != 1 ]; then
      RESULT[$name]+=" — reported, not required"
    else
      status=1
    fi
  fi
done

echo
echo "runtime matrix ($(uname -sm), client build: ${FLAVOR:-native}):"
for name in "${WANT[@]}"; do printf '  %-7s %s\n' "$name" "${RESULT[$name]}"; done
exit "$status"
