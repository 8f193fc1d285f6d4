#!/usr/bin/env bash
# The musl binaries load under a real musl dynamic linker (Debian's musl, x86_64 natively and
# aarch64 under qemu-user), with every symbol bound at load time (musl binds eagerly): a libc
# function musl lacks, or a glibc-only one, fails here. No musl build of Node is on the npm
# registry, so the Node-API functions the host would provide are stubs; the addon is loaded, not
# run (the GitHub workflow runs the tests on Alpine).
#
#   scripts/check-musl.sh        # after scripts/build-linux.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${CARGO_TARGET_DIR:-$PWD/target/cross}/out
WORK=$PWD/target/musl-check
mkdir -p "$WORK"

if ! dpkg -s musl musl-tools musl:arm64 qemu-user-static >/dev/null 2>&1; then
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl musl-tools musl:arm64 qemu-user-static >/dev/null
fi
zigcc() { python3 -m ziglang cc "$@"; }

cat >"$WORK/load.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  if (argc < 3 || !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) { printf("stubs: %s\n", dlerror()); return 2; }
  void *addon = dlopen(argv[2], RTLD_NOW);
  if (!addon) { printf("%s\n", dlerror()); return 1; }
  printf("loaded; napi_register_module_v1 %s\n", dlsym(addon, "napi_register_module_v1") ? "found" : "MISSING");
  return dlsym(addon, "napi_register_module_v1") ? 0 : 1;
}
EOF

status=0
for arch in x64 arm64; do
  f=$OUT/ctl-migration.linux-$arch-musl.node
  [ -f "$f" ] || { echo "missing $f (run scripts/build-linux.sh)" >&2; exit 1; }
  nm -D --undefined-only "$f" | awk '{print $2}' | grep '^napi_' | sed 's/.*/int &(void) { return 0; }/' >"$WORK/stubs-$arch.c"
  if [ "$arch" = x64 ]; then
    musl-gcc -shared -fPIC -o "$WORK/libstubs-$arch.so" "$WORK/stubs-$arch.c"
    musl-gcc -O2 -o "$WORK/load-$arch" "$WORK/load.c"
  else
    zigcc -target aarch64-linux-musl -shared -fPIC -o "$WORK/libstubs-$arch.so" "$WORK/stubs-$arch.c"
    zigcc -target aarch64-linux-musl -dynamic -O2 -fno-sanitize=all -o "$WORK/load-$arch" "$WORK/load.c"
  fi
  printf '%-17s ' "linux-$arch-musl:"
  if [ "$arch" = x64 ]; then
    "$WORK/load-$arch" "$WORK/libstubs-$arch.so" "$f" || status=1
  else
    qemu-aarch64-static "$WORK/load-$arch" "$WORK/libstubs-$arch.so" "$f" || status=1
  fi
done
[ "$status" = 0 ] && echo "check-musl.sh: passed" || echo "check-musl.sh: FAILED"
exit "$status"
