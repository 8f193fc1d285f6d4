#!/usr/bin/env bash
# Cross-links the macOS binaries on this (x86_64 Linux) machine with one command: both addons —
# the client (ctl-migration) and the worker simulator of the testing kit (ctl-migration-testing)
# — for x86_64-apple-darwin and aarch64-apple-darwin, release profile, with cargo-zigbuild
# (through `napi build --cross-compile`) and no macOS SDK. Explicit deployment targets:
# macOS 10.15 on x64, 11.0 on arm64 (without one zig stamps the macOS it knows best, 15.0+).
#
# Then checks every Mach-O it made, and fails on any deviation:
#   arch       the CPU type (X86_64 / ARM64), a 64-bit dylib, not a fat file
#   minos      LC_BUILD_VERSION (platform macos) or LC_VERSION_MIN_MACOSX = the deployment target
#   dylibs     LC_LOAD_DYLIB & co.: only /usr/lib/libSystem.B.dylib — no framework, nothing from
#              the build machine, no LC_RPATH; the install name is @rpath/<file name>
#   undefined  every undefined symbol is either bound to libSystem and exported by libSystem
#              (checked against the libSystem.tbd zig links with, for that architecture), or a
#              Node-API symbol (`napi_*`/`node_api_*`) looked up in the host process
#              (`-undefined dynamic_lookup`, "flat-namespace" in the bind tables); nothing else
#   also       `napi_register_module_v1` is exported; an arm64 binary carries a code signature
#              (arm64 macOS loads nothing unsigned); no path of this machine is in the file
# and prints a table: platform, bytes, arch, minos, dylibs, and the undefined symbols by where
# they come from (libSystem / Node-API / other — "other" must be 0).
#
#   scripts/build-macos.sh                          # both targets
#   scripts/build-macos.sh aarch64-apple-darwin     # some of them
#   scripts/build-macos.sh --check-only             # only check what target/cross/out holds
#
# Outputs: target/cross/out/ctl-migration.darwin-<arch>.node and
# ctl-migration-testing.darwin-<arch>.node (OUT_DIR overrides), built in target/cross
# (CARGO_TARGET_DIR overrides), beside the Linux binaries of scripts/build-linux.sh.
# With COPY_TO_NPM=1 the binaries are also copied into their platform packages, npm/darwin-<arch>/
# and testing/npm/darwin-<arch>/.
#
# What it installs, pinned, if missing: the Rust targets (rustup), zig from PyPI (`ziglang`),
# cargo-zigbuild from crates.io, the npm dev dependencies (`npm ci`, for the napi CLI), and
# llvm-objdump / llvm-nm (Debian's or Ubuntu's `llvm` package) for the checks.
# Nothing here can run a Mach-O: loading and running them is the release workflow's macOS job.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# shellcheck source=scripts/lib/cross-tools.sh
. scripts/lib/cross-tools.sh
ALL_TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
CHECK_ONLY=0
TARGETS=()
for a in "$@"; do
  case "$a" in
    --check-only) CHECK_ONLY=1 ;;
    -*) echo "build-macos.sh: unknown option $a" >&2; exit 2 ;;
    *) TARGETS+=("$a") ;;
  esac
done
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target/cross}
OUT_DIR=${OUT_DIR:-$CARGO_TARGET_DIR/out}
mkdir -p "$OUT_DIR"

say() { printf '\n== %s\n' "$*" >&2; }

platform_of() {
  case "$1" in
    x86_64-apple-darwin) echo darwin-x64 ;;
    aarch64-apple-darwin) echo darwin-arm64 ;;
    *) echo "build-macos.sh: not a macOS target of this package: $1" >&2; exit 2 ;;
  esac
}
# The oldest macOS each binary loads on: the first macOS on Apple silicon, and on Intel the
# oldest the Rust toolchain and Node 20 still support well (Node 20's own floor is 10.15).
deployment_target_of() {
  case "$1" in
    x86_64-apple-darwin) echo 10.15 ;;
    aarch64-apple-darwin) echo 11.0 ;;
  esac
}
for t in "${TARGETS[@]}"; do platform_of "$t" >/dev/null; done

# ── tools ────────────────────────────────────────────────────────────────────
say "tools"
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# llvm-objdump and llvm-nm read Mach-O; unversioned (Debian's `llvm`) or versioned (Ubuntu).
find_llvm() {
  local tool=$1 v
  command -v "$tool" && return 0
  for v in 21 20 19 18 17 16 15 14; do command -v "$tool-$v" && return 0; done
  return 1
}
if ! find_llvm llvm-objdump >/dev/null || ! find_llvm llvm-nm >/dev/null; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null
fi
LLVM_OBJDUMP=$(find_llvm llvm-objdump)
LLVM_NM=$(find_llvm llvm-nm)
if [ "$CHECK_ONLY" = 0 ]; then ensure_rust_targets "${TARGETS[@]}"; fi
# The check reads zig's libSystem.tbd, so zig is needed for --check-only too.
ensure_zig
ZIG_LIB=$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "lib"))')
LIBSYSTEM_TBD=$ZIG_LIB/libc/darwin/libSystem.tbd
[ -f "$LIBSYSTEM_TBD" ] || { echo "build-macos.sh: no $LIBSYSTEM_TBD in zig $ZIG_VERSION" >&2; exit 1; }
if [ "$CHECK_ONLY" = 0 ]; then
  ensure_zigbuild_and_napi
  echo "rustc: $(rustc --version)" >&2
  echo "cargo-zigbuild: $ZIGBUILD_VERSION" >&2
  echo "napi: $(node_modules/.bin/napi --version)" >&2
fi
echo "zig: $(python3 -m ziglang version)" >&2
echo "checks: $("$LLVM_OBJDUMP" --version | sed -n 's/^ *\(.*LLVM version.*\)/\1/p' | head -n 1) ($LLVM_OBJDUMP, $LLVM_NM)" >&2

# ── build ────────────────────────────────────────────────────────────────────
if [ "$CHECK_ONLY" = 0 ]; then
  # Paths of this machine do not end up in the binaries (panic locations name source files).
  export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$ROOT=. --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
  # The addons' build scripts (build.rs, crates/simulator/build.rs) add the macOS link arguments:
  # napi-build's `-undefined dynamic_lookup`, the install name, -dead_strip_dylibs.
  for t in "${TARGETS[@]}"; do
    platform=$(platform_of "$t")
    export MACOSX_DEPLOYMENT_TARGET
    MACOSX_DEPLOYMENT_TARGET=$(deployment_target_of "$t")
    say "build $t (macOS $MACOSX_DEPLOYMENT_TARGET) -> $platform"
    rm -f "$OUT_DIR/ctl-migration.$platform.node" "$OUT_DIR/ctl-migration-testing.$platform.node"
    # No loader: the one `npm run build` generates does not depend on the target.
    scripts/build-addons.sh "$OUT_DIR" --target "$t" --cross-compile -- --locked
    if [ "${COPY_TO_NPM:-0}" = 1 ]; then
      cp "$OUT_DIR/ctl-migration.$platform.node" "npm/$platform/"
      cp "$OUT_DIR/ctl-migration-testing.$platform.node" "testing/npm/$platform/"
    fi
  done
fi

# ── check ────────────────────────────────────────────────────────────────────
say "check"
specs=()
for t in "${TARGETS[@]}"; do
  platform=$(platform_of "$t")
  for name in ctl-migration ctl-migration-testing; do
    specs+=("$OUT_DIR/$name.$platform.node|$t|$(deployment_target_of "$t")")
  done
done
status=0
LLVM_OBJDUMP=$LLVM_OBJDUMP LLVM_NM=$LLVM_NM LIBSYSTEM_TBD=$LIBSYSTEM_TBD \
  BUILD_PATHS="$ROOT:${CARGO_HOME:-$HOME/.cargo}:$HOME" \
  python3 - "${specs[@]}" <<'PY' || status=1
import os
import re
import subprocess
import sys

OBJDUMP, NM = os.environ["LLVM_OBJDUMP"], os.environ["LLVM_NM"]
LIBSYSTEM = "/usr/lib/libSystem.B.dylib"
ALLOWED_DYLIBS = {LIBSYSTEM}
CPU = {"x86_64-apple-darwin": "X86_64", "aarch64-apple-darwin": "ARM64"}
# tbd target names holding each architecture's exports (zig's libSystem.tbd lists arm64e for
# Apple silicon; an arm64 binary links against it).
TBD_ARCHS = {"x86_64-apple-darwin": {"x86_64-macos"}, "aarch64-apple-darwin": {"arm64-macos", "arm64e-macos"}}
NODE_API = re.compile(r"^_(napi|node_api)_[a-z0-9_]+$")
DYLIB_CMDS = {"LC_LOAD_DYLIB", "LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_LAZY_LOAD_DYLIB", "LC_LOAD_UPWARD_DYLIB"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def tbd_exports(path):
    """Symbols each tbd target exports, over every document of a (multi-document) v4 tbd:
    the flow lists under `exports:`/`reexports:`, per `targets:` entry. Not `undefineds:`."""
    exports = {}
    flow = re.compile(r"([a-z-]+):\s*\[([^\]]*)\]", re.S)
    for doc in open(path).read().split("--- !tapi-tbd")[1:]:
        # Top-level keys start in column 0; keep only the export sections.
        sections = re.split(r"(?m)^(?=[a-z-]+:)", doc)
        for sec in sections:
            key = sec.split(":", 1)[0]
            if key not in ("exports", "reexports"):
                continue
            for entry in re.split(r"(?m)^\s*-\s+(?=targets:)", sec)[1:]:
                targets, names = set(), set()
                for k, v in flow.findall(entry):
                    items = {i.strip().strip("'\"") for i in v.replace("\n", " ").split(",") if i.strip()}
                    if k == "targets":
                        targets |= items
                    elif k in ("symbols", "weak-symbols", "thread-local-symbols"):
                        names |= items
                    elif k == "objc-classes":
                        names |= {p + c for c in items for p in ("_OBJC_CLASS_$_", "_OBJC_METACLASS_$_")}
                for t in targets:
                    exports.setdefault(t, set()).update(names)
    return exports


def load_commands(text):
    cmds = []
    for block in re.split(r"(?m)^Load command \d+\n", text)[1:]:
        fields = {}
        for line in block.splitlines():
            m = re.match(r"^\s*(\S+) (.*)$", line)
            if m and m.group(1) not in fields:
                fields[m.group(1)] = m.group(2).strip()
        cmds.append(fields)
    return cmds


def check(path, target, minos_expected, libsystem):
    name = os.path.basename(path)
    errors = []
    row = {"platform": name, "bytes": "-", "arch": "-", "minos": "-", "dylibs": "-", "sys": "-", "napi": "-", "other": "-"}
    if not os.path.isfile(path):
        return row, [f"missing: {path}"]
    row["bytes"] = f"{os.path.getsize(path):,}"
    data = open(path, "rb").read()

    # Header: one 64-bit little-endian image (no fat wrapper), a dylib, the right CPU.
    if data[:4] != b"\xcf\xfa\xed\xfe":
        errors.append(f"not a thin 64-bit Mach-O (magic {data[:4].hex()})")
        return row, errors
    header = run(OBJDUMP, "--macho", "--private-header", path).splitlines()
    cols = header[header.index(next(l for l in header if "cputype" in l)) + 1].split()
    cputype, filetype = cols[1], cols[4]
    row["arch"] = cputype
    if cputype != CPU[target]:
        errors.append(f"CPU type {cputype}, expected {CPU[target]}")
    if filetype != "DYLIB":
        errors.append(f"file type {filetype}, expected DYLIB")

    cmds = load_commands(run(OBJDUMP, "--macho", "--private-headers", path))
    kinds = [c.get("cmd") for c in cmds]
    # Minimum OS: exactly one of LC_BUILD_VERSION (platform macos) / LC_VERSION_MIN_MACOSX.
    versions = []
    for c in cmds:
        if c.get("cmd") == "LC_BUILD_VERSION":
            if c.get("platform") != "macos":
                errors.append(f"LC_BUILD_VERSION platform {c.get('platform')}, expected macos")
            versions.append(c.get("minos"))
        elif c.get("cmd") == "LC_VERSION_MIN_MACOSX":
            versions.append(c.get("version"))
        elif c.get("cmd", "").startswith("LC_VERSION_MIN_"):
            errors.append(f"{c['cmd']}: not a macOS binary")
    row["minos"] = ",".join(v or "?" for v in versions) or "none"
    if versions != [minos_expected]:
        errors.append(f"minimum macOS {row['minos']}, expected {minos_expected}")

    # Linked libraries, the install name, no run paths.
    dylibs = [re.sub(r" \(offset \d+\)$", "", c.get("name", "")) for c in cmds if c.get("cmd") in DYLIB_CMDS]
    row["dylibs"] = " ".join(d.rsplit("/", 1)[-1] for d in dylibs) or "none"
    for c in cmds:
        if c.get("cmd") in DYLIB_CMDS:
            d = re.sub(r" \(offset \d+\)$", "", c.get("name", ""))
            if c["cmd"] != "LC_LOAD_DYLIB" or d not in ALLOWED_DYLIBS:
                errors.append(f"links {c['cmd']} {d}: only {', '.join(sorted(ALLOWED_DYLIBS))} is allowed")
    if LIBSYSTEM not in dylibs:
        errors.append(f"does not link {LIBSYSTEM}")
    if "LC_RPATH" in kinds:
        errors.append("has an LC_RPATH")
    ids = [re.sub(r" \(offset \d+\)$", "", c.get("name", "")) for c in cmds if c.get("cmd") == "LC_ID_DYLIB"]
    if ids != ["@rpath/" + name]:
        errors.append(f"install name {ids}, expected @rpath/{name}")
    if target.startswith("aarch64") and "LC_CODE_SIGNATURE" not in kinds:
        errors.append("no code signature (arm64 macOS refuses to load it)")

    # Undefined symbols: where each is bound (two-level namespace ordinal, as llvm-nm -m shows
    # it), cross-checked against the bind tables' "flat-namespace" (dynamic lookup).
    undefined = {}
    for line in run(NM, "-m", "-u", path).splitlines():
        m = re.match(r"^\s*\(undefined\)\s+(?:weak\s+)?external\s+(\S+)(?:\s+\(from ([^)]+)\))?", line)
        if not m:
            if line.strip():
                errors.append(f"unparsed llvm-nm line: {line.strip()}")
            continue
        undefined[m.group(1)] = m.group(2) or "dynamic lookup"
    binds = run(OBJDUMP, "--macho", "--bind", "--lazy-bind", "--weak-bind", path)
    flat = set(re.findall(r"flat-namespace\s+(\S+)\s*$", binds, re.M))
    sys_syms = [s for s, lib in undefined.items() if lib == "libSystem"]
    napi = [s for s, lib in undefined.items() if lib == "dynamic lookup" and NODE_API.match(s)]
    other = [f"{s} ({lib})" for s, lib in undefined.items() if s not in sys_syms and s not in napi]
    missing = sorted(s for s in sys_syms if s not in libsystem)
    other += [f"{s} (bound to libSystem, which does not export it)" for s in missing]
    other += [f"{s} (flat-namespace in the bind tables, not a Node-API symbol)"
              for s in sorted(flat) if not NODE_API.match(s) and undefined.get(s) != "dynamic lookup"]
    other += [f"{s} (Node-API, but not bound flat-namespace: dyld would not look it up in node)" for s in napi if s not in flat]
    row["sys"], row["napi"], row["other"] = str(len(sys_syms) - len(missing)), str(len(napi)), str(len(other))
    for o in other:
        errors.append(f"undefined: {o}")
    if not napi:
        errors.append("no Node-API symbol is undefined: not linked with -undefined dynamic_lookup?")

    exported = run(NM, "-g", "--defined-only", "-j", path).split()
    if "_napi_register_module_v1" not in exported:
        errors.append("does not export napi_register_module_v1")

    for p in filter(None, os.environ["BUILD_PATHS"].split(":")):
        if (p.rstrip("/") + "/").encode() in data:
            errors.append(f"contains a path of the build machine: {p}")
    return row, errors


tbd = tbd_exports(os.environ["LIBSYSTEM_TBD"])
rows, failures = [], []
for spec in sys.argv[1:]:
    path, target, minos = spec.split("|")
    libsystem = set().union(*(tbd.get(a, set()) for a in TBD_ARCHS[target]))
    if not libsystem:
        failures.append(f"{os.path.basename(path)}: libSystem.tbd lists no symbols for {target}")
    row, errors = check(path, target, minos, libsystem)
    rows.append(row)
    failures += [f"{row['platform']}: {e}" for e in errors]

heads = [("platform", "platform"), ("bytes", "bytes"), ("arch", "arch"), ("minos", "minos"), ("dylibs", "dylibs"),
         ("sys", "undef libSystem"), ("napi", "undef Node-API"), ("other", "undef other")]
widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in heads]
right = {"bytes", "sys", "napi", "other"}
for cells in [[h for _, h in heads]] + [[r[k] for k, _ in heads] for r in rows]:
    print("  ".join(c.rjust(w) if k in right else c.ljust(w) for c, w, (k, _) in zip(cells, widths, heads)).rstrip())
for f in failures:
    print(f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY
if [ "$status" != 0 ]; then
  echo "build-macos.sh: FAILED" >&2
fi
exit "$status"
