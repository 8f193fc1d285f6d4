#!/usr/bin/env bash
# Prints the path of a runtime's binary, installing it from the npm registry first if it is not
# in RUNTIMES_DIR yet (default ~/.cache/ctl-migration/runtimes: kept, like npm's own cache, across
# clones and CI runs on one machine):
#   scripts/runtime-bin.sh node20|node22|node24|node26|bun|deno   the newest of that line
#   scripts/runtime-bin.sh node@20.0.0                              one exact Node release
# Hand-written: no version manager (nvm, volta) fetches from the npm registry, this machine's one source.
set -euo pipefail
RT_DIR=${RUNTIMES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ctl-migration/runtimes}
name=${1:?usage: runtime-bin.sh node20|node22|node24|node26|node@X.Y.Z|bun|deno}
case "$name" in
  node20 | node22 | node24 | node26) spec="node@${name#node}" bin=node/bin/node ;;
  node@[0-9]*.[0-9]*.[0-9]*) spec=$name name="node-${name#node@}" bin=node/bin/node ;;
  bun) spec=bun@1 bin=bun/bin/bun.exe ;;
  deno) spec=deno@2 bin=deno/deno ;;
  *) echo "runtime-bin.sh: unknown runtime $name" >&2; exit 2 ;;
esac
bin=$RT_DIR/$name/node_modules/$bin
if [ ! -x "$bin" ]; then
  echo "== install $spec" >&2
  npm install --prefix "$RT_DIR/$name" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$spec" >&2
fi
echo "$bin"
