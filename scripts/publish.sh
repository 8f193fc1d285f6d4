#!/usr/bin/env bash
# Publishes a release: the eight platform packages and the root package, from the binaries a
# release built. The release workflow runs it against the npm registry; the release rehearsal
# (scripts/release-rehearsal.sh) runs the same script against a local registry.
#
#   scripts/publish.sh ARTIFACTS_DIR
#
# ARTIFACTS_DIR holds, anywhere below it (the workflow downloads one folder per build job):
#   ctl-migration.<platform>.node          the client, for each platform in package.json napi.targets
#   ctl-migration-testing.<platform>.node  the testing kit's worker simulator, the same platforms
#   ctl-migration.wasm                     the WebAssembly fallback (scripts/build.sh --wasm-only)
#
# It works in a staged copy (STAGE, default a temporary directory), never in the repository:
#   1. copies what `npm pack` publishes of the root package (with the WebAssembly fallback's
#      runtime bundled), and npm/<platform>/ with the LICENSE, into STAGE;
#   2. VERSION, if set, becomes the version there (`npm version`, then `napi version` for the
#      platform packages); the repository's package.json is not touched;
#   3. puts each binary into its npm/<platform>/ and the .wasm into lib/addon/, and checks that
#      every platform package has both binaries (npm publish would silently leave a missing one
#      out of `files`);
#   4. `napi prepublish -t npm --no-gh-release`, as the workflow always ran it: publishes each
#      npm/<platform> package and rewrites the root package.json's `file:npm/<platform>`
#      optionalDependencies to this version;
#   5. checks the root manifest: no `file:` spec anywhere, every platform at this version; and the
#      root tarball: the .wasm in it, no .node;
#   6. `npm publish --access public` of the root package, last: nothing names a platform package
#      that is not on the registry yet (Yarn berry fails an install on an optional dependency the
#      registry does not have, on every platform).
#
# The registry, its credentials, provenance: npm's own configuration (NPM_CONFIG_USERCONFIG,
# NODE_AUTH_TOKEN in setup-node's .npmrc, NPM_CONFIG_PROVENANCE), as for any `npm publish`.
#   DIST_TAG=latest     the dist-tag of every package
#   RELEASE_TAG=v1.2.3  if set (the workflow's git tag), must be v<version>
#   PLACEHOLDERS=1      rehearsal only, refused unless the registry is on loopback: a platform with
#                       no binary in ARTIFACTS_DIR gets its real package with a text placeholder in
#                       place of each binary, so that all eight names exist, as in a release
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ARTIFACTS=$(cd "${1:?usage: scripts/publish.sh ARTIFACTS_DIR}" && pwd)
DIST_TAG=${DIST_TAG:-latest}
say() { printf '\n== %s\n' "$*" >&2; }
fail() { echo "publish.sh: $*" >&2; exit 1; }

[ -x node_modules/.bin/napi ] || npm ci --no-audit --no-fund
NAPI=$ROOT/node_modules/.bin/napi
REGISTRY=$(npm config get registry)
if [ "${PLACEHOLDERS:-0}" = 1 ] && ! [[ $REGISTRY =~ ^https?://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?/ ]]; then
  fail "PLACEHOLDERS=1 publishes packages without binaries: only to a local registry, not $REGISTRY"
fi

STAGE=${STAGE:-$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-publish.XXXXXX")}
rm -rf "$STAGE/package"
mkdir -p "$STAGE/package"
PKG=$STAGE/package

# ── 1. stage ─────────────────────────────────────────────────────────────────
say "stage in $PKG"
# What npm pack takes of the root package ("files", README, LICENSE, package.json), as it is in git.
npm pack --dry-run --json --ignore-scripts 2>/dev/null |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { for (const f of JSON.parse(s)[0].files) console.log(f.path) })' |
  while IFS= read -r f; do
    case "$f" in *.wasm | *.node) continue ;; esac # the build's outputs come from ARTIFACTS_DIR only
    mkdir -p "$PKG/$(dirname "$f")"
    cp "$f" "$PKG/$f"
  done
cp -r npm "$PKG/npm"
rm -f "$PKG"/npm/*/*.node
# One LICENSE in the repository; npm puts it into every tarball it finds it beside.
for dir in "$PKG"/npm/*/; do cp LICENSE "$dir"; done

# ── 2. version ───────────────────────────────────────────────────────────────
if [ -n "${VERSION:-}" ]; then
  (cd "$PKG" && npm version --no-git-tag-version --allow-same-version "$VERSION" >/dev/null && "$NAPI" version >/dev/null)
fi
VERSION=$(node -p 'require(process.argv[1]).version' "$PKG/package.json")
if [ -n "${RELEASE_TAG:-}" ] && [ "$RELEASE_TAG" != "v$VERSION" ]; then
  fail "the tag $RELEASE_TAG is not v$VERSION, the version in package.json"
fi
echo "version $VERSION, dist-tag $DIST_TAG, registry $REGISTRY" >&2

# ── 3. binaries ──────────────────────────────────────────────────────────────
say "binaries from $ARTIFACTS"
# One file of that name below ARTIFACTS_DIR, or none; two is an error (which one would ship?).
artifact() {
  local found
  found=$(find "$ARTIFACTS" -name "$1" -type f)
  [ "$(printf '%s' "$found" | grep -c .)" -le 1 ] || fail "more than one $1 in $ARTIFACTS: $found"
  printf '%s' "$found"
}
# shellcheck disable=SC2016 # JavaScript, not shell
PLATFORMS=$(node -e '
  const { parseTriple } = require(process.argv[1])
  for (const t of require(process.argv[2]).napi.targets) console.log(parseTriple(t).platformArchABI)' \
  "$ROOT/node_modules/@napi-rs/cli" "$PKG/package.json")
wasm=$(artifact ctl-migration.wasm)
[ -n "$wasm" ] || fail "no ctl-migration.wasm in $ARTIFACTS (scripts/build.sh --wasm-only builds it)"
cp "$wasm" "$PKG/lib/addon/"
placeholders=()
for platform in $PLATFORMS; do
  [ -d "$PKG/npm/$platform" ] || fail "package.json napi.targets names $platform, but npm/$platform does not exist"
  for bin in ctl-migration ctl-migration-testing; do
    file="$bin.$platform.node"
    src=$(artifact "$file")
    if [ -n "$src" ]; then
      cp "$src" "$PKG/npm/$platform/$file"
    elif [ "${PLACEHOLDERS:-0}" = 1 ]; then
      printf 'placeholder, not a binary: the release rehearsal (scripts/release-rehearsal.sh) publishes %s@%s to a local registry without a %s build\n' \
        "@norskvideo/ctl-migration-$platform" "$VERSION" "$platform" >"$PKG/npm/$platform/$file"
      [[ " ${placeholders[*]-} " == *" $platform "* ]] || placeholders+=("$platform")
    else
      fail "no $file in $ARTIFACTS"
    fi
  done
  # Every file the platform package's "files" names is there.
  # shellcheck disable=SC2016 # JavaScript, not shell
  node -e '
    const fs = require("fs"), path = require("path"), dir = process.argv[1]
    const pkg = require(path.join(dir, "package.json"))
    const missing = pkg.files.filter((f) => !fs.existsSync(path.join(dir, f)))
    if (missing.length) { console.error(`${pkg.name}: missing ${missing.join(", ")}`); process.exit(1) }' "$PKG/npm/$platform"
done
ls -l "$PKG"/npm/*/*.node "$PKG/lib/addon/"*.wasm >&2
[ "${#placeholders[@]}" -eq 0 ] || echo "placeholders (no binary built): ${placeholders[*]}" >&2

# ── 4. napi prepublish ───────────────────────────────────────────────────────
say "napi prepublish: the platform packages"
# napi runs `npm publish` in each npm/<platform>; npm takes the dist-tag from npm_config_tag.
(cd "$PKG" && npm_config_tag=$DIST_TAG "$NAPI" prepublish -t npm --no-gh-release)

# ── 5. check the root package ────────────────────────────────────────────────
say "check the root package"
# shellcheck disable=SC2016 # JavaScript, not shell
node -e '
  const pkg = require(process.argv[1]), platforms = process.argv[2].split(/\s+/).filter(Boolean)
  const bad = []
  const walk = (v, at) => {
    if (typeof v === "string" && /^file:/.test(v)) bad.push(`${at}: ${v}`)
    else if (v && typeof v === "object") for (const [k, w] of Object.entries(v)) walk(w, `${at}.${k}`)
  }
  walk(pkg, "package.json")
  if (bad.length) { console.error("file: specs left:", bad.join("; ")); process.exit(1) }
  const want = Object.fromEntries(platforms.map((p) => [`${pkg.name}-${p}`, pkg.version]))
  const got = pkg.optionalDependencies || {}
  const diff = [...new Set([...Object.keys(want), ...Object.keys(got)])].filter((k) => want[k] !== got[k])
  if (diff.length) { console.error("optionalDependencies differ from the platforms at", pkg.version, ":", diff.map((k) => `${k}: ${got[k]}`).join(", ")); process.exit(1) }
  console.error(`optionalDependencies: ${Object.keys(got).length} platform packages at ${pkg.version}`)' \
  "$PKG/package.json" "$PLATFORMS"
root_files=$(cd "$PKG" && npm pack --dry-run --json --ignore-scripts 2>/dev/null |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { for (const f of JSON.parse(s)[0].files) console.log(f.path) })')
grep -qx lib/addon/ctl-migration.wasm <<<"$root_files" || fail "the root package lacks the WebAssembly build"
if grep -q '\.node$' <<<"$root_files"; then fail "the root package carries a binary: $(grep '\.node$' <<<"$root_files")"; fi

# ── 6. the root package ──────────────────────────────────────────────────────
say "npm publish: the root package"
(cd "$PKG" && npm publish --access public --tag "$DIST_TAG")
echo "publish.sh: published @norskvideo/ctl-migration@$VERSION and its ${PLATFORMS//$'\n'/ } packages to $REGISTRY" >&2
