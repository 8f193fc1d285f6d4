# shellcheck shell=bash
# Sourced by the cross-building scripts (build-linux.sh, build-macos.sh): the pinned zig and
# cargo-zigbuild they build with, and how each is installed when missing.
ZIG_VERSION=0.17.1
ZIGBUILD_VERSION=0.24.1

# rustup targets, added if missing.
ensure_rust_targets() {
  local installed t
  installed=$(rustup target list --installed)
  for t in "$@"; do
    grep -qx "$t" <<<"$installed" || rustup target add "$t"
  done
}

# zig from PyPI (`ziglang`): cargo-zigbuild runs `zig` from PATH, else `python3 -m ziglang`.
ensure_zig() {
  if ! python3 -m ziglang version 2>/dev/null | grep -qx "$ZIG_VERSION"; then
    python3 -m pip install --quiet "ziglang==$ZIG_VERSION"
  fi
}

# cargo-zigbuild from crates.io, and the napi CLI (npm dev dependencies).
ensure_zigbuild_and_napi() {
  if ! cargo install --list | grep -q "^cargo-zigbuild v$ZIGBUILD_VERSION:"; then
    cargo install --locked --quiet cargo-zigbuild --version "$ZIGBUILD_VERSION"
  fi
  [ -x node_modules/.bin/napi ] || npm ci --no-audit --no-fund
}
