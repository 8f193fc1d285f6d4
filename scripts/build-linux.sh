#!/usr/bin/env bash
# Builds the Linux binaries on this (x86_64 Linux) machine with one command:
#   x86_64/aarch64 × gnu/musl, release profile (LTO, one codegen unit, symbols stripped),
#   cross-compiled with cargo-zigbuild; the gnu ones against glibc 2.17. For each target both
#   addons: the client (ctl-migration.<platform>.node, for npm/<platform>) and the testing
#   package's worker simulator (ctl-migration-testing.<platform>.node, crates/simulator, for
#   testing/npm/<platform>).
# Prints each binary's size and the highest GLIBC_ symbol version it needs, and fails if a gnu
# binary needs a glibc newer than 2.17 or a musl binary needs glibc at all.
#
#   scripts/build-linux.sh                  # all four
#   scripts/build-linux.sh aarch64-unknown-linux-gnu   # some of them
#
# Outputs: target/cross/out/ctl-migration{,-testing}.<platform>.node (OUT_DIR overrides), built in
# target/cross (CARGO_TARGET_DIR overrides) so that it does not fight the main target dir.
# With COPY_TO_NPM=1 each binary is also copied into its platform package, npm/<platform>/ or
# testing/npm/<platform>/ (what `napi artifacts` does).
# BUILD_TESTING=0 builds the client only.
#
# What it installs, pinned, if missing: the Rust targets (rustup), zig from PyPI (`ziglang`),
# cargo-zigbuild from crates.io, and the npm dev dependencies (`npm ci`, for the napi CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# shellcheck source=scripts/lib/cross-tools.sh
. scripts/lib/cross-tools.sh
MAX_GLIBC=2.17
ALL_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
if [ "$#" -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/cross}
OUT_DIR=${OUT_DIR:-$CARGO_TARGET_DIR/out}
mkdir -p "$OUT_DIR"

say() { printf '\n== %s\n' "$*" >&2; }

# ── tools ────────────────────────────────────────────────────────────────────
say "tools"
ensure_rust_targets "${TARGETS[@]}"
ensure_zig
ensure_zigbuild_and_napi
echo "rustc: $(rustc --version)" >&2
echo "zig: $(python3 -m ziglang version)" >&2
echo "cargo-zigbuild: $ZIGBUILD_VERSION" >&2
echo "napi: $(node_modules/.bin/napi --version)" >&2

# Paths of this machine do not end up in the binaries (panic locations name source files).
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$ROOT=. --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"

# ── build ────────────────────────────────────────────────────────────────────
platform_of() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
    *) echo "build-linux.sh: not a Linux target of this package: $1" >&2; exit 2 ;;
  esac
}

for t in "${TARGETS[@]}"; do
  platform=$(platform_of "$t")
  # cargo-zigbuild reads a `.2.17` suffix as the glibc version to link against.
  zig_target=$t
  [[ $t == *-gnu ]] && zig_target="$t.$MAX_GLIBC"
  say "build $zig_target -> $platform"
  rm -f "$OUT_DIR/ctl-migration.$platform.node" "$OUT_DIR/ctl-migration-testing.$platform.node"
  # No loader: the one `npm run build` generates does not depend on the target.
  only=()
  [ "${BUILD_TESTING:-1}" = 1 ] || only=(--client-only)
  scripts/build-addons.sh "$OUT_DIR" --target "$zig_target" --cross-compile ${only[@]+"${only[@]}"} -- --locked
done

# ── check ────────────────────────────────────────────────────────────────────
say "check"
status=0
BINARIES=(ctl-migration)
[ "${BUILD_TESTING:-1}" = 1 ] && BINARIES+=(ctl-migration-testing)
printf '%-18s %-8s %10s  %-8s  %s\n' platform addon bytes glibc machine
for t in "${TARGETS[@]}"; do
  platform=$(platform_of "$t")
  for bin in "${BINARIES[@]}"; do
    f="$OUT_DIR/$bin.$platform.node"
    addon=client package=npm/$platform
    [ "$bin" = ctl-migration-testing ] && addon=testing package=testing/npm/$platform
    what="$platform ($addon)"
    if [ ! -f "$f" ]; then
      echo "missing: $f" >&2
      status=1
      continue
    fi
    size=$(stat -c %s "$f")
    machine=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
    # The highest GLIBC_ version among the symbols it imports (objdump -T lists them).
    glibc=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -n 1 || true)
    printf '%-18s %-8s %10s  %-8s  %s\n' "$platform" "$addon" "$size" "${glibc:-none}" "$machine"
    case "$t" in
      x86_64-*) [ "$machine" = "Advanced Micro Devices X86-64" ] || { echo "$what: wrong machine $machine" >&2; status=1; } ;;
      aarch64-*) [ "$machine" = "AArch64" ] || { echo "$what: wrong machine $machine" >&2; status=1; } ;;
    esac
    if [[ $t == *-gnu ]]; then
      if [ -z "$glibc" ] || [ "$(printf '%s\n%s\n' "$glibc" "$MAX_GLIBC" | sort -V | tail -n 1)" != "$MAX_GLIBC" ]; then
        echo "$what needs GLIBC_$glibc, newer than $MAX_GLIBC:" >&2
        objdump -T "$f" | grep -E "GLIBC_$glibc\b" >&2 || true
        status=1
      fi
    else
      if [ -n "$glibc" ]; then
        echo "$what is a musl binary but needs GLIBC_$glibc" >&2
        status=1
      fi
      if ! readelf -d "$f" | grep -q 'NEEDED.*\[libc\.so'; then
        echo "$what: does not link the musl libc dynamically (NEEDED libc.so missing)" >&2
        status=1
      fi
    fi
    if readelf -S -W "$f" | grep -q '\.symtab'; then
      echo "$what: not stripped (.symtab present)" >&2
      status=1
    fi
    if ! objdump -T "$f" | grep -q '\bnapi_register_module_v1$'; then
      echo "$what: does not export napi_register_module_v1" >&2
      status=1
    fi
    if [ "${COPY_TO_NPM:-0}" = 1 ]; then
      cp "$f" "$package/"
    fi
  done
done
if [ "$status" != 0 ]; then
  echo "build-linux.sh: FAILED" >&2
fi
exit "$status"
