#!/usr/bin/env bash
# The macOS binaries (docs/platforms.md, "macOS"), cross-linked on this x86_64 Linux machine with
# cargo-zigbuild (`napi build --cross-compile`), no macOS SDK: both addons for x86_64-apple-darwin
# (macOS 10.15) and aarch64-apple-darwin (11.0) into target/cross/out/ (OUT_DIR). Then each
# Mach-O is checked: a thin 64-bit dylib of the right CPU, the deployment target as its minimum
# macOS, libSystem its only library, no LC_RPATH, @rpath/<file> its install name, every undefined
# symbol libSystem's or a Node-API one looked up in node, napi_register_module_v1 exported, arm64
# signed, no path of this machine in it. Loading and running them is the workflow's macOS jobs'.
# Hand-written: napi's CLI builds but checks nothing of what it built.
#
#   scripts/build-macos.sh [TRIPLE…]     # default both
#   scripts/build-macos.sh --check-only  # only check what OUT_DIR holds
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/cross.sh
CHECK_ONLY=0
TARGETS=()
for a in "$@"; do
  case "$a" in
    --check-only) CHECK_ONLY=1 ;;
    *-apple-darwin) TARGETS+=("$a") ;;
    *) fail "not a macOS target: $a" ;;
  esac
done
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(x86_64-apple-darwin aarch64-apple-darwin)
# The oldest macOS each binary loads on: the first on Apple silicon, and on Intel Node 20's floor.
deployment_target_of() { if [[ $1 == aarch64-* ]]; then echo 11.0; else echo 10.15; fi; }

say "tools"
# llvm-objdump and llvm-nm read Mach-O; unversioned (Debian's `llvm`) or versioned (Ubuntu's).
find_llvm() {
  local v
  for v in "" -21 -20 -19 -18 -17 -16 -15 -14; do command -v "$1$v" && return 0; done
  return 1
}
if ! find_llvm llvm-objdump >/dev/null || ! find_llvm llvm-nm >/dev/null; then apt_ensure llvm; fi
LLVM_OBJDUMP=$(find_llvm llvm-objdump)
LLVM_NM=$(find_llvm llvm-nm)
echo "checks: $LLVM_OBJDUMP, $LLVM_NM" >&2
if [ "$CHECK_ONLY" = 0 ]; then
  cross_tools "${TARGETS[@]}"
  # The addons' build scripts (build.rs, crates/simulator/build.rs) add the macOS link arguments:
  # napi-build's `-undefined dynamic_lookup`, the install name, -dead_strip_dylibs.
  for t in "${TARGETS[@]}"; do
    MACOSX_DEPLOYMENT_TARGET=$(deployment_target_of "$t") cross_build "$t" "$(platform_of "$t")"
  done
fi

say "check"
specs=()
for t in "${TARGETS[@]}"; do
  for name in ctl-migration ctl-migration-testing; do
    specs+=("$OUT_DIR/$name.$(platform_of "$t").node|$t|$(deployment_target_of "$t")")
  done
done
status=0
LLVM_OBJDUMP=$LLVM_OBJDUMP LLVM_NM=$LLVM_NM BUILD_PATHS="$ROOT:${CARGO_HOME:-$HOME/.cargo}:$HOME" \
  python3 - "${specs[@]}" <<'PY' || status=1
import os, re, subprocess, sys

OBJDUMP, NM = os.environ["LLVM_OBJDUMP"], os.environ["LLVM_NM"]
LIBSYSTEM = "/usr/lib/libSystem.B.dylib"
CPU = {"x86_64-apple-darwin": "X86_64", "aarch64-apple-darwin": "ARM64"}
NODE_API = re.compile(r"^_(napi|node_api)_[a-z0-9_]+$")
DYLIB_CMDS = {"LC_LOAD_DYLIB", "LC_LOAD_WEAK_DYLIB", "LC_REEXPORT_DYLIB", "LC_LAZY_LOAD_DYLIB", "LC_LOAD_UPWARD_DYLIB"}


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def load_commands(path):
    """Each load command as {field: value}, from llvm-objdump's listing."""
    cmds = []
    for block in re.split(r"(?m)^Load command \d+\n", run(OBJDUMP, "--macho", "--private-headers", path))[1:]:
        fields = {}
        for m in re.finditer(r"(?m)^\s*(\S+) (.*)$", block):
            fields.setdefault(m.group(1), re.sub(r" \(offset \d+\)$", "", m.group(2).strip()))
        cmds.append(fields)
    return cmds


def check(path, target, minos):
    name = os.path.basename(path)
    row = {"file": name, "bytes": "-", "arch": "-", "minos": "-", "dylibs": "-", "libSystem": "-", "Node-API": "-", "other": "-"}
    if not os.path.isfile(path):
        return row, [f"missing: {path}"]
    data = open(path, "rb").read()
    row["bytes"] = f"{len(data):,}"
    if data[:4] != b"\xcf\xfa\xed\xfe":
        return row, [f"not a thin 64-bit Mach-O (magic {data[:4].hex()})"]
    errors = []
    header = run(OBJDUMP, "--macho", "--private-header", path).splitlines()
    cols = header[next(i for i, l in enumerate(header) if "cputype" in l) + 1].split()
    row["arch"] = cols[1]
    if cols[1] != CPU[target] or cols[4] != "DYLIB":
        errors.append(f"CPU type {cols[1]}, file type {cols[4]}: expected {CPU[target]}, DYLIB")

    cmds = load_commands(path)
    kinds = [c.get("cmd") for c in cmds]
    versions = [c.get("minos") if c.get("cmd") == "LC_BUILD_VERSION" else c.get("version")
                for c in cmds if c.get("cmd") in ("LC_BUILD_VERSION", "LC_VERSION_MIN_MACOSX")]
    row["minos"] = ",".join(v or "?" for v in versions) or "none"
    if versions != [minos] or any(c.get("platform", "macos") != "macos" for c in cmds if c.get("cmd") == "LC_BUILD_VERSION"):
        errors.append(f"minimum macOS {row['minos']}, expected {minos} (platform macos)")
    dylibs = [(c["cmd"], c.get("name", "")) for c in cmds if c.get("cmd") in DYLIB_CMDS]
    row["dylibs"] = " ".join(d.rsplit("/", 1)[-1] for _, d in dylibs) or "none"
    if dylibs != [("LC_LOAD_DYLIB", LIBSYSTEM)]:
        errors.append(f"links {dylibs}: only {LIBSYSTEM}")
    if "LC_RPATH" in kinds:
        errors.append("has an LC_RPATH")
    ids = [c.get("name") for c in cmds if c.get("cmd") == "LC_ID_DYLIB"]
    if ids != ["@rpath/" + name]:
        errors.append(f"install name {ids}, expected @rpath/{name}")
    if target.startswith("aarch64") and "LC_CODE_SIGNATURE" not in kinds:
        errors.append("no code signature (arm64 macOS refuses to load it)")

    # Undefined symbols: bound to libSystem (two-level namespace), or a Node-API one bound
    # flat-namespace (looked up in node); nothing else.
    undefined = {}
    for line in filter(str.strip, run(NM, "-m", "-u", path).splitlines()):
        m = re.match(r"^\s*\(undefined\)\s+(?:weak\s+)?external\s+(\S+)(?:\s+\(from ([^)]+)\))?", line)
        if not m:
            errors.append(f"unparsed llvm-nm line: {line.strip()}")
            continue
        undefined[m.group(1)] = m.group(2) or "dynamic lookup"
    flat = set(re.findall(r"flat-namespace\s+(\S+)\s*$", run(OBJDUMP, "--macho", "--bind", "--lazy-bind", "--weak-bind", path), re.M))
    sys_syms = [s for s, lib in undefined.items() if lib == "libSystem"]
    napi = [s for s, lib in undefined.items() if lib == "dynamic lookup" and NODE_API.match(s) and s in flat]
    other = [f"{s} ({lib})" for s, lib in undefined.items() if s not in sys_syms and s not in napi]
    other += [f"{s} (flat-namespace, not Node-API)" for s in sorted(flat) if not NODE_API.match(s)]
    row["libSystem"], row["Node-API"], row["other"] = str(len(sys_syms)), str(len(napi)), str(len(other))
    errors += [f"undefined: {o}" for o in other]
    if not napi:
        errors.append("no Node-API symbol is undefined: not linked with -undefined dynamic_lookup?")
    if "_napi_register_module_v1" not in run(NM, "-g", "--defined-only", "-j", path).split():
        errors.append("does not export napi_register_module_v1")
    errors += [f"contains a path of this machine: {p}" for p in filter(None, os.environ["BUILD_PATHS"].split(":"))
               if (p.rstrip("/") + "/").encode() in data]
    return row, errors


rows, failures = [], []
for spec in sys.argv[1:]:
    row, errors = check(*spec.split("|"))
    rows.append(row)
    failures += [f"{row['file']}: {e}" for e in errors]
widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in rows[0]}
for r in [{k: k for k in rows[0]}] + rows:
    print("  ".join(v.ljust(widths[k]) for k, v in r.items()).rstrip())
print(*failures, sep="\n", file=sys.stderr)
sys.exit(1 if failures else 0)
PY
[ "$status" = 0 ] || echo "build-macos.sh: FAILED" >&2
exit "$status"
