#!/usr/bin/env bash
# The real install path: what a product gets from `npm install @norskvideo/ctl-migration` and
# `npm install --save-dev @norskvideo/ctl-migration-testing`. Packs both packages (checking that a
# plain `npm pack` of each installs as it is), then as they are published (the platform packages
# added as optional dependencies, as `napi prepublish` does) and this host's platform package of
# each; checks every one with `publint --strict`, and both with `attw` (every module
# resolution); installs the four from the tarballs into a fresh product directory outside the
# repository, with no Rust toolchain on PATH (no install may print EBADENGINE), and there:
#   - runs a handover against the testing kit as an ESM product and as a CJS product,
#   - runs the smoke suite (ESM import, CJS require, connect, handover, reconnect, close, exit,
#     worker threads) against the installed copy,
#   - type-checks a product file that uses every exported type with `tsc --strict`
#     (TypeScript from the npm registry), for the ESM and the CJS entry, under the node10,
#     node16, nodenext and bundler module resolutions,
#   - bundles the ESM and the CJS product with esbuild and runs the bundles (no configuration),
#     a bundle away from node_modules (the error names the flag) and one made with the flag;
# then a production install, the client and its platform package alone: nothing else in
# node_modules (no third-party package, no bin, no simulator), under 3.5 MiB on disk, and it hands
# over; then, with no @types/node anywhere, a product and its test set-up on both packages
# type-checked with `tsc --strict --exactOptionalPropertyTypes`, `types: []`, `skipLibCheck`
# false (smoke/product/strict); then installs the client and the testing package with
# --omit=optional into another product (what a lockfile from another platform or a platform with
# no binary gives) and there:
#   - CJS require, ESM import and the no-op client work, loading nothing native,
#   - on Node 20 without `ws`, connectMigration says to install it; with `ws`, a real handover
#     runs on the WebAssembly build; on Node 22 (from the npm registry) the same over the global
#     WebSocket;
# and last, on the oldest and newest patches of every Node line `engines` admits (from the npm
# registry), a real handover native and on the WebAssembly build.
#
#   scripts/install-path.sh                  # the binary this checkout built (npm run build)
#   BINARY=target/cross/out/ctl-migration.linux-x64-gnu.node scripts/install-path.sh
#   KEEP=1 scripts/install-path.sh           # keep the temporary directory
#   SWEEP_NODE=$(command -v node) scripts/install-path.sh   # sweep that Node only, none from npm
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TYPESCRIPT_VERSION=${TYPESCRIPT_VERSION:-5.9}
say() { printf '\n== %s\n' "$*" >&2; }

# shellcheck disable=SC2016 # JavaScript, not shell
PLATFORM=$(node -e '
  const { platform, arch } = process
  const libc = () => (process.report.getReport().header.glibcVersionRuntime ? "gnu" : "musl")
  console.log(platform === "linux" ? `linux-${arch}-${libc()}` : platform === "win32" ? `win32-${arch}-msvc` : `${platform}-${arch}`)')
[ -d "npm/$PLATFORM" ] || { echo "install-path.sh: no platform package for $PLATFORM (npm/ has: $(ls npm))" >&2; exit 1; }
[ -d "testing/npm/$PLATFORM" ] || { echo "install-path.sh: no testing platform package for $PLATFORM" >&2; exit 1; }
VERSION=$(node -p 'require("./package.json").version')

[ -d node_modules ] || npm ci --no-audit --no-fund
# A checkout's binaries are each in its package's lib/addon/; a release build's side by side.
if [ -n "${BINARY:-}" ]; then
  TESTING_BINARY=${TESTING_BINARY:-$(dirname "$BINARY")/ctl-migration-testing.$PLATFORM.node}
else
  BINARY=$ROOT/lib/addon/ctl-migration.$PLATFORM.node
  TESTING_BINARY=${TESTING_BINARY:-$ROOT/testing/lib/addon/ctl-migration-testing.$PLATFORM.node}
fi
WASM=$ROOT/lib/addon/ctl-migration.wasm
if [ ! -f "$BINARY" ] || [ ! -f "$TESTING_BINARY" ] || [ ! -f "$WASM" ]; then npm run build; fi
[ -f "$BINARY" ] && [ -f "$TESTING_BINARY" ] && [ -f "$WASM" ]
[ -f lib/client.bundle.js ] || node scripts/bundle-glue.mjs

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-install.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$TMP"' EXIT; fi
mkdir -p "$TMP/tarballs" "$TMP/stage" "$TMP/product" "$TMP/production" "$TMP/fallback" "$TMP/home"
echo "platform $PLATFORM, version $VERSION, binary $BINARY, in $TMP" >&2

# ── pack ─────────────────────────────────────────────────────────────────────
say "pack"
# Each package, the client (the repository's root) and the testing package (testing/), as a plain
# `npm pack` makes it: no `file:` spec, no platform package named (napi prepublish adds them at
# release), so it installs anywhere as it is. Then its manifest as `napi prepublish` leaves it:
# every platform package an optional dependency at this version.
for pair in .:client testing:testing; do
  dir=${pair%%:*} stage=$TMP/stage/${pair#*:}
  mkdir -p "$stage"
  tgz=$(cd "$dir" && npm pack --silent --pack-destination "$TMP/stage")
  tar -xzf "$TMP/stage/$tgz" -C "$stage" --strip-components=1
  # shellcheck disable=SC2016 # JavaScript, not shell
  node -e '
    const fs = require("fs")
    const { parseTriple } = require(process.argv[2])
    const file = process.argv[1]
    const pkg = JSON.parse(fs.readFileSync(file, "utf8"))
    const specs = JSON.stringify(pkg).match(/"file:[^"]*"/g)
    if (specs) { console.error("file: specs in the packed manifest:", specs.join(", ")); process.exit(1) }
    if (pkg.optionalDependencies) { console.error("the repository names platform packages:", pkg.optionalDependencies); process.exit(1) }
    pkg.optionalDependencies = {}
    for (const t of pkg.napi.targets) pkg.optionalDependencies[`${pkg.name}-${parseTriple(t).platformArchABI}`] = pkg.version
    fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + "\n")' "$stage/package.json" "$ROOT/node_modules/@napi-rs/cli"
  if [ -n "$(find "$stage" -name '*.node')" ]; then echo "$dir: the package must not carry a binary" >&2; exit 1; fi
  [ -f "$stage/LICENSE" ] || cp LICENSE "$stage/"
  (cd "$stage" && npm pack --silent --pack-destination "$TMP/tarballs" >/dev/null)
done
# The WebAssembly fallback and what runs it are in the client itself: no install option can
# leave them out.
for f in lib/addon/ctl-migration.wasm lib/addon/wasm.js lib/client.bundle.js lib/client.bundle.mjs lib/client.bundler.mjs LICENSE; do
  [ -f "$TMP/stage/client/$f" ] || { echo "the client package lacks $f" >&2; exit 1; }
done
# The production addon carries no worker simulator (it is the testing addon's alone).
if grep -q -a -e TestWorkerHandle -e second-hello "$BINARY"; then echo "the client binary carries the simulator" >&2; exit 1; fi
# Each platform package: <package>/npm/<platform> with its one binary in it (what `napi
# artifacts` does).
for pair in ".:$BINARY" "testing:$TESTING_BINARY"; do
  dir=${pair%%:*} binary=${pair#*:}
  stage=$TMP/stage/platform-$(basename "$binary" ".$PLATFORM.node")
  cp -r "$dir/npm/$PLATFORM" "$stage"
  cp LICENSE "$stage/"
  cp "$binary" "$stage/$(basename "$binary")"
  (cd "$stage" && npm pack --silent --pack-destination "$TMP/tarballs" >/dev/null)
done
CLIENT_TGZ=$TMP/tarballs/norskvideo-ctl-migration-$VERSION.tgz
CLIENT_PLATFORM_TGZ=$TMP/tarballs/norskvideo-ctl-migration-$PLATFORM-$VERSION.tgz
TESTING_TGZ=$TMP/tarballs/norskvideo-ctl-migration-testing-$VERSION.tgz
TESTING_PLATFORM_TGZ=$TMP/tarballs/norskvideo-ctl-migration-testing-$PLATFORM-$VERSION.tgz
ls -l "$TMP/tarballs" >&2
for tgz in "$CLIENT_TGZ" "$TESTING_TGZ"; do tar -tzf "$tgz" | sort >&2; done
for tgz in "$CLIENT_PLATFORM_TGZ" "$TESTING_PLATFORM_TGZ"; do
  [[ $'\n'$(tar -tzf "$tgz")$'\n' == *$'\n'package/LICENSE$'\n'* ]] || { echo "$tgz lacks its LICENSE" >&2; exit 1; }
done
# The client's platform package carries the client's binary alone; the testing one the simulator's.
[ "$(tar -tzf "$CLIENT_PLATFORM_TGZ" | grep '\.node$')" = "package/ctl-migration.$PLATFORM.node" ] ||
  { echo "the client's platform package carries: $(tar -tzf "$CLIENT_PLATFORM_TGZ" | grep '\.node$')" >&2; exit 1; }
[ "$(tar -tzf "$TESTING_PLATFORM_TGZ" | grep '\.node$')" = "package/ctl-migration-testing.$PLATFORM.node" ] ||
  { echo "the testing platform package carries: $(tar -tzf "$TESTING_PLATFORM_TGZ" | grep '\.node$')" >&2; exit 1; }

# ── what npm's tooling says of the published packages ────────────────────────
say "publint --strict, attw"
for stage in client testing platform-ctl-migration platform-ctl-migration-testing; do
  "$ROOT/node_modules/.bin/publint" --strict "$TMP/stage/$stage"
done
# Every resolution a product uses: node10, node16 (from CJS and ESM), bundler; any finding fails.
# The client's ./internal/addon is the testing package's, required at run time only (node10
# resolution, which has no `exports`, never sees it).
"$ROOT/node_modules/.bin/attw" "$CLIENT_TGZ" --format table-flipped --exclude-entrypoints internal/addon
"$ROOT/node_modules/.bin/attw" --format table-flipped "$TESTING_TGZ"

# ── install in a product with no Rust and no repository ──────────────────────
say "install"
cp -r smoke "$TMP/product/smoke"
cd "$TMP/product"
cat >package.json <<EOF
{ "name": "a-product", "version": "1.0.0", "private": true }
EOF
NODE_DIR=$(dirname "$(command -v node)")
# PATH: node and npm, the system; no cargo, no rustc, no repository. HOME: a fresh one (npm's
# cache set back to the usual one so that registry downloads are not repeated every run).
CACHE=$(npm config get cache)
# Windows programs need a few of their variables (SystemRoot for sockets, among others).
KEEP_VARS=()
for v in SYSTEMROOT SystemRoot WINDIR COMSPEC PATHEXT TEMP TMP USERPROFILE APPDATA LOCALAPPDATA PROGRAMDATA; do
  if [ -n "${!v:-}" ]; then KEEP_VARS+=("$v=${!v}"); fi
done
run() {
  env -i ${KEEP_VARS[@]+"${KEEP_VARS[@]}"} PATH="$NODE_DIR:/usr/bin:/bin" HOME="$TMP/home" npm_config_cache="$CACHE" \
    npm_config_update_notifier=false TMPDIR="$TMP" "$@"
}
if run sh -c 'command -v cargo || command -v rustc'; then echo "a Rust toolchain is on PATH" >&2; exit 1; fi
# The other platforms' packages are not on the registry until the first release: npm skips an
# optional dependency it cannot fetch, as it skips one for another platform.
# npm's warnings are kept: an install must not print EBADENGINE (nor any other).
install() {
  run npm install --no-audit --no-fund --loglevel=warn "$@" 2>&1 | tee -a "$TMP/install.log" >&2
  if grep -q EBADENGINE "$TMP/install.log"; then echo "the install printed EBADENGINE" >&2; exit 1; fi
}
ESBUILD_VERSION=$(node -p 'require(process.argv[1]).version' "$ROOT/node_modules/esbuild/package.json")
install "$CLIENT_TGZ" "$CLIENT_PLATFORM_TGZ" "$TESTING_TGZ" "$TESTING_PLATFORM_TGZ" \
  "typescript@$TYPESCRIPT_VERSION" "@types/node@20" "esbuild@$ESBUILD_VERSION"
# Where the package and its binary came from: this directory, nothing of the repository.
run node -e '
  const path = require("path"), fs = require("fs")
  const main = require.resolve("@norskvideo/ctl-migration")
  const bin = fs.realpathSync(require.resolve("@norskvideo/ctl-migration-'"$PLATFORM"'"))
  const kit = require.resolve("@norskvideo/ctl-migration-testing")
  for (const p of [main, bin, kit]) if (!fs.realpathSync(p).startsWith(fs.realpathSync(process.cwd()))) throw new Error("resolved outside the product: " + p)
  if (fs.realpathSync(process.cwd()).startsWith('"'$ROOT'"')) throw new Error("the product is inside the repository")
  const pkg = require("@norskvideo/ctl-migration/package.json")
  console.error("package", main, "\nbinary ", bin, "\noptionalDependencies", Object.keys(pkg.optionalDependencies).length)'

status=0
check() {
  local name=$1
  shift
  say "$name"
  if run "$@"; then echo "ok - $name"; else echo "not ok - $name"; status=1; fi
}
check "ESM product: handover through the testing kit" node smoke/product/handover.mjs
check "CJS product: handover through the testing kit" node smoke/product/handover.cjs
check "smoke suite against the installed package" node smoke/run.mjs
check "tsc --strict: every exported type, ESM and CJS entries" node_modules/.bin/tsc -p smoke/product/tsconfig.json
# The same files under each module resolution a product may use (node10 is what
# `"module": "commonjs"` gives; it has no `exports`, and finds each package by its "types").
for resolution in "commonjs node10 types.cts" "node16 node16 types.mts types.cts" "preserve bundler types.mts types.cts"; do
  # shellcheck disable=SC2086 # the words are tsc's arguments
  set -- $resolution
  module=$1 moduleResolution=$2
  shift 2
  check "tsc --strict, module $module, moduleResolution $moduleResolution: $*" \
    node_modules/.bin/tsc --strict --noEmit --target ES2022 --module "$module" --moduleResolution "$moduleResolution" \
    --types node --noUnusedLocals "${@/#/smoke/product/}"
done

# ── bundled with esbuild ─────────────────────────────────────────────────────
# No configuration: the package's JavaScript goes into the bundle and finds its binaries in
# node_modules when it runs. Moved where no node_modules reaches, it says to mark the package
# external; marked external, it is loaded from node_modules as it is.
for format in esm cjs; do
  entry=smoke/product/handover.mjs out=bundle/handover-$format.mjs
  if [ $format = cjs ]; then entry=smoke/product/handover.cjs out=bundle/handover-cjs.cjs; fi
  check "esbuild, $format output: the bundled product hands over" sh -c \
    "node_modules/.bin/esbuild $entry --bundle --platform=node --format=$format --log-level=error --outfile=$out && node $out"
done
mkdir -p "$TMP/away"
cp bundle/handover-esm.mjs "$TMP/away/"
# shellcheck disable=SC2016 # JavaScript, not shell
check "esbuild, bundle run away from node_modules: the error names the package and the flag" sh -c '
  out=$(cd "$1" && node handover-esm.mjs 2>&1) && exit 1
  echo "$out" | grep -m1 "was bundled"
  echo "$out" | grep -q "ERR_CTL_MIGRATION_BUNDLED" && echo "$out" | grep -q -- "--external:@norskvideo/ctl-migration"' _ "$TMP/away"
# Both packages: in esbuild's ESM output a bundled CommonJS module cannot require an external one.
check "esbuild --external: both packages, ESM output: hands over" sh -c \
  "node_modules/.bin/esbuild smoke/product/handover.mjs --bundle --platform=node --format=esm --external:@norskvideo/ctl-migration --external:@norskvideo/ctl-migration-testing --log-level=error --outfile=bundle/external.mjs && node bundle/external.mjs"
# shellcheck disable=SC2016 # JavaScript, not shell
check "the type-checked product file names every type the package exports" node -e '
  const fs = require("fs"), path = require("path")
  const dir = (name) => path.dirname(require.resolve(`${name}/package.json`))
  const product = fs.readFileSync("smoke/product/types.mts", "utf8")
  const missing = []
  for (const entry of [path.join(dir("@norskvideo/ctl-migration"), "index.d.ts"), path.join(dir("@norskvideo/ctl-migration-testing"), "lib/testing.d.ts")]) {
    const dts = fs.readFileSync(entry, "utf8")
    for (const [, name] of dts.matchAll(/^export (?:declare )?(?:interface|type|function|class|const|enum) (\w+)/gm)) {
      if (!new RegExp(`\\b${name}\\b`).test(product)) missing.push(`${entry}: ${name}`)
    }
  }
  if (missing.length) { console.error("not used in smoke/product/types.mts:", missing.join(", ")); process.exit(1) }'
# shellcheck disable=SC2016 # JavaScript, not shell
check "no binary for this platform (riscv64): import works, and the client says why it runs on WebAssembly" node -e '
  Object.defineProperty(process, "arch", { value: "riscv64" })
  const m = require("@norskvideo/ctl-migration")
  if (m.connectMigration({}, {}).role !== "none") process.exit(1)
  const logs = []
  const client = m.connectMigration({}, { NORSK_WORKER_WS_URL: "ws://127.0.0.1:9/x", NORSK_WORKER_TOKEN: "t" }, { log: (l) => logs.push(l) })
  client.close()
  const line = logs.find((l) => l.startsWith("using the WebAssembly build: "))
  console.error(line)
  if (!line || !/riscv64/.test(line)) process.exit(1)
  // The list it names is the list of platform packages.
  const named = /Prebuilt binaries exist for: ([^.]*)\./.exec(line)[1].split(", ")
  const packages = Object.keys(require("@norskvideo/ctl-migration/package.json").optionalDependencies)
  if (JSON.stringify(named.map((p) => "@norskvideo/ctl-migration-" + p).sort()) !== JSON.stringify(packages.sort())) {
    console.error("named", named, "packages", packages)
    process.exit(1)
  }'

# ── a production install: the client and its platform package, nothing else ──
say "production install"
cd "$TMP/production"
cp -r "$TMP/product/smoke" smoke
echo '{ "name": "a-product-in-production", "version": "1.0.0", "private": true }' >package.json
install "$CLIENT_TGZ" "$CLIENT_PLATFORM_TGZ"
# shellcheck disable=SC2016 # JavaScript, not shell
check "production install: the client and its platform package only, no bin, no simulator" node -e '
  const fs = require("fs"), path = require("path")
  const packages = []
  for (const entry of fs.readdirSync("node_modules")) {
    if (entry.startsWith(".")) continue
    if (entry.startsWith("@")) for (const name of fs.readdirSync(path.join("node_modules", entry))) packages.push(`${entry}/${name}`)
    else packages.push(entry)
  }
  const want = ["@norskvideo/ctl-migration", "@norskvideo/ctl-migration-'"$PLATFORM"'"]
  console.error("node_modules:", packages.join(", "))
  if (JSON.stringify(packages.sort()) !== JSON.stringify(want.sort())) process.exit(1)
  if (fs.existsSync("node_modules/.bin")) { console.error("a bin:", fs.readdirSync("node_modules/.bin")); process.exit(1) }
  const simulator = fs.readdirSync("node_modules", { recursive: true }).map(String).filter((f) => /ctl-migration-testing|testing\.js$/.test(f))
  if (simulator.length) { console.error("test code:", simulator); process.exit(1) }'
# On disk (du: allocated blocks), as `du -sh node_modules` reports it to whoever sizes an image.
PRODUCTION_BYTES=$(du -s --block-size=1 node_modules | cut -f1)
PRODUCTION_APPARENT=$(du -s --apparent-size --block-size=1 node_modules | cut -f1)
echo "production node_modules: $PRODUCTION_BYTES bytes on disk ($PRODUCTION_APPARENT apparent)" >&2
# 3.5 MiB (the MB of `du -h`, in which the install with the test tools took 5.5).
check "production install: under 3.5 MiB on disk ($PRODUCTION_BYTES bytes)" test "$PRODUCTION_BYTES" -lt $((35 * 1024 * 1024 / 10))
check "production install: hands over (the worker from the product's testing package)" \
  env KIT_DIR="$TMP/product" node smoke/product/handover.mjs

# ── the types with no @types/node: a product and its test set-up on both packages ──
say "types without @types/node"
mkdir -p "$TMP/types"
cd "$TMP/types"
cp -r "$TMP/product/smoke" smoke
echo '{ "name": "a-strictly-typed-product", "version": "1.0.0", "private": true }' >package.json
install --omit=optional "$CLIENT_TGZ" "$TESTING_TGZ" "typescript@$TYPESCRIPT_VERSION"
check "no @types/node installed beside the packages" sh -c '! [ -e node_modules/@types/node ]'
check "tsc --strict --exactOptionalPropertyTypes, types [], skipLibCheck false: a product and its test set-up" \
  node_modules/.bin/tsc -p smoke/product/strict/tsconfig.json

# ── install without the optional dependencies: the WebAssembly fallback ──────
say "install --omit=optional"
cd "$TMP/fallback"
cp -r "$TMP/product/smoke" smoke
echo '{ "name": "a-product-without-binaries", "version": "1.0.0", "private": true }' >package.json
install --omit=optional "$CLIENT_TGZ" "$TESTING_TGZ"
if [ -n "$(find node_modules -name '*.node')" ]; then echo "--omit=optional installed a binary" >&2; status=1; fi
# shellcheck disable=SC2016 # JavaScript, not shell
check "without binaries: CJS require, ESM import and the no-op client, nothing native loaded" node -e '
  const cjs = require("@norskvideo/ctl-migration")
  import("@norskvideo/ctl-migration").then((esm) => {
    if (esm.connectMigration !== cjs.connectMigration) throw new Error("ESM and CJS differ")
    const noop = esm.connectMigration({}, {})
    noop.reportReady({})
    noop.close()
    if (noop.role !== "none" || noop.connected !== false) throw new Error("not a no-op client")
    if (!esm.isStateRefusal(esm.stateRefusal("x"))) throw new Error("stateRefusal")
    const native = process.report.getReport().sharedObjects.filter((f) => /ctl-migration/.test(f))
    if (native.length) throw new Error("loaded " + native)
  })'
check "without binaries: the testing kit says it needs the native addon" node -e '
  require("@norskvideo/ctl-migration-testing").startTestWorker().then(
    () => process.exit(1),
    (e) => { console.error(e.message); if (!/^@norskvideo\/ctl-migration-testing needs the native addon/.test(e.message)) process.exit(1) })'
# Node 22 from the npm registry, cached beside the runtime matrix's copies.
# ── SWEEP_NODE: the switch for the platforms other than Linux x64 ──
# SWEEP_NODE=/path/to/node: this check (if that Node has the global WebSocket) and the Node sweep
# below run on that one Node, and no Node comes from the npm registry, whose `node` package has no
# binary for most versions off Linux x64 (the release workflow's legs there get each version
# from setup-node's node-version matrix).
NODE22=${SWEEP_NODE:-$("$ROOT/scripts/runtime-bin.sh" node22)}
# The WebAssembly build speaks WebSocket itself over node:net: no ws, no global WebSocket needed.
check "without binaries, Node $("$NODE22" --version): a real handover on the WebAssembly build" \
  env KIT_DIR="$TMP/product" EXPECT_BUILD=wasm "$NODE22" smoke/product/handover.mjs
check "without binaries, Node $(node --version), no ws: a real handover on the WebAssembly build" \
  env KIT_DIR="$TMP/product" EXPECT_BUILD=wasm node smoke/product/handover.mjs

# ── every Node release line engines admits, its oldest and newest patches ────
# Native (the product with its binary) and on the WebAssembly fallback (the install without
# optional dependencies).
say "Node versions"
# With SWEEP_NODE (above), that one Node alone.
node_specs=(node@20.0.0 node@20.18.0 node@20.19.0 node@22.0.0 node@22.11.0 node@22.12.0 node22 node24 node26)
[ -z "${SWEEP_NODE:-}" ] || node_specs=(SWEEP_NODE)
for node_spec in "${node_specs[@]}"; do
  node_bin=${SWEEP_NODE:-$("$ROOT/scripts/runtime-bin.sh" "$node_spec")}
  node_version=$("$node_bin" --version)
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$node_bin" -e 'const engines = require(process.argv[1]).engines.node
    if (!/^>= ?20$/.test(engines)) { console.error(`engines is ${engines}: update this list`); process.exit(1) }' \
    "$TMP/fallback/node_modules/@norskvideo/ctl-migration/package.json"
  check "Node $node_version, native: a real handover" sh -c "cd '$TMP/product' && '$node_bin' smoke/product/handover.mjs"
  check "Node $node_version, without binaries: a real handover on the WebAssembly build" \
    env KIT_DIR="$TMP/product" EXPECT_BUILD=wasm "$node_bin" smoke/product/handover.mjs
done

echo
if [ "$status" = 0 ]; then echo "install-path.sh: passed ($PLATFORM)"; else echo "install-path.sh: FAILED ($PLATFORM)"; fi
exit "$status"
