#!/usr/bin/env bash
# Publishes a release from the binaries a release built: the client's eight platform packages,
# the client (the repository's root), the testing package's eight, the testing package
# (testing/), in that order, so that no package names one the registry has not got yet (Yarn
# berry fails an install on a missing optional dependency). The release workflow runs it against
# the npm registry, the release rehearsal against a local one; the registry, credentials and
# provenance are npm's own configuration. Each package's prepublishOnly refuses a plain publish.
# Hand-written around napi's CLI, which stages and checks the platform packages.
#
# Run again, it completes a publish that stopped half-way: a package whose version the registry
# has already is skipped with a line saying so, and a root package's platform packages with it
# (they went before it).
#
#   scripts/publish.sh ARTIFACTS_DIR   # ctl-migration{,-testing}.<platform>.node for each of
#                                      # napi.targets, and ctl-migration.wasm, anywhere below it
#   DIST_TAG=next       the dist-tag of every package; by default `latest` for a release and
#                       `next` for a pre-release (a version with a `-` part), never `latest`
#   RELEASE_TAG=v1.2.3  if set (the workflow's git tag), must be v<version>
#   VERSION=1.2.3-rc.1  the version to publish at (set in the staged copies only)
#   PLACEHOLDERS=1      a text placeholder for each binary ARTIFACTS_DIR lacks, so that all names
#                       exist (the rehearsal; only to a registry on loopback)
#   PACK_TO=DIR         publish nothing: pack the packages as they would be published into DIR,
#                       the platform packages with a real binary only (install-path.sh)
#   STAGE=DIR           where the packages are staged (default a temporary directory), never in
#                       the repository: napi's CLI writes there (artifacts, version, pre-publish)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
ARTIFACTS=$(cd "${1:?usage: scripts/publish.sh ARTIFACTS_DIR}" && pwd)
ensure_node_modules
NAPI=$ROOT/node_modules/.bin/napi
REGISTRY=$(npm config get registry)
if [ "${PLACEHOLDERS:-0}" = 1 ] && [ -z "${PACK_TO:-}" ] && ! [[ $REGISTRY =~ ^https?://(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?/ ]]; then
  fail "PLACEHOLDERS=1 publishes packages without binaries: only to a local registry, not $REGISTRY"
fi
STAGE=${STAGE:-$(mktemp -d "${TMPDIR:-/tmp}/ctl-migration-publish.XXXXXX")}
PKG=$STAGE/package TESTING=$STAGE/testing
rm -rf "$PKG" "$TESTING" "$STAGE/artifacts" "$STAGE/logs"
mkdir -p "$STAGE/logs" # npm's output for each package, shown when it fails

# ── 1. stage ─────────────────────────────────────────────────────────────────
say "stage in $STAGE"
node scripts/bundle-glue.mjs # the client's entries are generated, like the binaries
# The files `npm pack` takes of the package in $1 ("files", README, LICENSE, package.json).
packed_files() {
  (cd "$1" && npm pack --dry-run --json --ignore-scripts 2>/dev/null) |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => { for (const f of JSON.parse(s)[0].files) console.log(f.path) })'
}
stage() {
  local f
  packed_files "$1" | while IFS= read -r f; do
    case "$f" in *.wasm | *.node) continue ;; esac # the build's outputs come from ARTIFACTS_DIR only
    mkdir -p "$2/$(dirname "$f")" && cp "$1/$f" "$2/$f"
  done
  cp -r "$1/npm" "$2/npm"
  rm -f "$2"/npm/*/*.node
  # One LICENSE in the repository; npm puts it into every tarball it finds it beside.
  for dir in "$2" "$2"/npm/*/; do cp LICENSE "$dir"; done
}
stage . "$PKG"
stage testing "$TESTING"

# ── 2. version ───────────────────────────────────────────────────────────────
if [ -n "${VERSION:-}" ]; then
  for dir in "$PKG" "$TESTING"; do
    (cd "$dir" && npm version --no-git-tag-version --allow-same-version --ignore-scripts "$VERSION" >/dev/null && "$NAPI" version >/dev/null)
  done
fi
VERSION=$(node -p 'require(process.argv[1]).version' "$PKG/package.json")
[ "$(node -p 'require(process.argv[1]).version' "$TESTING/package.json")" = "$VERSION" ] ||
  fail "testing/package.json is not at $VERSION, the client's version"
[ -z "${RELEASE_TAG:-}" ] || [ "$RELEASE_TAG" = "v$VERSION" ] || fail "the tag $RELEASE_TAG is not v$VERSION, the version in package.json"
(cd "$TESTING" && npm pkg set "dependencies.@norskvideo/ctl-migration=$VERSION")
if [ -z "${DIST_TAG:-}" ]; then
  if [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+- ]]; then DIST_TAG=next; else DIST_TAG=latest; fi
fi
echo "version $VERSION, dist-tag $DIST_TAG, registry $REGISTRY" >&2

# ── 3. binaries ──────────────────────────────────────────────────────────────
say "binaries from $ARTIFACTS"
wasm=$(find "$ARTIFACTS" -name ctl-migration.wasm -type f)
[ -n "$wasm" ] && [ "$(grep -c . <<<"$wasm")" = 1 ] || fail "not one ctl-migration.wasm in $ARTIFACTS: ${wasm:-none} (scripts/build.sh --wasm-only builds it)"
cp "$wasm" "$PKG/lib/addon/"
# napi artifacts wants a binary for every target (one, below its folder): a copy of ARTIFACTS_DIR
# with the placeholders beside.
cp -r "$ARTIFACTS" "$STAGE/artifacts"
placeholders=()
if [ "${PLACEHOLDERS:-0}" = 1 ]; then
  for dir in "$PKG"/npm/*/; do
    platform=$(basename "$dir")
    for file in "ctl-migration.$platform.node" "ctl-migration-testing.$platform.node"; do
      [ -z "$(find "$ARTIFACTS" -name "$file" -type f)" ] || continue
      echo "placeholder, not a binary: the release rehearsal (scripts/release-rehearsal.sh) built no $file" >"$STAGE/artifacts/$file"
      placeholders+=("$file")
    done
  done
fi
for dir in "$PKG" "$TESTING"; do
  (cd "$dir" && "$NAPI" artifacts -d "$STAGE/artifacts")
  rm -f "$dir"/*.node # napi artifacts puts a copy at the root too, for a checkout's loader
done
ls -l "$PKG"/npm/*/*.node "$TESTING"/npm/*/*.node "$PKG/lib/addon/"*.wasm >&2
[ "${#placeholders[@]}" -eq 0 ] || echo "placeholders (no binary built): ${placeholders[*]}" >&2

# ── 4. publish ───────────────────────────────────────────────────────────────
# published NAME: whether the registry has NAME@VERSION (npm view prints it; E404 if it has not).
published() {
  local got log=$STAGE/logs/${1//\//+}.view
  if got=$(npm view "$1@$VERSION" version --prefer-online 2>"$log"); then [ "$got" = "$VERSION" ]; return; fi
  grep -q E404 "$log" || { cat "$log" >&2; fail "npm view $1@$VERSION failed"; }
  return 1
}
# release DIR: publishes the package in DIR, or with PACK_TO packs it (unless it carries a
# placeholder). A publish refused because the registry has that version already is a skip: the
# refusal's wording is the registry's own (npmjs.org's 403, Verdaccio's 409), the version is not.
release() {
  local dir=$1 name log
  name=$(node -p 'require(process.argv[1]).name' "$dir/package.json")
  log=$STAGE/logs/${name//\//+}.publish
  if [ -n "${PACK_TO:-}" ]; then
    grep -qs '^placeholder, not a binary' "$dir"/*.node || (cd "$dir" && npm pack --silent --pack-destination "$PACK_TO" >/dev/null)
  elif (cd "$dir" && CTL_MIGRATION_PUBLISH=1 npm publish --tag "$DIST_TAG") >"$log" 2>&1; then
    cat "$log" >&2 # npm's notices: the tarball's contents, the provenance statement
    echo "publish.sh: $name@$VERSION published, dist-tag $DIST_TAG" >&2
  elif published "$name"; then
    echo "publish.sh: $name@$VERSION is on $REGISTRY already: skipped" >&2
  else
    cat "$log" >&2
    fail "npm publish of $name@$VERSION failed"
  fi
}
# publish DIR: checks the package and its platform packages, then publishes these (side by side:
# none names another) and then it; nothing if the registry has the package already (its platform
# packages went before it).
publish() {
  local dir=$1 name files d verb pids=() pid failed=0
  name=$(node -p 'require(process.argv[1]).name' "$dir/package.json")
  if [ -z "${PACK_TO:-}" ] && published "$name"; then
    echo "publish.sh: $name@$VERSION is on $REGISTRY already, and so are its platform packages: skipped" >&2
    return
  fi
  # napi checks each platform package and names them all as optionalDependencies at this
  # version; publish.sh publishes them (napi would, but takes only npmjs.org's refusal of a
  # version it has as a skip).
  say "napi pre-publish --skip-optional-publish: $name"
  (cd "$dir" && "$NAPI" pre-publish -t npm --no-gh-release --skip-optional-publish)
  files=$(packed_files "$dir")
  if grep '\.node$' <<<"$files"; then fail "$name carries a binary"; fi
  if grep '"file:' "$dir/package.json"; then fail "$name has a file: spec"; fi
  [ "$dir" != "$PKG" ] || grep -qx lib/addon/ctl-migration.wasm <<<"$files" || fail "$name lacks the WebAssembly build"
  verb=publish
  [ -z "${PACK_TO:-}" ] || verb=pack
  say "npm $verb: $name and its platform packages"
  for d in "$dir"/npm/*; do
    release "$d" &
    pids+=("$!")
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  [ "$failed" = 0 ] || fail "a platform package of $name was not published (above); run publish.sh again"
  release "$dir"
}
publish "$PKG"
publish "$TESTING"
where=${PACK_TO:+packed into $PACK_TO}
echo "publish.sh: @norskvideo/ctl-migration@$VERSION, @norskvideo/ctl-migration-testing@$VERSION and their platform packages ${where:-on $REGISTRY, dist-tag $DIST_TAG}" >&2
