#!/usr/bin/env bash
# Publishes a release from the binaries a release built, in this order: the client's eight
# platform packages, the client (@norskvideo/ctl-migration, the repository's root package), the
# testing package's eight platform packages, the testing package (@norskvideo/ctl-migration-testing,
# testing/): nothing names a package that is not on the registry yet. The release workflow runs it against the npm registry; the release rehearsal
# (scripts/release-rehearsal.sh) runs the same script against a local registry.
#
#   scripts/publish.sh ARTIFACTS_DIR
#
# ARTIFACTS_DIR holds, anywhere below it (the workflow downloads one folder per build job):
#   ctl-migration.<platform>.node          the client, for each platform in package.json napi.targets
#   ctl-migration-testing.<platform>.node  the testing package's worker simulator, the same platforms
#   ctl-migration.wasm                     the WebAssembly fallback (scripts/build.sh --wasm-only)
#
# It works in staged copies (STAGE, default a temporary directory: STAGE/package the client,
# STAGE/testing the testing package), never in the repository:
#   1. copies what `npm pack` publishes of each package (the client with the WebAssembly
#      fallback's runtime bundled), and its npm/<platform>/ with the LICENSE, into STAGE;
#   2. VERSION, if set, becomes the version there (`npm version`, then `napi version` for the
#      platform packages), and the testing package's dependency on the client; the repository's
#      package.json files are not touched;
#   3. puts each binary into its package's npm/<platform>/ and the .wasm into the client's
#      lib/addon/, and checks that every platform package has its binary (npm publish would
#      silently leave a missing one out of `files`);
#   4. for the client, then the testing package: `napi prepublish -t npm --no-gh-release`, as the
#      workflow always ran it (publishes each npm/<platform> package and writes the package's
#      optionalDependencies on them at this version); checks the manifest (no `file:` spec
#      anywhere, every platform at this version) and the tarball (no .node; the client's has the
#      .wasm); then `npm publish --access public` of the package itself, after its platform
#      packages (Yarn berry fails an install on an optional dependency the registry does not
#      have, on every platform).
# Each package's prepublishOnly refuses a publish that does not come from here: this script sets
# CTL_MIGRATION_PUBLISH=1 for its own.
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
TESTING=$STAGE/testing
rm -rf "$TESTING"
say "stage in $PKG and $TESTING"
# The client's entries are generated, like the binaries (scripts/bundle-glue.mjs).
node scripts/bundle-glue.mjs
# stage SRC DEST: what npm pack takes of the package in SRC ("files", README, LICENSE,
# package.json), as it is in git, and its npm/<platform>/ packages with the LICENSE, into DEST.
stage() {
  local src=$1 dest=$2
  (cd "$src" && npm pack --dry-run --json --ignore-scripts 2>/dev/null) |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { for (const f of JSON.parse(s)[0].files) console.log(f.path) })' |
    while IFS= read -r f; do
      case "$f" in *.wasm | *.node) continue ;; esac # the build's outputs come from ARTIFACTS_DIR only
      mkdir -p "$dest/$(dirname "$f")"
      cp "$src/$f" "$dest/$f"
    done
  cp -r "$src/npm" "$dest/npm"
  rm -f "$dest"/npm/*/*.node
  # One LICENSE in the repository; npm puts it into every tarball it finds it beside.
  for dir in "$dest" "$dest"/npm/*/; do cp LICENSE "$dir"; done
}
stage . "$PKG"
stage testing "$TESTING"

# ── 2. version ───────────────────────────────────────────────────────────────
if [ -n "${VERSION:-}" ]; then
  for dir in "$PKG" "$TESTING"; do
    (cd "$dir" && npm version --no-git-tag-version --allow-same-version "$VERSION" >/dev/null && "$NAPI" version >/dev/null)
  done
fi
VERSION=$(node -p 'require(process.argv[1]).version' "$PKG/package.json")
(cd "$TESTING" && npm pkg set "dependencies.@norskvideo/ctl-migration=$VERSION")
if [ -n "${RELEASE_TAG:-}" ] && [ "$RELEASE_TAG" != "v$VERSION" ]; then
  fail "the tag $RELEASE_TAG is not v$VERSION, the version in package.json"
fi
[ "$(node -p 'require(process.argv[1]).version' "$TESTING/package.json")" = "$VERSION" ] ||
  fail "testing/package.json is not at $VERSION, the client's version"
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
  for pair in "$PKG:ctl-migration" "$TESTING:ctl-migration-testing"; do
    dir=${pair%%:*}/npm/$platform bin=${pair#*:}
    [ -d "$dir" ] || fail "package.json napi.targets names $platform, but ${dir#"$STAGE/"} does not exist"
    file="$bin.$platform.node"
    src=$(artifact "$file")
    if [ -n "$src" ]; then
      cp "$src" "$dir/$file"
    elif [ "${PLACEHOLDERS:-0}" = 1 ]; then
      printf 'placeholder, not a binary: the release rehearsal (scripts/release-rehearsal.sh) publishes %s@%s to a local registry without a %s build\n' \
        "$(node -p 'require(process.argv[1]).name' "$dir/package.json")" "$VERSION" "$platform" >"$dir/$file"
      [[ " ${placeholders[*]-} " == *" $platform "* ]] || placeholders+=("$platform")
    else
      fail "no $file in $ARTIFACTS"
    fi
    # Every file the platform package's "files" names is there.
    # shellcheck disable=SC2016 # JavaScript, not shell
    node -e '
      const fs = require("fs"), path = require("path"), dir = process.argv[1]
      const pkg = require(path.join(dir, "package.json"))
      const missing = pkg.files.filter((f) => !fs.existsSync(path.join(dir, f)))
      if (missing.length) { console.error(`${pkg.name}: missing ${missing.join(", ")}`); process.exit(1) }' "$dir"
  done
done
ls -l "$PKG"/npm/*/*.node "$TESTING"/npm/*/*.node "$PKG/lib/addon/"*.wasm >&2
[ "${#placeholders[@]}" -eq 0 ] || echo "placeholders (no binary built): ${placeholders[*]}" >&2

# ── 4. publish ───────────────────────────────────────────────────────────────
# publish DIR: its platform packages (napi prepublish), the checks, then the package itself.
publish() {
  local dir=$1 name files
  name=$(node -p 'require(process.argv[1]).name' "$dir/package.json")
  say "napi prepublish: the platform packages of $name"
  # napi runs `npm publish` in each npm/<platform>; npm takes the dist-tag from npm_config_tag.
  (cd "$dir" && npm_config_tag=$DIST_TAG "$NAPI" prepublish -t npm --no-gh-release)

  say "check $name"
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
    "$dir/package.json" "$PLATFORMS"
  files=$(cd "$dir" && npm pack --dry-run --json --ignore-scripts 2>/dev/null |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { for (const f of JSON.parse(s)[0].files) console.log(f.path) })')
  if grep -q '\.node$' <<<"$files"; then fail "$name carries a binary: $(grep '\.node$' <<<"$files")"; fi
  if [ "$dir" = "$PKG" ] && ! grep -qx lib/addon/ctl-migration.wasm <<<"$files"; then
    fail "$name lacks the WebAssembly build"
  fi

  say "npm publish: $name"
  (cd "$dir" && CTL_MIGRATION_PUBLISH=1 npm publish --access public --tag "$DIST_TAG")
}
publish "$PKG"
publish "$TESTING"
echo "publish.sh: published @norskvideo/ctl-migration@$VERSION and @norskvideo/ctl-migration-testing@$VERSION, each with its ${PLATFORMS//$'\n'/ } packages, to $REGISTRY" >&2
