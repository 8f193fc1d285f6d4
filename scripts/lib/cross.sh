# shellcheck shell=bash
# Sourced by build-linux.sh and build-macos.sh: where they build, the pinned zig and
# cargo-zigbuild they cross-build with (installed when missing), and the build itself.
. scripts/lib/common.sh
ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/cross}
OUT_DIR=${OUT_DIR:-$CARGO_TARGET_DIR/out}
mkdir -p "$OUT_DIR"
# Paths of this machine do not end up in the binaries (panic locations name source files).
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$ROOT=. --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"

# zig from PyPI (`ziglang`): cargo-zigbuild runs `zig` from PATH, else `python3 -m ziglang`.
ensure_zig() {
  python3 -m ziglang version 2>/dev/null | grep -qx "$ZIG_VERSION" || python3 -m pip install --quiet "ziglang==$ZIG_VERSION"
  echo "zig: $(python3 -m ziglang version)" >&2
}

# cross_tools TRIPLE…: the Rust targets, zig, cargo-zigbuild and the napi CLI.
cross_tools() {
  local installed t
  installed=$(rustup target list --installed)
  for t in "$@"; do grep -qx "$t" <<<"$installed" || rustup target add "$t"; done
  ensure_zig
  cargo install --list | grep -q "^cargo-zigbuild v$ZIGBUILD_VERSION:" ||
    cargo install --locked --quiet cargo-zigbuild --version "$ZIGBUILD_VERSION"
  ensure_node_modules
  echo "rustc: $(rustc --version); cargo-zigbuild: $ZIGBUILD_VERSION; napi: $(node_modules/.bin/napi --version)" >&2
}

# cross_build TRIPLE PLATFORM [ZIG_TRIPLE]: both addons (the client and the testing package's
# simulator) into OUT_DIR, release profile. No loader: the one `npm run build` generates does not
# depend on the target.
cross_build() {
  say "build ${3:-$1} -> $2"
  rm -f "$OUT_DIR/ctl-migration.$2.node" "$OUT_DIR/ctl-migration-testing.$2.node"
  scripts/build-addons.sh "$OUT_DIR" --target "${3:-$1}" --cross-compile
}
