#!/usr/bin/env bash
# The notes of a release: CHANGELOG.md's section for VERSION (`## [VERSION] …` up to the next
# `## `), or, for a pre-release without one, the [Unreleased] section it previews. Fails if there
# is none or it is empty. The release workflow checks it before publishing and makes the GitHub
# Release's notes from it after.
#   scripts/release-notes.sh 0.2.0
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/common.sh
VERSION=${1:?usage: scripts/release-notes.sh VERSION}
section() { awk -v heading="## [$1]" 'index($0, heading) == 1 { on = 1; next } on && /^## / { exit } on' CHANGELOG.md; }
notes=$(section "$VERSION")
if [ -z "${notes//[[:space:]]/}" ] && [[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+- ]]; then notes=$(section Unreleased); fi
[ -n "${notes//[[:space:]]/}" ] || fail "CHANGELOG.md has no section \"## [$VERSION]\" (move [Unreleased] there: docs/releasing.md)"
# Without the blank lines around it.
sed -e '/./,$!d' <<<"$notes" | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'
