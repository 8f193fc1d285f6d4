#!/usr/bin/env bash
# The real install path (docs/platforms.md, "The install path"): both packages and this host's
# platform packages packed as a release publishes them (scripts/publish.sh PACK_TO), checked
# (publint --strict, attw), installed from the tarballs into products outside the repository
# with no Rust on PATH, and there: handovers (ESM, CJS, bundled), the smoke suite, `tsc --strict`
# under each module resolution; a production install's contents and size; the types without
# @types/node; --omit=optional (the WebAssembly fallback); every Node line `engines` admits.
#
#   scripts/install-path.sh                  # the binaries this checkout built (npm run build)
#   BINARY=target/cross/out/ctl-migration.linux-x64-gnu.node scripts/install-path.sh  # a release build's
#   KEEP=1 scripts/install-path.sh           # keep the temporary directory
#   SWEEP_NODE=$(command -v node) scripts/install-path.sh   # sweep that Node only, none from npm
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
TYPESCRIPT_VERSION=${TYPESCRIPT_VERSION:-5.9}
PLATFORM=$(node -p 'require("./lib/addon/platform.js").hostPlatform()')
VERSION=$(node -p 'require("./package.json").version')
ensure_node_modules
# A checkout's binaries are each in its package's lib/addon/; a release build's side by side.
if [ -n "${BINARY:-}" ]; then
  TESTING_BINARY=${TESTING_BINARY:-$(dirname "$BINARY")/ctl-migration-testing.$PLATFORM.node}
else
  BINARY=lib/addon/ctl-migration.$PLATFORM.node
  TESTING_BINARY=${TESTING_BINARY:-testing/lib/addon/ctl-migration-testing.$PLATFORM.node}
fi
WASM=lib/addon/ctl-migration.wasm
[ -f "$BINARY" ] && [ -f "$TESTING_BINARY" ] && [ -f "$WASM" ] || npm run build
# The production addon carries no worker simulator (it is the testing addon's alone).
if grep -q -a -e TestWorkerHandle -e second-hello "$BINARY"; then fail "the client binary carries the simulator"; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-install.XXXXXX")
if [ "${KEEP:-0}" != 1 ]; then trap 'rm -rf "$WORK"' EXIT; fi
mkdir -p "$WORK/artifacts" "$WORK/tarballs"
echo "platform $PLATFORM, version $VERSION, binary $BINARY, in $WORK" >&2

# ── pack ─────────────────────────────────────────────────────────────────────
say "pack (scripts/publish.sh, PACK_TO)"
cp "$BINARY" "$TESTING_BINARY" "$WASM" "$WORK/artifacts/"
STAGE=$WORK/stage PACK_TO=$WORK/tarballs PLACEHOLDERS=1 scripts/publish.sh "$WORK/artifacts"
CLIENT_TGZ=$WORK/tarballs/norskvideo-ctl-migration-$VERSION.tgz
CLIENT_PLATFORM_TGZ=$WORK/tarballs/norskvideo-ctl-migration-$PLATFORM-$VERSION.tgz
TESTING_TGZ=$WORK/tarballs/norskvideo-ctl-migration-testing-$VERSION.tgz
TESTING_PLATFORM_TGZ=$WORK/tarballs/norskvideo-ctl-migration-testing-$PLATFORM-$VERSION.tgz
ls -l "$WORK/tarballs" >&2
tar -tzf "$TESTING_TGZ" | sort >&2
# Listed through the shell's own stderr: `tee /dev/stderr` reopens it, which truncates a log file
# that stderr was redirected to.
client_files=$(tar -tzf "$CLIENT_TGZ" | sort)
echo "$client_files" >&2
# The WebAssembly fallback and what runs it are in the client itself: no install option can
# leave them out. Each platform package carries its one binary (the client's or the simulator's).
for f in lib/addon/ctl-migration.wasm lib/addon/wasm.js lib/client.bundle.js lib/client.bundle.mjs lib/client.bundler.mjs LICENSE; do
  grep -qx "package/$f" <<<"$client_files" || fail "the client package lacks $f"
done
for pair in "$CLIENT_PLATFORM_TGZ:ctl-migration" "$TESTING_PLATFORM_TGZ:ctl-migration-testing"; do
  files=$(tar -tzf "${pair%:*}" | sort | tr '\n' ' ')
  [ "$files" = "package/LICENSE package/README.md package/${pair##*:}.$PLATFORM.node package/package.json " ] ||
    fail "$(basename "${pair%:*}") carries $files"
done

# ── what npm's tooling says of the published packages ────────────────────────
say "publint --strict, attw"
for dir in package testing "package/npm/$PLATFORM" "testing/npm/$PLATFORM"; do
  "$ROOT/node_modules/.bin/publint" --strict "$WORK/stage/$dir"
done
# Every entry under every resolution a product uses: node10, node16 (from CJS and ESM), bundler;
# any finding fails. The client's ./internal/addon (the testing package's, at run time) resolves
# under node10, which has no `exports`, through internal/addon/package.json.
"$ROOT/node_modules/.bin/attw" "$CLIENT_TGZ" --format table-flipped
"$ROOT/node_modules/.bin/attw" --format table-flipped "$TESTING_TGZ"

# ── install in a product with no Rust and no repository ──────────────────────
say "install"
clean_setup
new_product "$WORK/product"
cd "$WORK/product"
# The other platforms' packages are not on the registry until the first release: npm skips an
# optional dependency it cannot fetch, as it skips one for another platform. npm's warnings are
# kept: an install must not print EBADENGINE (nor any other).
install() {
  clean_run npm install --no-audit --no-fund --loglevel=warn "$@" 2>&1 | tee -a "$WORK/install.log" >&2
  if grep -q EBADENGINE "$WORK/install.log"; then fail "the install printed EBADENGINE"; fi
}
ESBUILD_VERSION=$(node -p 'require(process.argv[1]).version' "$ROOT/node_modules/esbuild/package.json")
install "$CLIENT_TGZ" "$CLIENT_PLATFORM_TGZ" "$TESTING_TGZ" "$TESTING_PLATFORM_TGZ" \
  "typescript@$TYPESCRIPT_VERSION" "@types/node@20" "esbuild@$ESBUILD_VERSION"
# Where the package and its binary came from: this directory, nothing of the repository.
clean_run node -e '
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
  if clean_run "$@"; then echo "ok - $name"; else echo "not ok - $name"; status=1; fi
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
mkdir -p "$WORK/away"
cp bundle/handover-esm.mjs "$WORK/away/"
# shellcheck disable=SC2016 # JavaScript, not shell
check "esbuild, bundle run away from node_modules: the error names the package and the flag" sh -c '
  out=$(cd "$1" && node handover-esm.mjs 2>&1) && exit 1
  echo "$out" | grep -m1 "was bundled"
  echo "$out" | grep -q "ERR_CTL_MIGRATION_BUNDLED" && echo "$out" | grep -q -- "--external:@norskvideo/ctl-migration"' _ "$WORK/away"
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
new_product "$WORK/production"
cd "$WORK/production"
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
# On disk (allocated blocks, as `du -sh` reports it) and apparent, counted by Node: macOS's du
# has no --block-size, and Windows reports no blocks (a file there takes whole 4 KiB clusters).
read -r PRODUCTION_BYTES PRODUCTION_APPARENT < <(node -e 'const fs = require("node:fs"); let disk = 0, size = 0
  const count = (f) => { const st = fs.lstatSync(f); size += st.size; disk += st.blocks === undefined ? Math.ceil(st.size / 4096) * 4096 : st.blocks * 512
    if (st.isDirectory()) for (const name of fs.readdirSync(f)) count(`${f}/${name}`) }
  count("node_modules"); console.log(disk, size)')
echo "production node_modules: $PRODUCTION_BYTES bytes on disk ($PRODUCTION_APPARENT apparent)" >&2
# 4 MiB (the MB of `du -h`, in which the install with the test tools takes 5.6); 3.5 until the
# flight recorder, which took the client's binary and WebAssembly build up by 0.1 MiB.
check "production install: under 4 MiB on disk ($PRODUCTION_BYTES bytes)" test "$PRODUCTION_BYTES" -lt $((4 * 1024 * 1024))
check "production install: hands over (the worker from the product's testing package)" \
  env KIT_DIR="$WORK/product" node smoke/product/handover.mjs

# ── the types with no @types/node: a product and its test set-up on both packages ──
say "types without @types/node"
new_product "$WORK/types"
cd "$WORK/types"
install --omit=optional "$CLIENT_TGZ" "$TESTING_TGZ" "typescript@$TYPESCRIPT_VERSION"
check "no @types/node installed beside the packages" sh -c '! [ -e node_modules/@types/node ]'
check "tsc --strict --exactOptionalPropertyTypes, types [], skipLibCheck false: a product and its test set-up" \
  node_modules/.bin/tsc -p smoke/product/strict/tsconfig.json

# ── install without the optional dependencies: the WebAssembly fallback ──────
say "install --omit=optional"
new_product "$WORK/fallback"
cd "$WORK/fallback"
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
# shellcheck disable=SC2016 # the inner shell expands them
check "without binaries: the command line says so in its one line, no stack, exit 1" sh -c '
  out=$(npx --no ctl-migration handover -- node -e 0 2>&1); rc=$?; echo "$out"
  [ "$rc" = 1 ] && echo "$out" | grep -q "^ctl-migration: @norskvideo/ctl-migration-testing needs the native addon" && ! echo "$out" | grep -q "^    at "'
# Node 22 from the npm registry; with SWEEP_NODE, that Node (off Linux x64 the registry's `node`
# package has no binary for most versions: the release workflow's legs there sweep setup-node's).
NODE22=${SWEEP_NODE:-$("$ROOT/scripts/runtime-bin.sh" node22)}
# The WebAssembly build speaks WebSocket itself over node:net: no ws, no global WebSocket needed.
check "without binaries, Node $("$NODE22" --version): a real handover on the WebAssembly build" \
  env KIT_DIR="$WORK/product" EXPECT_BUILD=wasm "$NODE22" smoke/product/handover.mjs
check "without binaries, Node $(node --version), no ws: a real handover on the WebAssembly build" \
  env KIT_DIR="$WORK/product" EXPECT_BUILD=wasm node smoke/product/handover.mjs

# ── every Node release line engines admits, its oldest and newest patches ────
# Native (the product with its binary) and on the WebAssembly fallback (the install without
# optional dependencies).
say "Node versions"
node_specs=(node@20.0.0 node@20.18.0 node@20.19.0 node@22.0.0 node@22.11.0 node@22.12.0 node22 node24 node26)
[ -z "${SWEEP_NODE:-}" ] || node_specs=(SWEEP_NODE)
for node_spec in "${node_specs[@]}"; do
  node_bin=${SWEEP_NODE:-$("$ROOT/scripts/runtime-bin.sh" "$node_spec")}
  node_version=$("$node_bin" --version)
  # shellcheck disable=SC2016 # JavaScript, not shell
  "$node_bin" -e 'const engines = require(process.argv[1]).engines.node
    if (!/^>= ?20$/.test(engines)) { console.error(`engines is ${engines}: update this list`); process.exit(1) }' \
    "$WORK/fallback/node_modules/@norskvideo/ctl-migration/package.json"
  check "Node $node_version, native: a real handover" sh -c "cd '$WORK/product' && '$node_bin' smoke/product/handover.mjs"
  check "Node $node_version, without binaries: a real handover on the WebAssembly build" \
    env KIT_DIR="$WORK/product" EXPECT_BUILD=wasm "$node_bin" smoke/product/handover.mjs
done

echo
if [ "$status" = 0 ]; then echo "install-path.sh: passed ($PLATFORM)"; else echo "install-path.sh: FAILED ($PLATFORM)"; fi
exit "$status"
