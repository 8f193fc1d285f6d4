#!/usr/bin/env bash
# The Linux binaries, cross-built on this x86_64 Linux machine with cargo-zigbuild: x86_64 and
# aarch64, gnu (against glibc 2.17) and musl, both addons (the client and the testing package's
# simulator), into target/cross/out/ (OUT_DIR; built in CARGO_TARGET_DIR, default target/cross).
# Prints each binary's size and the newest GLIBC_ symbol version it needs, and fails on a gnu
# binary needing a glibc newer than 2.17, a musl binary needing glibc, a wrong machine, symbols
# left in, or no napi_register_module_v1. scripts/publish.sh puts them into their packages.
# Hand-written: napi's CLI builds (build-addons.sh) but checks nothing of what it built.
#
#   scripts/build-linux.sh                             # all four targets
#   scripts/build-linux.sh aarch64-unknown-linux-gnu   # some of them
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/cross.sh
MAX_GLIBC=2.17
TARGETS=("$@")
[ "$#" -gt 0 ] || TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
for t in "${TARGETS[@]}"; do [[ $t == *-linux-* ]] || fail "not a Linux target: $t"; done

say "tools"
cross_tools "${TARGETS[@]}"
for t in "${TARGETS[@]}"; do
  # cargo-zigbuild reads a `.2.17` suffix as the glibc version to link against.
  if [[ $t == *-gnu ]]; then cross_build "$t" "$(platform_of "$t")" "$t.$MAX_GLIBC"; else cross_build "$t" "$(platform_of "$t")"; fi
done

say "check"
status=0
bad() { echo "$1: $2" >&2; status=1; }
printf '%-18s %-22s %10s  %-8s  %s\n' platform addon bytes glibc machine
for t in "${TARGETS[@]}"; do
  platform=$(platform_of "$t")
  for f in "$OUT_DIR/ctl-migration.$platform.node" "$OUT_DIR/ctl-migration-testing.$platform.node"; do
    [ -f "$f" ] || { bad "$f" missing; continue; }
    what=$(basename "$f")
    machine=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
    # The newest GLIBC_ version among the symbols it imports.
    glibc=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -u -V | tail -n 1 || true)
    printf '%-18s %-22s %10s  %-8s  %s\n' "$platform" "${what%%.*}" "$(stat -c %s "$f")" "${glibc:-none}" "$machine"
    case "$t" in
      x86_64-*) [ "$machine" = "Advanced Micro Devices X86-64" ] || bad "$what" "wrong machine $machine" ;;
      aarch64-*) [ "$machine" = AArch64 ] || bad "$what" "wrong machine $machine" ;;
    esac
    if [[ $t == *-gnu ]]; then
      [ -n "$glibc" ] && [ "$(printf '%s\n%s\n' "$glibc" "$MAX_GLIBC" | sort -V | tail -n 1)" = "$MAX_GLIBC" ] ||
        bad "$what" "needs GLIBC_$glibc, newer than $MAX_GLIBC: $(objdump -T "$f" | grep -E "GLIBC_$glibc\b" || true)"
    else
      [ -z "$glibc" ] || bad "$what" "a musl binary needing GLIBC_$glibc"
      readelf -d "$f" | grep -q 'NEEDED.*\[libc\.so' || bad "$what" "does not link the musl libc dynamically"
    fi
    ! readelf -S -W "$f" | grep -q '\.symtab' || bad "$what" "not stripped (.symtab present)"
    objdump -T "$f" | grep -q '\bnapi_register_module_v1$' || bad "$what" "does not export napi_register_module_v1"
  done
done
[ "$status" = 0 ] || echo "build-linux.sh: FAILED" >&2
exit "$status"
