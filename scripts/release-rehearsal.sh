#!/usr/bin/env bash
# A release rehearsed through a real registry on this machine (docs/platforms.md, "Release
# rehearsal"), with the binaries a release built: published to a local Verdaccio by
# scripts/publish.sh at <version>-rehearsal.<unix time> (as `latest`); run again once the testing
# package went missing, which must complete it; a pre-release after it, which must leave
# `latest` alone; fetched back and checked (scripts/rehearsal/check-registry.mjs), installed by name into fresh products outside the
# repository with npm, pnpm, Yarn berry (PnP), Bun, `npm ci` from a darwin-arm64 lockfile and
# --omit=optional, each checked (platform package, build, ESM and CJS handovers, `tsc --strict`),
# and the CLI run with `npx -p`. Prints a table and exits 1 on any ✗.
#
#   REHEARSAL_ARTIFACTS=dir scripts/release-rehearsal.sh   # the binaries and the .wasm
#   REHEARSAL_PLACEHOLDERS=1 …   # a placeholder for each binary dir lacks (publish.sh PLACEHOLDERS)
#   KEEP=1 …                     # keep the temporary directory
# Its tools, pinned: scripts/rehearsal/package-lock.json (into target/rehearsal/tools), Bun.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
T0=$SECONDS
TYPESCRIPT_VERSION=${TYPESCRIPT_VERSION:-5.9}
PKG=@norskvideo/ctl-migration
PLATFORM=$(node -p 'require("./lib/addon/platform.js").hostPlatform()')
[ "$PLATFORM" = linux-x64-gnu ] || fail "runs on x86_64 Linux (glibc)"
ARTIFACTS=${REHEARSAL_ARTIFACTS:?REHEARSAL_ARTIFACTS=dir: the binaries and the .wasm to publish}
VERSION=${REHEARSAL_VERSION:-$(node -p 'require("./package.json").version.replace(/-.*/, "")')-rehearsal.$(date -u +%s)}
phases=()
phase_start=$SECONDS
phase() { phases+=("$1 $((SECONDS - phase_start)) s"); phase_start=$SECONDS; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-rehearsal.XXXXXX")
VERDACCIO_PID=
stop_verdaccio() {
  [ -z "$VERDACCIO_PID" ] || { kill "$VERDACCIO_PID" && wait "$VERDACCIO_PID"; } 2>/dev/null || true
  VERDACCIO_PID=
}
trap 'stop_verdaccio; if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi' EXIT
trap 'exit 130' INT TERM
mkdir -p "$WORK/products"
echo "version $VERSION, binaries from $ARTIFACTS, in $WORK" >&2

# ── tools ────────────────────────────────────────────────────────────────────
say "tools"
ensure_node_modules
TOOLS=$ROOT/target/rehearsal/tools
CACHE=${REHEARSAL_CACHE:-$ROOT/target/rehearsal/cache}
mkdir -p "$TOOLS" "$CACHE"
if ! cmp -s scripts/rehearsal/package-lock.json "$TOOLS/package-lock.json" || [ ! -x "$TOOLS/node_modules/.bin/verdaccio" ]; then
  cp scripts/rehearsal/package.json scripts/rehearsal/package-lock.json "$TOOLS/"
  (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error)
fi
PNPM=$TOOLS/node_modules/.bin/pnpm
YARN=$TOOLS/node_modules/.bin/yarn
BUN=$(scripts/runtime-bin.sh bun)
VERDACCIO_VERSION=$(node -p 'require(process.argv[1]).version' "$TOOLS/node_modules/verdaccio/package.json")
NODE_VERSION=$(node -p process.versions.node)
declare -A LABEL=(
  [npm]="npm $(npm --version), Node $NODE_VERSION" [pnpm]="pnpm $("$PNPM" --version), Node $NODE_VERSION"
  [yarn]="yarn $("$YARN" --version) (PnP), Node $NODE_VERSION" [bun]="bun $("$BUN" --version), Bun $("$BUN" --version)"
  [lockfile]="npm ci, darwin-arm64 lockfile" [omit]="npm --omit=optional"
)
echo "${LABEL[npm]}, ${LABEL[pnpm]}, ${LABEL[yarn]}, ${LABEL[bun]}, verdaccio $VERDACCIO_VERSION" >&2
phase tools

# ── registry ─────────────────────────────────────────────────────────────────
say "registry"
REG=$WORK/registry
mkdir -p "$REG/storage"
cat >"$REG/config.yaml" <<YAML
# This package's names only from what the rehearsal publishes (no uplink: nothing of a real
# release can stand in for it); all else proxied from npm.
storage: $REG/storage
auth: { htpasswd: { file: $REG/htpasswd, max_users: 1 } }
uplinks: { npmjs: { url: "https://registry.npmjs.org/", timeout: 60s } }
packages:
  '@norskvideo/*': { access: \$all, publish: \$authenticated }
  '**': { access: \$all, publish: \$authenticated, proxy: npmjs }
log: { type: stdout, format: pretty, level: warn }
YAML
# Up when it answers its ping; a port another process took meanwhile is a retry on a new one.
for attempt in 1 2 3; do
  PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
  REGISTRY=http://127.0.0.1:$PORT
  node "$TOOLS/node_modules/verdaccio/bin/verdaccio" --config "$REG/config.yaml" --listen "127.0.0.1:$PORT" >"$REG/verdaccio.log" 2>&1 &
  VERDACCIO_PID=$!
  deadline=$((SECONDS + 60))
  until node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$REGISTRY/-/ping"; do
    kill -0 "$VERDACCIO_PID" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ] || { stop_verdaccio; break; }
    sleep 0.1 # between polls
  done
  [ -z "$VERDACCIO_PID" ] || break
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
printf 'registry=%s/\n//127.0.0.1:%s/:_authToken=%s\n' "$REGISTRY" "$PORT" "$TOKEN" >"$WORK/publisher.npmrc"
clean_setup
phase registry

# ── publish, fetch back ──────────────────────────────────────────────────────
say "publish (scripts/publish.sh)"
manifests() { cat package.json npm/*/package.json testing/package.json testing/npm/*/package.json | sha256sum; }
before=$(manifests)
# publish VAR=VALUE…: scripts/publish.sh as the publisher, with this run's binaries.
publish() {
  clean_run env NPM_CONFIG_USERCONFIG="$WORK/publisher.npmrc" STAGE="$WORK/stage" PLACEHOLDERS="${REHEARSAL_PLACEHOLDERS:-0}" \
    "$@" "$ROOT/scripts/publish.sh" "$ARTIFACTS"
}
publish VERSION="$VERSION" DIST_TAG=latest
phase publish

# A publish that stopped before its last package: run again, it publishes what is missing and
# skips the rest (the client's family by one look at the registry; the testing package's
# platform packages by napi pre-publish).
say "the testing package gone missing: scripts/publish.sh again"
RERUN_CELL=✗
clean_run env NPM_CONFIG_USERCONFIG="$WORK/publisher.npmrc" npm unpublish "$PKG-testing@$VERSION" --force --loglevel=error
if publish VERSION="$VERSION" DIST_TAG=latest 2>&1 | tee "$WORK/rerun.log" >&2 &&
  grep -q "^publish.sh: $PKG@$VERSION is on .* already, and so are its platform packages: skipped" "$WORK/rerun.log"; then
  RERUN_CELL=✓
fi
phase re-run

# A pre-release, its dist-tag left to publish.sh: `next` for both packages, `latest` where it was
# (check-registry.mjs checks every package's `latest` after this).
say "a pre-release: scripts/publish.sh with no DIST_TAG"
if [[ $VERSION == *-* ]]; then PRERELEASE=$VERSION.next; else PRERELEASE=$VERSION-next; fi
PRERELEASE_CELL=✗
# shellcheck disable=SC2016 # JavaScript, not shell
if publish VERSION="$PRERELEASE" && node -e '
  const [registry, latest, next, ...names] = process.argv.slice(1)
  Promise.all(names.map(async (name) => {
    const tags = (await (await fetch(`${registry}/${name.replace("/", "%2f")}`)).json())["dist-tags"]
    console.error(`${name}: ${JSON.stringify(tags)}`)
    return tags.latest === latest && tags.next === next
  })).then((ok) => process.exit(ok.every(Boolean) ? 0 : 1))' "$REGISTRY" "$VERSION" "$PRERELEASE" "$PKG" "$PKG-testing"; then
  PRERELEASE_CELL=✓
fi
[ "$(manifests)" = "$before" ] || fail "publishing changed the repository's package.json files"
phase pre-release

say "the published packages, fetched back"
registry_status=0
clean_run node scripts/rehearsal/check-registry.mjs "$REGISTRY" "$VERSION" "$ARTIFACTS" "$WORK/fetched" >"$WORK/registry-table.txt" || registry_status=1
cat "$WORK/registry-table.txt" >&2
phase fetch-back

# ── products ─────────────────────────────────────────────────────────────────
# One product per way of installing, with the configuration a product needs for this registry.
# pnpm 12 (minimumReleaseAge) and Yarn 4.18 (npmMinimalAgeGate, one day) quarantine fresh
# releases: the products exempt this package's scope, as one taking a release on its first day must.
declare -A CELL
rows=()
mark() { CELL[$1.$2]=$3; }
# check ROW COLUMN command…: runs it in ROW's product in the clean environment, marks the cell.
check() {
  local row=$1 col=$2
  shift 2
  echo "-- $row / $col: $*" >&2
  if (cd "$WORK/products/$row" && clean_run "$@") >>"$WORK/products/$row.log" 2>&1; then mark "$row" "$col" ✓; else
    mark "$row" "$col" ✗
    tail -n 20 "$WORK/products/$row.log" | sed "s/^/   [$row] /" >&2
  fi
}
# installed ROW WANT runtime…: the install cell (the version, the host's platform package, none
# when WANT is wasm) and the build cell (what a real connection used), from smoke/product/installed.cjs.
installed() {
  local row=$1 want=$2 out
  shift 2
  out=$(cd "$WORK/products/$row" && clean_run env KIT_DIR="$WORK/products/npm" "$@" smoke/product/installed.cjs 2>>"$WORK/products/$row.log") || return 0
  echo "   $out" >&2
  # shellcheck disable=SC2016 # JavaScript, not shell
  read -r inst build < <(node -e '
    const got = JSON.parse(process.argv[1]), [version, want, pkg, platform] = process.argv.slice(2)
    const installOk = got.version === version && JSON.stringify(got.platformPackages) === JSON.stringify(want === "wasm" ? [] : [pkg])
    // Native: loaded from the host platform package inside the product.
    const buildOk = got.build === "native"
      ? want !== "wasm" && !require("path").isAbsolute(got.client) && got.client.endsWith(`${pkg}/ctl-migration.${platform}.node`)
      : got.build === "wasm" && want !== "native"
    console.log(`${installOk ? "✓" : "✗"} ${got.build}${buildOk ? "" : "✗"}`)' "$out" "$VERSION" "$want" "$PKG-$PLATFORM" "$PLATFORM")
  mark "$row" install "$inst"
  mark "$row" build "$build"
}
# row ROW WANT RUNTIME… -- TSC…: install_ROW in ROW's product, then the cells with that runtime;
# the handovers of a product on the WebAssembly build take their worker from the npm product.
row() {
  local row=$1 want=$2 runtime=() kit=()
  shift 2
  while [ "$1" != -- ]; do runtime+=("$1"); shift; done
  shift
  rows+=("$row")
  say "${LABEL[$row]}"
  if ! (cd "$WORK/products/$row" && "install_$row") >>"$WORK/products/$row.log" 2>&1; then
    tail -n 30 "$WORK/products/$row.log" | sed "s/^/   [$row] /" >&2
    return
  fi
  installed "$row" "$want" "${runtime[@]}"
  [[ ${CELL[$row.build]:-} != wasm* ]] || kit=(env KIT_DIR="$WORK/products/npm" EXPECT_BUILD=wasm)
  check "$row" esm ${kit[@]+"${kit[@]}"} "${runtime[@]}" smoke/product/handover.mjs
  check "$row" cjs ${kit[@]+"${kit[@]}"} "${runtime[@]}" smoke/product/handover.cjs
  check "$row" tsc "$@" -p smoke/product/tsconfig.json
  phase "$row"
}
DEPS=("$PKG" "$PKG-testing" "typescript@$TYPESCRIPT_VERSION" "@types/node@20")
for r in npm pnpm yarn bun lockfile omit npx; do
  new_product "$WORK/products/$r"
  printf 'registry=%s/\n' "$REGISTRY" >"$WORK/products/$r/.npmrc"
done
install_npm() { clean_run npm install --no-audit --no-fund --loglevel=error "${DEPS[@]}"; }
row npm native node -- node_modules/.bin/tsc

printf 'storeDir: %s\ncacheDir: %s\nminimumReleaseAgeExclude:\n  - "@norskvideo/*"\n' \
  "$CACHE/pnpm-store" "$WORK/pnpm-cache" >"$WORK/products/pnpm/pnpm-workspace.yaml"
install_pnpm() { clean_run "$PNPM" add "${DEPS[@]}"; }
row pnpm native node -- node_modules/.bin/tsc

cat >"$WORK/products/yarn/.yarnrc.yml" <<YAML
npmRegistryServer: "$REGISTRY"
unsafeHttpWhitelist: ["127.0.0.1"]
npmPreapprovedPackages: ["@norskvideo/*"]
globalFolder: "$WORK/yarn-global"
enableGlobalCache: false
cacheFolder: "$CACHE/yarn-cache"
enableTelemetry: false
# Yarn's PnP ESM loader is generated only for a "type": "module" (README, Troubleshooting).
pnpEnableEsmLoader: true
YAML
: >"$WORK/products/yarn/yarn.lock"
install_yarn() { clean_run "$YARN" add "${DEPS[@]}"; }
row yarn native "$YARN" node -- "$YARN" tsc

printf '[install]\nregistry = "%s/"\n' "$REGISTRY" >"$WORK/products/bun/bunfig.toml"
install_bun() { clean_run "$BUN" add "${DEPS[@]}"; }
row bun native "$BUN" -- "$BUN" node_modules/typescript/bin/tsc

# A lockfile made on (for) a Mac, then `npm ci` here: npm 7+ records every platform package in
# it; were the Linux one left out (npm/cli#4828), the client would fall back to WebAssembly.
cat >"$WORK/products/lockfile/package.json" <<JSON
{ "name": "a-product-lockfile", "version": "1.0.0", "private": true,
  "dependencies": { "$PKG": "$VERSION", "$PKG-testing": "$VERSION", "typescript": "$TYPESCRIPT_VERSION", "@types/node": "20", "ws": "8" } }
JSON
install_lockfile() {
  clean_run npm install --package-lock-only --os=darwin --cpu=arm64 --loglevel=error && clean_run npm ci --loglevel=error
  echo "   the lockfile's platform packages: $(node -p 'Object.keys(require("./package-lock.json").packages).filter((k) => k.includes("ctl-migration-")).map((k) => k.split("ctl-migration-")[1]).join(" ")')" >&2
}
row lockfile any node -- node_modules/.bin/tsc

# --omit=optional: no platform package; the WebAssembly build from the root package.
install_omit() { clean_run npm install --omit=optional --loglevel=error "${DEPS[@]}" ws@8; }
row omit wasm node -- node_modules/.bin/tsc

# The command line from the registry, as a user runs it without installing the testing package,
# in a product that has only the client, handing the CLI suite's product over.
say "npx -p $PKG-testing ctl-migration handover"
cp __test__/cli/fixtures/product.mjs "$WORK/products/npx/"
NPX_CELL=✓
if ! (cd "$WORK/products/npx" && clean_run npm install --loglevel=error "$PKG@$VERSION" &&
  clean_run npx --yes -p "$PKG-testing@$VERSION" ctl-migration handover --json -- node product.mjs >"$WORK/products/npx.json") >>"$WORK/products/npx.log" 2>&1 ||
  ! node -e 'process.exit(require(process.argv[1]).ok === true ? 0 : 1)' "$WORK/products/npx.json"; then
  NPX_CELL=✗
  tail -n 20 "$WORK/products/npx.log" | sed "s/^/   [npx] /" >&2
fi
phase npx

# ── table ────────────────────────────────────────────────────────────────────
status=0
[ "$registry_status" = 0 ] && [ "$NPX_CELL" = ✓ ] && [ "$RERUN_CELL" = ✓ ] && [ "$PRERELEASE_CELL" = ✓ ] || status=1
for r in "${rows[@]}"; do for c in install build esm cjs tsc; do [[ ${CELL[$r.$c]:-✗} != *✗* ]] || status=1; done; done
# Pads to a width in characters (printf counts bytes, and ✓ is three).
pad() { local LC_ALL=C.UTF-8; printf '%s%*s' "$1" $(($2 - ${#1})) ''; }
line() { local out='|' w=(36 7 7 12 12 12) i=0 c; for c in "$@"; do out+=" $(pad "$c" "${w[$i]}") |"; i=$((i + 1)); done; echo "$out"; }
{
  echo
  echo "release rehearsal: $PKG@$VERSION through verdaccio $VERDACCIO_VERSION at $REGISTRY, binaries from $ARTIFACTS"
  timings=$(printf '%s, ' "${phases[@]}")
  echo "wall time $((SECONDS - T0)) s: ${timings%, }"
  echo
  cat "$WORK/registry-table.txt"
  echo
  echo "scripts/publish.sh run again after $PKG-testing@$VERSION went missing: completes it, skips the rest: $RERUN_CELL"
  echo "a pre-release ($PRERELEASE, no DIST_TAG): \`next\` for both packages, \`latest\` still $VERSION: $PRERELEASE_CELL"
  echo
  line "package manager" install build "ESM handover" "CJS handover" "tsc --strict"
  line "$(printf -- '-%.0s' {1..36})" ------- ------- ------------ ------------ ------------ | tr ' ' -
  for r in "${rows[@]}"; do
    line "${LABEL[$r]}" "${CELL[$r.install]:-✗}" "${CELL[$r.build]:-✗}" "${CELL[$r.esm]:-✗}" "${CELL[$r.cjs]:-✗}" "${CELL[$r.tsc]:-✗}"
  done
  echo
  echo "npx -p $PKG-testing@$VERSION ctl-migration handover, in a product with only the client: $NPX_CELL"
  echo "build: what a real connection used (native: the product's own $PLATFORM package; wasm: the root package's)."
} | tee "$WORK/table.txt"
echo
if [ "$status" = 0 ]; then echo "release-rehearsal.sh: passed ($VERSION)"; else echo "release-rehearsal.sh: FAILED ($VERSION; logs in $WORK/products, KEEP=1 keeps them)"; fi
exit "$status"
