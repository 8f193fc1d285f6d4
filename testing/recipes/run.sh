#!/usr/bin/env bash
# Runs the recipes of docs/testing.md as a product's suite runs them: the package as `npm pack`
# makes it, unpacked into testing/recipes/node_modules with this checkout's built binaries (run
# `npm run build` first), and each recipe under its own runner — vitest, jest (CommonJS, and ESM
# under --experimental-vm-modules), node:test, and bun test (Bun from scripts/runtime-bin.sh).
# docs/testing.md links each recipe and shows vitest.test.ts's fixture region (checked by
# scripts/doc-examples.mjs).
#   testing/recipes/run.sh            # all five
#   testing/recipes/run.sh vitest     # some: vitest jest jest-esm node-test bun
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
recipes=$root/testing/recipes
declare -A FILE=([vitest]=vitest.test.ts [jest]=jest.test.cjs [jest-esm]=jest-esm.test.mjs [node-test]=node-test.test.mjs [bun]=bun.test.ts)
if [ "$#" -gt 0 ]; then WANT=("$@"); else WANT=(vitest jest jest-esm node-test bun); fi

for name in "${WANT[@]}"; do
  : "${FILE[$name]:?unknown recipe $name: vitest jest jest-esm node-test bun}"
done

# The two packages as a product installs them: the client and the testing package, each with
# this checkout's binary where its platform package would put it.
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$recipes/node_modules"
for pkg in . testing; do
  name=$(node -p "require('./$pkg/package.json').name")
  installed=$recipes/node_modules/$name
  mkdir -p "$installed"
  tarball=$(cd "$pkg" && npm pack --silent --pack-destination "$stage")
  tar -xzf "$stage/$tarball" -C "$installed" --strip-components=1
  cp "$pkg"/lib/addon/*.node "$installed/lib/addon/"
done

declare -A RESULT
status=0
for name in "${WANT[@]}"; do
  file=${FILE[$name]}
  echo "== recipe $name: $file" >&2
  set +e
  case "$name" in
    vitest) (cd "$recipes" && "$root/node_modules/.bin/vitest" run "$file") ;;
    jest) (cd "$recipes" && node "$root/node_modules/jest/bin/jest.js" --rootDir . "$file") ;;
    jest-esm) (cd "$recipes" && node --experimental-vm-modules "$root/node_modules/jest/bin/jest.js" --rootDir . "$file") ;;
    node-test) (cd "$recipes" && node --test "$file") ;;
    bun) (cd "$recipes" && "$("$root/scripts/runtime-bin.sh" bun)" test "./$file") ;;
  esac
  code=$?
  set -e
  RESULT[$name]=$([ "$code" = 0 ] && echo passed || echo "FAILED (exit $code)")
  [ "$code" = 0 ] || status=1
done

echo
echo "recipes:"
for name in "${WANT[@]}"; do printf '  %-9s %s\n' "$name" "${RESULT[$name]}"; done
exit "$status"
