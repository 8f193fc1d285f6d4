#!/usr/bin/env bash
# A release, rehearsed through a real registry on this machine:
#   1. builds every package as a release does: the Linux binaries, client and testing addon, with
#      scripts/build-linux.sh (cargo-zigbuild, glibc 2.17), the macOS ones with
#      scripts/build-macos.sh (cross-linked, the release workflow's command too), the WebAssembly
#      fallback with scripts/build.sh --wasm-only;
#   2. starts Verdaccio on 127.0.0.1 (a free port; config and storage in a temporary directory;
#      the package's own names are served only from what is published here, everything else is
#      proxied from the npm registry) and publishes the release to it with scripts/publish.sh,
#      the script the release workflow publishes with (napi prepublish, then npm publish), at a
#      version 0.1.0-rehearsal.<unix time> set in its staged copy, never in package.json;
#   3. fetches every package back from the registry and checks it (scripts/rehearsal/
#      check-registry.mjs): no `file:` spec in any published package.json, the binaries are the
#      ones built, the root package carries the WebAssembly build;
#   4. installs @norskvideo/ctl-migration and @norskvideo/ctl-migration-testing by name into
#      fresh product directories, outside the repository, with no Rust on PATH and a fresh HOME,
#      with npm, pnpm, Yarn berry (PnP, its
#      default) and Bun, and in each: which platform package and which build the product got, an
#      ESM and a CommonJS product through a handover against the testing kit, `tsc --strict`
#      over every exported type (smoke/product/);
#      and with npm two more ways: `npm ci` from a lockfile made for darwin-arm64
#      (`npm install --package-lock-only --os=darwin --cpu=arm64`), and `--omit=optional` (the
#      WebAssembly fallback, from the registry);
#   5. runs `npx -p @norskvideo/ctl-migration-testing ctl-migration handover` from the registry in
#      a product that has only the client;
#   6. prints a table, package manager × check, and exits 1 on any ✗.
#
#   scripts/release-rehearsal.sh                          # the four Linux and two macOS targets
#   REHEARSAL_TARGETS=host scripts/release-rehearsal.sh   # x86_64-unknown-linux-gnu only (CI)
#   REHEARSAL_TARGETS="x86_64-unknown-linux-gnu aarch64-apple-darwin" …    # any of those six
#   REHEARSAL_ARTIFACTS=dir scripts/release-rehearsal.sh  # no build: binaries and .wasm from dir
#                                                         # (the release workflow's artifacts:
#                                                         # all eight platforms, no placeholders
#                                                         # unless REHEARSAL_PLACEHOLDERS=1)
#   KEEP=1 …                                              # keep the temporary directory
#
# Platforms with no binary built (win32 always: MSVC cannot be built here, and the mingw build of
# scripts/test-windows.sh is not what those packages ship; the others when REHEARSAL_TARGETS
# leaves them out) are published with their real package.json and a text placeholder for each
# binary (publish.sh PLACEHOLDERS=1, refused for any registry not on loopback): all eight names
# exist as in a release, so each manager resolves them and skips them by os/cpu as it will on
# release day. (Leaving them out is not an option: Yarn berry fails an install on an optional
# dependency the registry does not have.)
#
# Installs what it needs, pinned: Verdaccio 6.8.0, pnpm 12.4.2 and Yarn 4.18.1 from
# scripts/rehearsal/package-lock.json into target/rehearsal/tools; Bun with scripts/runtime-bin.sh;
# the build tools through build-linux.sh and build.sh. The package caches keyed by content or by
# name@version survive between runs: npm's usual cache (as in install-path.sh), pnpm's store and
# Yarn's cache in target/rehearsal/cache; those keyed by the registry's URL (a new port each run)
# are per run: pnpm's and Yarn's metadata, Bun's cache. Every run publishes a new version, so no
# cache can hand a product an earlier run's package.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
T0=$SECONDS
TYPESCRIPT_VERSION=${TYPESCRIPT_VERSION:-5.9}
HOST_TARGET=x86_64-unknown-linux-gnu
HOST_PLATFORM="linux-x64-gnu"
PKG=@norskvideo/ctl-migration
say() { printf '\n== %s\n' "$*" >&2; }
fail() { echo "release-rehearsal.sh: $*" >&2; exit 1; }
phases=()
phase_start=$SECONDS
phase() { phases+=("$1 $((SECONDS - phase_start)) s"); phase_start=$SECONDS; }

[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || fail "runs on x86_64 Linux (the binaries it builds and runs are $HOST_PLATFORM)"
case "${REHEARSAL_TARGETS:-all}" in
  all) TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl
    x86_64-apple-darwin aarch64-apple-darwin) ;;
  host) TARGETS=("$HOST_TARGET") ;;
  *) read -r -a TARGETS <<<"$REHEARSAL_TARGETS" ;;
esac
BASE_VERSION=$(node -p 'require("./package.json").version.replace(/-.*/, "")')
VERSION=${REHEARSAL_VERSION:-$BASE_VERSION-rehearsal.$(date -u +%s)}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-rehearsal.XXXXXX")
VERDACCIO_PID=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  if [ -n "$VERDACCIO_PID" ] && kill -0 "$VERDACCIO_PID" 2>/dev/null; then
    kill "$VERDACCIO_PID" 2>/dev/null || true
    wait "$VERDACCIO_PID" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$TMP/artifacts" "$TMP/products" "$TMP/tmp"
echo "version $VERSION, targets ${REHEARSAL_ARTIFACTS:+(prebuilt in $REHEARSAL_ARTIFACTS) }${TARGETS[*]}, in $TMP" >&2

# ── tools ────────────────────────────────────────────────────────────────────
say "tools"
[ -d node_modules ] || npm ci --no-audit --no-fund
TOOLS=$ROOT/target/rehearsal/tools
CACHE=${REHEARSAL_CACHE:-$ROOT/target/rehearsal/cache}
mkdir -p "$TOOLS" "$CACHE"
if ! cmp -s scripts/rehearsal/package-lock.json "$TOOLS/package-lock.json" || [ ! -x "$TOOLS/node_modules/.bin/verdaccio" ]; then
  cp scripts/rehearsal/package.json scripts/rehearsal/package-lock.json "$TOOLS/"
  (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error)
fi
VERDACCIO=$TOOLS/node_modules/verdaccio/bin/verdaccio
PNPM=$TOOLS/node_modules/.bin/pnpm
YARN=$TOOLS/node_modules/.bin/yarn
BUN=$(scripts/runtime-bin.sh bun)
NPM_VERSION=$(npm --version)
PNPM_VERSION=$("$PNPM" --version)
YARN_VERSION=$("$YARN" --version)
BUN_VERSION=$("$BUN" --version)
VERDACCIO_VERSION=$(node -p 'require(process.argv[1]).version' "$TOOLS/node_modules/verdaccio/package.json")
echo "node $(node --version), npm $NPM_VERSION, pnpm $PNPM_VERSION, yarn $YARN_VERSION, bun $BUN_VERSION, verdaccio $VERDACCIO_VERSION" >&2
phase tools

# ── build ────────────────────────────────────────────────────────────────────
if [ -n "${REHEARSAL_ARTIFACTS:-}" ]; then
  say "artifacts from $REHEARSAL_ARTIFACTS"
  cp -r "$REHEARSAL_ARTIFACTS"/. "$TMP/artifacts/"
else
  say "build: ${TARGETS[*]}"
  # The scripts' own output directory (an OUT_DIR in cargo's environment would rebuild ring).
  OUT=${CARGO_TARGET_DIR:-$ROOT/target/cross}/out
  linux=() macos=() platforms=()
  for t in "${TARGETS[@]}"; do
    case "$t" in
      x86_64-unknown-linux-gnu) platforms+=("linux-x64-gnu") linux+=("$t") ;;
      aarch64-unknown-linux-gnu) platforms+=("linux-arm64-gnu") linux+=("$t") ;;
      x86_64-unknown-linux-musl) platforms+=("linux-x64-musl") linux+=("$t") ;;
      aarch64-unknown-linux-musl) platforms+=("linux-arm64-musl") linux+=("$t") ;;
      x86_64-apple-darwin) platforms+=("darwin-x64") macos+=("$t") ;;
      aarch64-apple-darwin) platforms+=("darwin-arm64") macos+=("$t") ;;
      *) fail "not a target built here: $t" ;;
    esac
  done
  [ "${#linux[@]}" -eq 0 ] || env -u OUT_DIR scripts/build-linux.sh "${linux[@]}"
  [ "${#macos[@]}" -eq 0 ] || env -u OUT_DIR scripts/build-macos.sh "${macos[@]}"
  scripts/build.sh --wasm-only
  # This run's binaries only: target/cross/out may hold other targets from earlier runs.
  for p in "${platforms[@]}"; do
    cp "$OUT/ctl-migration.$p.node" "$OUT/ctl-migration-testing.$p.node" "$TMP/artifacts/"
  done
  cp lib/addon/ctl-migration.wasm "$TMP/artifacts/"
fi
ls -l "$TMP/artifacts" >&2
phase build

# ── registry ─────────────────────────────────────────────────────────────────
say "registry"
REG=$TMP/registry
mkdir -p "$REG/storage"
cat >"$REG/config.yaml" <<EOF
# The rehearsal's registry: this package's names only from what the rehearsal publishes (no
# uplink, so nothing of a real release can stand in for it), all else proxied from npm.
storage: $REG/storage
auth:
  htpasswd:
    file: $REG/htpasswd
    max_users: 1
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 60s
packages:
  '@norskvideo/*':
    access: \$all
    publish: \$authenticated
  '**':
    access: \$all
    publish: \$authenticated
    proxy: npmjs
log: { type: stdout, format: pretty, level: warn }
EOF
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })'; }
# Waits until the registry answers its ping (or the process died, or 60 s passed).
registry_up() {
  local deadline=$((SECONDS + 60))
  until node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$1/-/ping"; do
    kill -0 "$VERDACCIO_PID" 2>/dev/null || return 1
    [ "$SECONDS" -lt "$deadline" ] || { echo "verdaccio did not answer within 60 s" >&2; return 1; }
    sleep 0.1 # between polls
  done
}
for attempt in 1 2 3; do
  PORT=$(free_port)
  REGISTRY=http://127.0.0.1:$PORT
  node "$VERDACCIO" --config "$REG/config.yaml" --listen "127.0.0.1:$PORT" >"$REG/verdaccio.log" 2>&1 &
  VERDACCIO_PID=$!
  if registry_up "$REGISTRY"; then break; fi
  kill "$VERDACCIO_PID" 2>/dev/null || true
  wait "$VERDACCIO_PID" 2>/dev/null || true
  VERDACCIO_PID=
  cat "$REG/verdaccio.log" >&2
  [ "$attempt" -lt 3 ] || fail "verdaccio did not start"
done
echo "verdaccio $VERDACCIO_VERSION at $REGISTRY (pid $VERDACCIO_PID)" >&2
# A publisher account, as `npm adduser` makes one; its token goes into the publisher's npmrc only.
# shellcheck disable=SC2016 # JavaScript, not shell
TOKEN=$(node -e '
  fetch(`${process.argv[1]}/-/user/org.couchdb.user:rehearsal`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "rehearsal", password: require("crypto").randomBytes(16).toString("hex") }),
  }).then(async (r) => { const body = await r.json(); if (!body.token) throw new Error(JSON.stringify(body)); console.log(body.token) })' "$REGISTRY")
printf 'registry=%s/\n//127.0.0.1:%s/:_authToken=%s\n' "$REGISTRY" "$PORT" "$TOKEN" >"$TMP/publisher.npmrc"
phase registry

# A clean environment: node and the system on PATH (no cargo, no rustc, not the repository's
# tools), a fresh HOME; npm's cache set back to the usual one, as install-path.sh does.
NODE_DIR=$(dirname "$(command -v node)")
NPM_CACHE=$(npm config get cache)
run() {
  env -i PATH="$NODE_DIR:/usr/bin:/bin" HOME="$TMP/home" TMPDIR="$TMP/tmp" LANG=C.UTF-8 \
    npm_config_cache="$NPM_CACHE" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false \
    BUN_INSTALL_CACHE_DIR="$TMP/bun-cache" "$@"
}
mkdir -p "$TMP/home"
if run sh -c 'command -v cargo || command -v rustc'; then fail "a Rust toolchain is on the clean PATH"; fi

# ── publish ──────────────────────────────────────────────────────────────────
say "publish (scripts/publish.sh)"
manifests() { cat package.json npm/*/package.json testing/package.json testing/npm/*/package.json | sha256sum; }
before=$(manifests)
# Built here: placeholders for what this machine does not build. The workflow's artifacts: none.
PLACEHOLDERS=${REHEARSAL_PLACEHOLDERS:-$([ -n "${REHEARSAL_ARTIFACTS:-}" ] && echo 0 || echo 1)}
run env NPM_CONFIG_USERCONFIG="$TMP/publisher.npmrc" STAGE="$TMP/stage" VERSION="$VERSION" DIST_TAG=latest PLACEHOLDERS="$PLACEHOLDERS" \
  "$ROOT/scripts/publish.sh" "$TMP/artifacts"
[ "$(manifests)" = "$before" ] || fail "publishing changed the repository's package.json files"
phase publish

say "the published packages, fetched back"
registry_status=0
run node scripts/rehearsal/check-registry.mjs "$REGISTRY" "$VERSION" "$TMP/artifacts" "$TMP/fetched" >"$TMP/registry-table.txt" || registry_status=1
cat "$TMP/registry-table.txt" >&2
phase fetch-back

# ── products ─────────────────────────────────────────────────────────────────
# One product directory per way of installing, each with the smoke/product files and the
# configuration a product would have to use this registry. Fresh releases are quarantined by
# default by pnpm 12 (minimumReleaseAge) and Yarn 4.18 (npmMinimalAgeGate, one day): the
# products exempt this package's scope, as a product taking a release on its first day must.
product() {
  local dir=$TMP/products/$1
  mkdir -p "$dir/smoke"
  cp -r smoke/product "$dir/smoke/product"
  printf '{ "name": "a-product-%s", "version": "1.0.0", "private": true }\n' "$1" >"$dir/package.json"
  printf 'registry=%s/\n' "$REGISTRY" >"$dir/.npmrc"
  echo "$dir"
}
declare -A CELL
rows=()
status=0
mark() { # row column ok|fail|text
  CELL[$1.$2]=$3
  [ "$3" != "✗" ] || status=1
}
# check ROW COLUMN DIR command…: runs it there in the clean environment, logs it, marks the cell.
check() {
  local row=$1 col=$2 dir=$3
  shift 3
  echo "-- $row / $col: $*" >&2
  if (cd "$dir" && run "$@") >>"$TMP/products/$row.log" 2>&1; then mark "$row" "$col" ✓; else
    mark "$row" "$col" ✗
    tail -n 20 "$TMP/products/$row.log" | sed "s/^/   [$row] /" >&2
  fi
}
# installed ROW DIR EXPECTED_BUILD runtime…: the install cell (version, platform packages) and the
# build cell, from smoke/product/installed.cjs run with that runtime.
installed() {
  local row=$1 dir=$2 want=$3
  shift 3
  local out
  if ! out=$(cd "$dir" && run env KIT_DIR="$TMP/products/npm" "$@" smoke/product/installed.cjs 2>>"$TMP/products/$row.log"); then
    mark "$row" install ✗
    mark "$row" build ✗
    tail -n 20 "$TMP/products/$row.log" | sed "s/^/   [$row] /" >&2
    return
  fi
  echo "   $out" >&2
  # shellcheck disable=SC2016 # JavaScript, not shell
  node -e '
    const got = JSON.parse(process.argv[1]), [version, want, pkg, platform] = process.argv.slice(2)
    // The host platform package only; none when the optional dependencies were left out.
    const installOk = got.version === version && JSON.stringify(got.platformPackages) === JSON.stringify(want === "wasm" ? [] : [pkg])
    // Native: loaded from the host platform package inside the product.
    const buildOk = got.build === "native"
      ? want !== "wasm" && !require("path").isAbsolute(got.client) && got.client.endsWith(`${pkg}/ctl-migration.${platform}.node`)
      : got.build === "wasm" && want !== "native"
    console.log(`${installOk ? "✓" : "✗"} ${got.build}${buildOk ? "" : "✗"}`)' \
    "$out" "$VERSION" "$want" "$PKG-$HOST_PLATFORM" "$HOST_PLATFORM" >"$TMP/cells"
  read -r inst build <"$TMP/cells"
  mark "$row" install "$inst"
  mark "$row" build "$build"
}
# A manager's install of the package by name, then the four checks with its runtime.
#   manager ROW INSTALL_COMMAND… -- RUNTIME… -- TSC…
manager() {
  local row=$1
  shift
  local install=() runtime=() tsc=()
  while [ "$1" != -- ]; do install+=("$1"); shift; done
  shift
  while [ "$1" != -- ]; do runtime+=("$1"); shift; done
  shift
  tsc=("$@")
  local dir=$TMP/products/$row
  rows+=("$row")
  say "$row: $(basename "${install[0]}") ${install[*]:1}"
  if ! (cd "$dir" && run "${install[@]}") >>"$TMP/products/$row.log" 2>&1; then
    tail -n 30 "$TMP/products/$row.log" | sed "s/^/   [$row] /" >&2
    for c in install build esm cjs tsc; do mark "$row" "$c" ✗; done
    return
  fi
  installed "$row" "$dir" native "${runtime[@]}"
  check "$row" esm "$dir" "${runtime[@]}" smoke/product/handover.mjs
  check "$row" cjs "$dir" "${runtime[@]}" smoke/product/handover.cjs
  check "$row" tsc "$dir" "${tsc[@]}" -p smoke/product/tsconfig.json
}
DEPS=("$PKG" "$PKG-testing" "typescript@$TYPESCRIPT_VERSION" "@types/node@20")

dir=$(product npm)
manager npm npm install --no-audit --no-fund --loglevel=error "${DEPS[@]}" \
  -- node -- node_modules/.bin/tsc
phase npm

dir=$(product pnpm)
cat >"$dir/pnpm-workspace.yaml" <<EOF
storeDir: $CACHE/pnpm-store
cacheDir: $TMP/pnpm-cache
minimumReleaseAgeExclude:
  - '@norskvideo/*'
EOF
manager pnpm "$PNPM" add "${DEPS[@]}" -- node -- node_modules/.bin/tsc
phase pnpm

dir=$(product yarn)
cat >"$dir/.yarnrc.yml" <<EOF
npmRegistryServer: "$REGISTRY"
unsafeHttpWhitelist: ["127.0.0.1"]
npmPreapprovedPackages: ["@norskvideo/*"]
globalFolder: "$TMP/yarn-global"
enableGlobalCache: false
cacheFolder: "$CACHE/yarn-cache"
enableTelemetry: false
# The product's ESM (.mjs) files import packages through PnP: Yarn generates its ESM loader only
# when it sees "type": "module" somewhere, and neither this product nor the package (which has no
# dependencies) has it. A Yarn PnP product with .mjs files sets this (README, Troubleshooting).
pnpEnableEsmLoader: true
EOF
: >"$dir/yarn.lock"
manager yarn "$YARN" add "${DEPS[@]}" -- "$YARN" node -- "$YARN" tsc
phase yarn

dir=$(product bun)
printf '[install]\nregistry = "%s/"\n' "$REGISTRY" >"$dir/bunfig.toml"
manager bun "$BUN" add "${DEPS[@]}" -- "$BUN" -- "$BUN" node_modules/typescript/bin/tsc
phase bun

# A lockfile made on (for) a Mac, then `npm ci` here: npm 7+ records every platform package in
# it; were the Linux one left out (npm/cli#4828), the client would fall back to WebAssembly.
row="npm ci, darwin-arm64 lockfile"
rows+=("$row")
say "$row"
dir=$(product lockfile)
LOCKROW=$row
cat >"$dir/package.json" <<EOF
{ "name": "a-product-lockfile", "version": "1.0.0", "private": true,
  "dependencies": { "$PKG": "$VERSION", "$PKG-testing": "$VERSION", "typescript": "$TYPESCRIPT_VERSION", "@types/node": "20", "ws": "8" } }
EOF
if (cd "$dir" && run npm install --package-lock-only --os=darwin --cpu=arm64 --loglevel=error && run npm ci --loglevel=error) >>"$TMP/products/$LOCKROW.log" 2>&1; then
  echo "   the lockfile's platform packages: $(node -e 'console.log(Object.keys(require(process.argv[1]).packages).filter((k) => k.includes("ctl-migration-")).map((k) => k.split("ctl-migration-")[1]).join(" "))' "$dir/package-lock.json")" >&2
  installed "$LOCKROW" "$dir" any node
  if [[ ${CELL[$LOCKROW.build]} == wasm* ]]; then
    check "$LOCKROW" esm "$dir" env KIT_DIR="$TMP/products/npm" EXPECT_BUILD=wasm node smoke/product/handover.mjs
    check "$LOCKROW" cjs "$dir" env KIT_DIR="$TMP/products/npm" node smoke/product/handover.cjs
  else
    check "$LOCKROW" esm "$dir" node smoke/product/handover.mjs
    check "$LOCKROW" cjs "$dir" node smoke/product/handover.cjs
  fi
  check "$LOCKROW" tsc "$dir" node_modules/.bin/tsc -p smoke/product/tsconfig.json
else
  tail -n 30 "$TMP/products/$LOCKROW.log" | sed "s/^/   [lockfile] /" >&2
  for c in install build esm cjs tsc; do mark "$LOCKROW" "$c" ✗; done
fi
phase lockfile

# --omit=optional: no platform package; the WebAssembly build from the root package, over `ws`
# (Node 20), the worker from the npm product's testing kit.
row="npm --omit=optional"
rows+=("$row")
say "$row"
dir=$(product omit)
if (cd "$dir" && run npm install --omit=optional --loglevel=error "${DEPS[@]}" ws@8) >>"$TMP/products/$row.log" 2>&1; then
  installed "$row" "$dir" wasm node
  check "$row" esm "$dir" env KIT_DIR="$TMP/products/npm" EXPECT_BUILD=wasm node smoke/product/handover.mjs
  check "$row" cjs "$dir" env KIT_DIR="$TMP/products/npm" node smoke/product/handover.cjs
  check "$row" tsc "$dir" node_modules/.bin/tsc -p smoke/product/tsconfig.json
else
  tail -n 30 "$TMP/products/$row.log" | sed "s/^/   [omit] /" >&2
  for c in install build esm cjs tsc; do mark "$row" "$c" ✗; done
fi
phase omit-optional

# The command line from the registry, as a user runs it without installing the testing package:
# `npx -p @norskvideo/ctl-migration-testing ctl-migration handover` in a product that has only
# the client, handing the CLI suite's product over.
say "npx -p $PKG-testing ctl-migration handover"
dir=$(product npx)
cp __test__/cli/fixtures/product.mjs "$dir/"
NPX_CELL=✗
if (cd "$dir" && run npm install --loglevel=error "$PKG@$VERSION" &&
  run npx --yes -p "$PKG-testing@$VERSION" ctl-migration handover --json -- node product.mjs >"$TMP/products/npx.json") >>"$TMP/products/npx.log" 2>&1 &&
  node -e 'process.exit(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).ok === true ? 0 : 1)' "$TMP/products/npx.json"; then
  NPX_CELL=✓
else
  status=1
  tail -n 20 "$TMP/products/npx.log" | sed "s/^/   [npx] /" >&2
fi
phase npx

# ── table ────────────────────────────────────────────────────────────────────
NODE_VERSION=$(node -p 'process.versions.node')
# Pads to a width in characters (printf counts bytes, and ✓ is three).
pad() {
  local LC_ALL=C.UTF-8
  printf '%s%*s' "$1" $(($2 - ${#1})) ''
}
label() {
  case "$1" in
    npm) echo "npm $NPM_VERSION, Node $NODE_VERSION" ;;
    pnpm) echo "pnpm $PNPM_VERSION, Node $NODE_VERSION" ;;
    yarn) echo "yarn $YARN_VERSION (PnP), Node $NODE_VERSION" ;;
    bun) echo "bun $BUN_VERSION, Bun $BUN_VERSION" ;;
    *) echo "$1" ;;
  esac
}
{
  echo
  echo "release rehearsal: $PKG@$VERSION through verdaccio $VERDACCIO_VERSION at $REGISTRY"
  if [ -n "${REHEARSAL_ARTIFACTS:-}" ]; then echo "binaries: prebuilt, from $REHEARSAL_ARTIFACTS"; else echo "built here: ${TARGETS[*]} (client + testing addon), the WebAssembly build"; fi
  timings=$(printf '%s, ' "${phases[@]}")
  echo "wall time $((SECONDS - T0)) s: ${timings%, }"
  echo
  cat "$TMP/registry-table.txt"
  echo
  W=(36 7 7 12 12 12)
  line() { local out='|' i=0; for c in "$@"; do out+=" $(pad "$c" "${W[$i]}") |"; i=$((i + 1)); done; echo "$out"; }
  line "package manager" install build "ESM handover" "CJS handover" "tsc --strict"
  line "$(printf -- '-%.0s' {1..36})" ------- ------- ------------ ------------ ------------ | tr ' ' -
  for r in "${rows[@]}"; do
    line "$(label "$r")" "${CELL[$r.install]:-✗}" "${CELL[$r.build]:-✗}" "${CELL[$r.esm]:-✗}" "${CELL[$r.cjs]:-✗}" "${CELL[$r.tsc]:-✗}"
  done
  echo
  echo "npx -p $PKG-testing@$VERSION ctl-migration handover, in a product with only the client: $NPX_CELL"
  echo
  echo "build: what a real connection used: native = the $HOST_PLATFORM binary from the product's own platform package;"
  echo "wasm = the WebAssembly build in the root package (its own WebSocket; the worker is the npm product's testing kit)."
} | tee "$TMP/table.txt"
[ "$registry_status" = 0 ] || status=1
for r in "${rows[@]}"; do for c in install build esm cjs tsc; do [[ ${CELL[$r.$c]:-✗} != *✗* ]] || status=1; done; done
echo
if [ "$status" = 0 ]; then echo "release-rehearsal.sh: passed ($VERSION)"; else echo "release-rehearsal.sh: FAILED ($VERSION; logs in $TMP/products, KEEP=1 keeps them)"; fi
exit "$status"
