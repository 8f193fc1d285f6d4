# shellcheck shell=bash
# Sourced by the scripts, each from the repository's root: what several of them do alike.
ROOT=$PWD
SCRIPT=$(basename "$0")
say() { printf '\n== %s\n' "$*" >&2; }
fail() { echo "$SCRIPT: $*" >&2; exit 1; }
# The npm dev dependencies (the napi CLI among them), installed if missing.
ensure_node_modules() { [ -x node_modules/.bin/napi ] || npm ci --no-audit --no-fund; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
# Debian packages, installed if any of them is missing.
apt_ensure() {
  dpkg -s "$@" >/dev/null 2>&1 && return
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
# The npm/<platform> name of a Rust target triple, as napi's CLI names it.
platform_of() { node -p 'require("@napi-rs/cli").parseTriple(process.argv[1]).platformArchABI' "$1"; }

# A clean environment under $WORK, as a product's machine has it: clean_setup once, then
# clean_run CMD…: node and the system on PATH (no cargo, no rustc, nothing of the repository), a
# fresh HOME and TMPDIR, npm's usual cache (so that downloads are not repeated every run), and
# the variables Windows programs need (SystemRoot for sockets, among others).
clean_setup() {
  CLEAN_PATH="$(dirname "$(command -v node)"):/usr/bin:/bin"
  NPM_CACHE=$(npm config get cache)
  mkdir -p "$WORK/home" "$WORK/tmp"
  if clean_run sh -c 'command -v cargo || command -v rustc'; then fail "a Rust toolchain is on the clean PATH"; fi
}
clean_run() {
  local keep=() v
  for v in SYSTEMROOT SystemRoot WINDIR COMSPEC PATHEXT TEMP TMP USERPROFILE APPDATA LOCALAPPDATA PROGRAMDATA; do
    [ -z "${!v:-}" ] || keep+=("$v=${!v}")
  done
  env -i ${keep[@]+"${keep[@]}"} PATH="$CLEAN_PATH" HOME="$WORK/home" TMPDIR="$WORK/tmp" LANG=C.UTF-8 \
    npm_config_cache="$NPM_CACHE" npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false \
    BUN_INSTALL_CACHE_DIR="$WORK/bun-cache" "$@"
}
# new_product DIR: a product directory outside the repository, with the smoke suite and products.
new_product() {
  mkdir -p "$1"
  cp -r "$ROOT/smoke" "$1/smoke"
  printf '{ "name": "a-product-%s", "version": "1.0.0", "private": true }\n' "$(basename "$1")" >"$1/package.json"
}
